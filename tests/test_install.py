"""The pins agree: requirements.txt (the README's first command) pins every package the app
imports; pyproject.toml's dependencies (`pip install .`) are ranges that admit those pins, the
PostgreSQL driver an extra; requirements.lock (every package, made by scripts/lock.sh) holds them
with a hash on every line; and every pin is imported by the app. The console commands and the
runs folder of an installed copy are here too; the copy itself, built and installed in a fresh
virtual environment, is tests/test_installed_copy.py.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from serving import launch, paths

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")
IMPORT_NAME = {}  # a distribution whose import name differs from its own (none today)
# Pins no module imports by name: what loads each, and a text the code must hold for it to.
LOADED_BY = {
    "psycopg": "postgresql+psycopg",  # SQLAlchemy's driver for such a VIZ_CLASS_DB URL
    "psycopg-binary": "postgresql+psycopg",  # psycopg's compiled part, loaded by psycopg
}
EXTRA = {"psycopg": "postgres", "psycopg-binary": "postgres"}  # pins an extra of pyproject holds
# A pin that pyproject brings through another package's extra, and that package with the extra.
VIA_EXTRA = {"psycopg-binary": ("psycopg", "binary")}


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


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def declared(lines: list[str]) -> dict[str, Requirement]:
    return {normal(r.name): r for r in map(Requirement, lines)}


def lock_entries() -> list[str]:
    """The lock's requirement lines, each with its `--hash` options (continuations joined)."""
    text = (ROOT / "requirements.lock").read_text(encoding="utf-8").replace("\\\n", " ")
    return [line for line in text.splitlines() if PIN.match(line.strip())]


def test_pyproject_gives_a_range_for_every_pin_that_the_pinned_version_satisfies():
    ranges = declared(project()["dependencies"])
    extras = {name: declared(lines) for name, lines in project()["optional-dependencies"].items()}
    pinned = requirements()
    for name, version in pinned.items():
        if name in VIA_EXTRA:
            owner, extra = VIA_EXTRA[name]
            wanted = extras[EXTRA[name]][owner]
            assert extra in wanted.extras and pinned[owner] == version, name
        else:
            wanted = extras[EXTRA[name]][name] if name in EXTRA else ranges[name]
        assert wanted.specifier.contains(version), f"{name}=={version} is outside {wanted}"
        assert any(s.operator == "<" for s in wanted.specifier), f"{name}: no upper bound"
    every = {*ranges, *(n for group in extras.values() for n in group)}
    assert every <= set(pinned), "a dependency of pyproject.toml with no pin in requirements.txt"
    assert not set(EXTRA) & set(ranges), "the PostgreSQL driver is for everyone again"


def test_torch_range_admits_the_pinned_release_but_no_other_major():
    torch = declared(project()["dependencies"])["torch"].specifier
    assert torch.contains("2.13.0") and torch.contains("2.13.0+cpu")
    assert not torch.contains("3.0.0") and not torch.contains("1.13.1")


def test_the_console_commands_are_the_launcher_and_the_trainer():
    assert project()["scripts"] == {
        "viz-gpt": "viz_gpt.cli:main",
        "viz-train": "viz_model.training.cli:main",
    }
    wheel = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]
    sources = wheel["build"]["targets"]["wheel"]["sources"]
    # the engine top-level (the library), everything else of the app inside viz_gpt/
    assert "viz_model/" not in sources and sources["assets/"] == "viz_model/assets/"
    assert all(v.startswith("viz_gpt/") for k, v in sources.items() if k != "assets/")
    assert not list(ROOT.rglob("*.pth")), "a .pth file would put names on everyone's import path"


def test_the_lock_holds_every_pin_at_its_version_and_no_cuda_build():
    locked = pins(lock_entries())
    assert {name: Version(locked[name]).public for name in requirements()} == requirements()
    assert locked["torch"].endswith("+cpu")  # the CPU build, from the index the lock names
    assert len(locked) > len(requirements())  # transitive packages too
    assert not [name for name in locked if name.startswith(("nvidia-", "triton"))]


def test_every_line_of_the_lock_carries_a_sha256_hash():
    entries = lock_entries()
    assert len(entries) > 40
    unhashed = [e.split()[0] for e in entries if not re.search(r"--hash=sha256:[0-9a-f]{64}", e)]
    assert unhashed == []
    text = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text


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
    meta = project()
    licence = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License\n") and "Permission is hereby granted" in licence
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Licence", 1)[1]
    assert "MIT" in section and "(LICENSE)" in section and "public-domain" in section


def test_viz_gpt_help_speaks_for_the_app(capsys):
    assert launch.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: viz-gpt [--port N] [streamlit options]\n")
    for said in ("http://localhost:8501", "--server.address 0.0.0.0", "VIZ_RUNS_DIR", "./runs"):
        assert said in out
    assert "VIZ_CLASS_DB" in out and "pip install 'viz-gpt[postgres]'" in out
    assert "viz-train --help" in out and "streamlit run" in out


def test_viz_gpt_version_is_the_package_version(capsys):
    assert launch.main(["--version"]) == 0
    assert capsys.readouterr().out == f"viz-gpt {project()['version']}\n"


def test_port_is_streamlit_server_port_and_other_arguments_pass_through():
    args = ["--port", "8600", "--server.address", "0.0.0.0", "--port=8601"]
    assert launch.streamlit_args(args) == [
        "--server.port", "8600", "--server.address", "0.0.0.0", "--server.port=8601",
    ]  # fmt: skip
    assert launch.command(["--port", "8600"])[-2:] == ["--server.port", "8600"]


def test_an_installed_app_keeps_runs_in_the_current_folder_never_in_its_package(
    tmp_path, monkeypatch
):
    app = tmp_path / "site-packages" / "viz_gpt"  # what pyproject.toml installs
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.delenv(paths.RUNS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert paths.installed(app) and not paths.installed(ROOT)
    assert paths.runs_root(app) == tmp_path / "runs"
    assert paths.runs_root(ROOT) == ROOT / "runs"  # a checkout keeps its own
    monkeypatch.setenv(paths.RUNS_ENV, str(tmp_path / "elsewhere"))
    assert paths.runs_root(app) == tmp_path / "elsewhere"


def test_the_bundled_models_are_the_engines_assets_in_a_checkout_and_installed(tmp_path):
    import viz_model

    assert viz_model.ASSETS_DIR == ROOT / "assets"
    assert paths.bundled_dir(ROOT) == ROOT / "assets" / "models"
    app = tmp_path / "viz_gpt"
    app.mkdir()
    (app / "__init__.py").write_text("", encoding="utf-8")
    assert paths.bundled_dir(app) == viz_model.ASSETS_DIR / "models"
