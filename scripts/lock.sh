#!/usr/bin/env sh
# Writes requirements.lock: every package, transitive ones included, at the version a fresh
# install of requirements.txt gets. pip itself resolves (no other resolver touches torch): torch
# is installed first from the index given (default: PyTorch's CPU wheels), so no CUDA build is
# pulled in, then `pip freeze` lists what the environment holds. Run it on Linux from the
# repository root:  sh scripts/lock.sh   (TORCH_INDEX=... to use another torch index)
set -eu
python="${PYTHON:-python3}"
venv="$(mktemp -d)/venv"
index="${TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
"$python" -m venv "$venv"
torch_pin="$(grep '^torch==' requirements.txt | cut -d' ' -f1)"
if [ -n "$index" ]; then
    "$venv/bin/pip" install --quiet "$torch_pin" --extra-index-url "$index"
else
    "$venv/bin/pip" install --quiet "$torch_pin"
fi
"$venv/bin/pip" install --quiet -r requirements.txt
{
    echo "# Every package a fresh install of requirements.txt gets on Linux with the CPU build of torch"
    echo "# (Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())')). Made by scripts/lock.sh; do not edit by hand."
    # a local version such as 2.13.0+cpu names the build, not the release: the pin is the release
    "$venv/bin/pip" freeze --exclude-editable | sed -E 's/^([A-Za-z0-9_.-]+==[^+ ]+)\+[A-Za-z0-9.]+$/\1/'
} > requirements.lock
rm -rf "$(dirname "$venv")"
echo "wrote requirements.lock ($(grep -c '==' requirements.lock) packages)"
