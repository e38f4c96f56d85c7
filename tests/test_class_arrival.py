"""A class arriving at once on a fresh server (issue 37): every student's first view runs the page
the student's link names. A fresh process answers its first runs through Streamlit's legacy
pages/ router, which sends a "Page not found" notice for a deep link although the page asked for
then runs (the app closes the notice in a browser); the benchmark counted each such notice as a
failed view (22 of 22), so the figure said nothing. A view now fails when another page ran."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest

from benchmarks.class_arrival import arrive
from serving.student import View
from tests.test_browser import ENV_VAR, free_port, start_server, stop_server, wait_healthy


@pytest.mark.unit
def test_a_view_fails_when_another_page_ran_not_for_the_notice_alone():
    notice = View("Attention", finished=True, shown="Attention", not_found_notice=True)
    assert not notice.failed and notice.as_dict()["exceptions"] == []
    home = View("Attention", finished=True, shown="", not_found_notice=True)
    assert home.failed and home.as_dict()["exceptions"] == ["ran page 'Home' instead"]
    assert View("", finished=True, shown="").failed is False
    assert View("Attention", finished=False, shown="Attention").failed


@pytest.mark.system
def test_a_class_opening_deep_links_at_once_lands_on_the_pages_it_asked_for(models_dir):
    pages = ["Attention", "LayerNorm", "Next_token", "", "MLP_neurons", "Residual_stream"]
    port = free_port()
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    proc = start_server(port, {**os.environ, ENV_VAR: str(models_dir)}, log)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc)
        views = asyncio.run(arrive(port, len(pages), 0.5, 0, pages))  # no warm-up: first runs
    finally:
        stop_server(proc)
    assert [v["page"] for v in views] == [p or "Home" for p in pages]
    assert all(v["finished"] and not v["exceptions"] for v in views), views
