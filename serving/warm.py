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


async def warm_process(port: int, pages: list[str], models: list[str]) -> list[str]:
    """Open `pages` once per model on the app at 127.0.0.1:port, with the default prompt; the
    pages that drew an exception or did not finish, as "page (model)" (empty when all went well)."""
    failed = []
    for model in models:
        query = urllib.parse.urlencode({"model": model, "prompt": DEFAULT_PROMPT})
        async with Student(port, timeout=TIMEOUT_S) as student:
            for page in pages:
                if (await student.view(page, query)).failed:
                    failed.append(f"{page or 'Home'} ({model})")
    return failed


def warm(ports: list[int], models: list[str] | None = None) -> dict[int, list[str]]:
    """Warm every process on `models` (default: the default model), one process after another
    (on a 2-core machine they would only share the cores); each one's failed pages."""
    pages, models = page_names(), models or [DEFAULT_MODEL]

    async def each() -> dict[int, list[str]]:
        return {port: await warm_process(port, pages, models) for port in ports}

    return asyncio.run(each())
