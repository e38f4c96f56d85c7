"""Warm each app process before the class arrives: every page opened once, over the websocket.

A fresh process loads its models, imports the plotting stack and fills its caches on the first
view of each page; a class of 100 arriving within a second of a fresh server waited p95 about 12 s
for that (python -m benchmarks.bench_class_load --cold). The class server warms each process, on
its own port (not through HAProxy, so every process gets it), before it gives out the address.
"""

from __future__ import annotations

import asyncio
import urllib.parse

from serving.student import Student
from ui import nav
from ui.frame import DEFAULT_PROMPT
from ui.models import DEFAULT_MODEL

TIMEOUT_S = 300.0  # one page's first view on a busy machine: loading models, counting a corpus


def page_names() -> list[str]:
    """Every page's URL name, Home as ''."""
    return ["", *(p.url_path for pages in nav.available_sections().values() for p in pages)]


async def warm_process(port: int, pages: list[str]) -> list[str]:
    """Open `pages` once on the app at 127.0.0.1:port, with the default model and prompt; the
    pages that drew an exception or did not finish (empty when all went well)."""
    query = urllib.parse.urlencode({"model": DEFAULT_MODEL, "prompt": DEFAULT_PROMPT})
    failed = []
    async with Student(port, timeout=TIMEOUT_S) as student:
        for page in pages:
            seen = await student.view(page, query)
            if seen.failed:
                failed.append(page or "Home")
    return failed


def warm(ports: list[int]) -> dict[int, list[str]]:
    """Warm every process (in turn: on a 2-core machine they would only share the cores), and
    return each one's failed pages."""
    pages = page_names()

    async def each() -> dict[int, list[str]]:
        return {port: await warm_process(port, pages) for port in ports}

    return asyncio.run(each())
