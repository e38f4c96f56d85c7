"""The app in a real browser: `streamlit run app.py` on 127.0.0.1 and the system Chromium
(Playwright) open Home, a deep link, a click through the navigation and a reload. Every page of
ui.nav (pages added later are covered without editing a file) is opened by its deep link on a
fresh server in tests/test_browser_deep_links.py and checked there with `check_page`: it must
finish its script with no exception element and at least one drawn chart; a full-height
screenshot of each, at 1400 px and at 1024x768 (a projector; `name@1024.png`), goes to
artifacts/screenshots/ (gitignored) for a person to look at.

Outside CI the suite skips when no browser is found; with CI=true it fails instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest

try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # the browser fixture skips (or fails under CI) with the reason
    PlaywrightTimeout = TimeoutError

from serving.class_server import app_command
from serving.models import ENV_VAR
from ui import nav
from viz_model.bundles.load import load_bundle

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "artifacts" / "screenshots"
DONE = "[data-testid='stApp'][data-test-script-state='notRunning']"
CHARTS = "[data-testid='stPlotlyChart'], [data-testid='stVegaLiteChart']"
TIMEOUT_MS = 90_000
NAV = "[data-testid='stSidebarNav']"  # the app's navigation (st.navigation)
PAGES = nav.lesson_pages()
DEEP_PROMPT = "KING:\nWhat is the matter?"
SMALL = (1024, 768)  # a classroom projector
# Each displayed formula's [scrollWidth, clientWidth]: a wider content than box is a clipped formula.
FORMULAS_JS = """() => Array.from(document.querySelectorAll('.katex-display'))
  .map(e => [e.scrollWidth, e.clientWidth])"""
# Text cut at 1024 px: a chart title running past its chart (the svg clips it); a metric, widget
# or button label wider than its box; any text Streamlit ends with "…" (one pixel is enough).
CUT_TEXT_JS = """() => [
  ...Array.from(document.querySelectorAll('.js-plotly-plot'))
    .map(p => [p.querySelector('.gtitle'), p.getBoundingClientRect().right])
    .filter(([t, right]) => t && t.getBoundingClientRect().right > right + 1)
    .map(([t]) => 'chart title: ' + t.textContent),
  ...Array.from(document.querySelectorAll(
    '[data-testid=stMain] [data-testid=stMetricLabel] *, ' +
    '[data-testid=stMain] [data-testid=stWidgetLabel] *, [data-testid=stMain] button *'))
    .filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => 'label: ' + e.innerText),
  ...Array.from(document.querySelectorAll('[data-testid=stMain] *'))
    .filter(e => e.scrollWidth > e.clientWidth && getComputedStyle(e).textOverflow === 'ellipsis')
    .map(e => 'ellipsis: ' + e.innerText)]"""
# The page's own scroll containers: a full-page screenshot needs the viewport as tall as they are.
HEIGHT_JS = """() => Math.max(900, ...Array.from(document.querySelectorAll(
  "[data-testid=stMain], [data-testid=stMainBlockContainer], [data-testid=stSidebarContent]"
)).map(e => e.scrollHeight))"""


def chromium_path() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def _no_browser(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but the browser suite cannot run: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(
            app_command(port), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def wait_healthy(base: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"streamlit was not healthy within {timeout} s")


def open_home_once(port: int) -> None:
    """Run Home once over the websocket, as docs/TEACHING.md asks a teacher to before sharing a
    deep link: a fresh process's very first request goes to Streamlit's legacy pages/ router,
    which puts a "Page not found" notice over a deep link's page (docs/ARCHITECTURE.md, Pages and
    navigation; tests/test_browser_deep_links.py keeps fresh servers fresh)."""
    import asyncio

    from serving.student import Student

    async def view() -> bool:
        async with Student(port) as student:
            return (await student.view("")).finished

    assert asyncio.run(view())


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def app_server(models: Path, logs: Path, *, warm: bool = True, **env: str):
    """A Streamlit server of the app on 127.0.0.1 finding bundles in `models`, `env` added to its
    environment; yields its address and stops it after. `warm`: Home opened once first, as a
    teacher does before sharing a deep link (open_home_once)."""
    port = free_port()
    proc = start_server(port, {**os.environ, ENV_VAR: str(models), **env}, logs / "streamlit.log")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc)
        if warm:
            open_home_once(port)
        yield base
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    """One streamlit server for the whole module; the test bundle beside the bundled models."""
    with app_server(models_dir, tmp_path_factory.mktemp("server"), warm=False) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    exe = chromium_path()
    if exe is None:
        _no_browser("no Chromium found (looked for `chromium` on PATH and /usr/bin/chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(
                executable_path=exe,
                args=["--disable-gpu", "--disable-dev-shm-usage", "--no-sandbox"],
            )
        except Exception as exc:  # noqa: BLE001 - any launch failure means: no usable browser
            _no_browser(f"Chromium at {exe} did not start: {exc}")
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    p = context.new_page()
    p.js_errors = []
    p.on("pageerror", lambda exc: p.js_errors.append(str(exc)))
    yield p
    context.close()


def wait_drawn(p) -> None:
    """Until the frame is drawn and the script has finished (then a moment for charts to paint)."""
    p.wait_for_selector(f"{NAV} [data-testid='stSidebarNavLink']", timeout=TIMEOUT_MS)
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)
    p.wait_for_timeout(800)
    p.wait_for_selector(DONE, timeout=TIMEOUT_MS)


def screenshot(p, name: str, width: int = 1400) -> Path:
    """A full-height screenshot at `width`; the page re-lays itself out, it is not run again."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    p.set_viewport_size({"width": width, "height": SMALL[1]})
    p.wait_for_timeout(300)
    height = min(p.evaluate(HEIGHT_JS) + 40, 8000)
    p.set_viewport_size({"width": width, "height": height})
    p.wait_for_timeout(600)
    path = SHOTS / (f"{name}.png" if width == 1400 else f"{name}@{width}.png")
    p.screenshot(path=str(path), full_page=True)
    return path


def check_page(p, name: str, charts: bool = True) -> None:
    exceptions = p.locator("[data-testid='stException']")
    with contextlib.suppress(PlaywrightTimeout):  # charts mount a moment after the script ends
        p.wait_for_selector(CHARTS, timeout=15_000)
    shot = screenshot(p, name)
    small = screenshot(p, name, width=SMALL[0])  # a projector: every page is looked at there too
    clipped = [w for w in p.evaluate(FORMULAS_JS) if w[0] > w[1] + 4]  # +4: sub-pixel rounding
    assert not clipped, f"{name}: formulas clipped at {SMALL[0]} px: {clipped} ({small})"
    cut = p.evaluate(CUT_TEXT_JS)
    assert not cut, f"{name}: text cut at {SMALL[0]} px: {cut} ({small})"
    if exceptions.count():
        pytest.fail(
            f"{name}: exception on the page: {exceptions.first.inner_text()[:500]} ({shot})"
        )
    if charts:  # every page but Lessons (a list) and Live class (forms, outside a class)
        assert p.locator(CHARTS).count() >= 1, f"{name}: no chart drawn ({shot})"
    assert not p.js_errors, f"{name}: JavaScript errors {p.js_errors[:3]}"


def query(p) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(p.url).query).items()}


def test_home(server, page):
    page.goto(server + "/")
    wait_drawn(page)
    check_page(page, "00_Home")
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 2  # diagram + parameters
    assert {"model", "prompt"} <= set(query(page))


def test_deep_link_opens_the_page_with_model_and_prompt(server, page):
    target = next((p.url_path for p in PAGES if p.needs_prompt), "")  # a page about the prompt
    page.goto(f"{server}/{target}?model=test-char&prompt={quote(DEEP_PROMPT)}")
    wait_drawn(page)
    check_page(page, "deep_link")
    side = page.locator("[data-testid='stSidebar']")
    assert side.locator("textarea").input_value() == DEEP_PROMPT
    assert "About “test-char”" in side.inner_text()  # the model card of the linked model
    assert query(page)["model"] == "test-char" and query(page)["prompt"] == DEEP_PROMPT


def test_the_model_card_downloads_a_model_that_opens_back(server, page, tmp_path, models_dir):
    """A real click in Chromium: the zip arrives, and its bundle is the model the card names."""
    page.goto(f"{server}/?model=test-char")
    wait_drawn(page)
    with page.expect_download(timeout=TIMEOUT_MS) as arrival:
        page.get_by_role("button", name="Download this model").click()
    download = arrival.value
    assert download.suggested_filename == "test-char.zip"
    with zipfile.ZipFile(download.path()) as archive:
        archive.extractall(tmp_path)
    bundle = load_bundle(tmp_path / "test-char" / "test-char")
    assert bundle.config == load_bundle(models_dir / "test-char").config
    assert (tmp_path / "test-char" / "test-char-transformers" / "config.json").is_file()
    assert page.locator("[data-testid='stException']").count() == 0


def test_navigation_keeps_prompt_and_model_in_the_url(server, page):
    if not PAGES:
        pytest.skip("no lesson page exists yet")
    page.goto(f"{server}/?model=test-char&prompt={quote(DEEP_PROMPT)}")
    wait_drawn(page)
    page.locator(f"{NAV} [data-testid='stSidebarNavLink']").filter(
        has_text=PAGES[-1].label
    ).first.click()
    page.wait_for_url(f"**/{PAGES[-1].url_path}*", timeout=TIMEOUT_MS)
    wait_drawn(page)
    page.wait_for_function("() => location.search.includes('model=')", timeout=TIMEOUT_MS)
    assert query(page)["model"] == "test-char" and query(page)["prompt"] == DEEP_PROMPT
    assert page.locator("[data-testid='stSidebar'] textarea").input_value() == DEEP_PROMPT


def test_generation_survives_a_reload(server, page):
    entry = next((p for p in PAGES if p.url_path == "Generation"), None)
    if entry is None:
        pytest.skip("no Generation page")
    page.goto(f"{server}/{entry.url_path}?model=test-char&prompt={quote(DEEP_PROMPT)}")
    wait_drawn(page)
    page.locator(".st-key-run button").click()
    page.wait_for_function("() => location.search.includes('gen=')", timeout=TIMEOUT_MS)
    wait_drawn(page)
    history = page.locator("[data-testid='stHtml']").first
    text, link = history.inner_text(), query(page)["gen"]
    assert "prompt + 20 generated tokens" in page.inner_text("[data-testid='stMain']")
    page.reload()
    wait_drawn(page)
    check_page(page, "generation_reloaded")
    assert "prompt + 20 generated tokens" in page.inner_text("[data-testid='stMain']")
    assert history.inner_text() == text and query(page)["gen"] == link
