#!/usr/bin/env sh
# Writes requirements.lock: every package a fresh install of requirements.txt gets on Linux with
# the CPU build of torch, transitive ones included, each pinned with the sha256 hash of every file
# of that version, so `pip install --require-hashes -r requirements.lock` installs exactly these
# files or nothing. pip-compile (pip-tools) resolves with pip's own resolver; it is installed into
# a scratch virtual environment that is removed afterwards (it is no dependency of the app).
# torch is pinned as its CPU build (torch==2.13.0+cpu, so no CUDA package is pulled in), whose file
# comes from PyTorch's CPU index: the lock names that index in its own --extra-index-url line.
# Run it on Linux from the repository root:  sh scripts/lock.sh
# TORCH_INDEX=... resolves torch from another index that holds the CPU build (TORCH_INDEX= from
# the indexes and find-links your pip is configured with); the lock still names PyTorch's.
set -eu
python="${PYTHON:-python3}"
cpu_index="https://download.pytorch.org/whl/cpu"
index="${TORCH_INDEX-$cpu_index}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet pip-tools
torch_release="$(grep '^torch==' requirements.txt | cut -d' ' -f1 | cut -d= -f3)"
echo "torch==$torch_release+cpu" > "$tmp/torch-cpu.txt"
set -- --generate-hashes --allow-unsafe --no-annotate --no-header --no-emit-index-url \
    --no-emit-find-links --quiet --output-file "$tmp/lock.txt"
if [ -n "$index" ]; then
    set -- "$@" --extra-index-url "$index"
fi
"$tmp/venv/bin/pip-compile" "$@" requirements.txt "$tmp/torch-cpu.txt"
{
    echo "# Every package a fresh install of requirements.txt gets on Linux with the CPU build of torch"
    echo "# (Python $("$tmp/venv/bin/python" -c 'import platform; print(platform.python_version())')), each with the sha256 of its files. Made by scripts/lock.sh"
    echo "# (pip-compile --generate-hashes); do not edit by hand. Install: pip install --require-hashes -r requirements.lock"
    echo "--extra-index-url $cpu_index"
    echo
    cat "$tmp/lock.txt"
} > requirements.lock
echo "wrote requirements.lock ($(grep -c '==' requirements.lock) packages)"
