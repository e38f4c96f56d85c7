"""The pins agree: requirements.txt (the README's first command), pyproject.toml's dependencies
(`pip install .`) and requirements.lock (every package, made by scripts/lock.sh); and every pin is
imported by the app. Not here: installing (the steps of docs/OPERATING.md, Installing, were
followed by hand in a fresh virtual environment).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")
IMPORT_NAME = {}  # a distribution whose import name differs from its own (none today)
# Pins no module imports by name: what loads each, and a text the code must hold for it to.
LOADED_BY = {
    "psycopg": "postgresql+psycopg",  # SQLAlchemy's driver for such a VIZ_CLASS_DB URL
    "psycopg-binary": "postgresql+psycopg",  # psycopg's compiled part, loaded by psycopg
}


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list[str]) -> dict[str, str]:
    """{distribution: version} of the `name==version` lines (comments and blanks skipped)."""
    found = {}
    for line in lines:
        if match := PIN.match(line.strip()):
            found[normal(match[1])] = match[2]
    return found


def requirements() -> dict[str, str]:
    return pins((ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines())


def test_requirements_pin_every_line_exactly():
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    wanted = [line for line in lines if line.strip() and not line.startswith("#")]
    assert len(pins(wanted)) == len(wanted), "a requirement that is not name==version"
    assert requirements()["torch"] == "2.13.0"


def test_pyproject_declares_the_same_pins_as_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert pins(project["dependencies"]) == requirements()
    assert project["scripts"]["viz-gpt"] == "serving.launch:main"


def test_the_lock_holds_every_pin_at_its_version_and_no_cuda_build():
    locked = pins((ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines())
    assert {name: locked.get(name) for name in requirements()} == requirements()
    assert len(locked) > len(requirements())  # transitive packages too
    assert not [name for name in locked if name.startswith(("nvidia-", "triton"))]


def test_every_pinned_package_is_imported_by_the_app():
    code = "\n".join(
        path.read_text(encoding="utf-8")
        for folder in ("viz_model", "serving", "ui", "pages")
        for path in (ROOT / folder).rglob("*.py")
    )
    unused = [
        name
        for name in requirements()
        if name in LOADED_BY
        and LOADED_BY[name] not in code
        or name not in LOADED_BY
        and not re.search(
            rf"^\s*(import|from) {IMPORT_NAME.get(name, name)}\b", code, flags=re.MULTILINE
        )
    ]
    assert unused == []


def test_the_project_says_its_licence_in_the_file_the_metadata_and_the_readme():
    """Issue 43: a licence anyone may reuse the project under, the same in LICENSE, the package
    metadata (an SPDX name, the file shipped with it) and the README's Licence section."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "Permission is hereby granted" in licence
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Licence", 1)[1]
    assert "MIT" in section and "(LICENSE)" in section and "public-domain" in section
