"""Warm each app process before the class arrives: every page opened once, over the websocket.

A fresh process loads its models, imports the plotting stack and fills its caches on the first
view of each page; a class of 100 arriving within a second of a fresh server waited p95 about 12 s
for that (python -m benchmarks.bench_class_load --cold). The class server warms each process, on
its own port (not through HAProxy, so every process gets it), before it gives out the address.
"""

from __future__ import annotations

import asyncio
import urllib.parse

from serving.models import DEFAULT_MODEL
from serving.student import Student

TIMEOUT_S = 300.0  # one page's first view on a busy machine: loading models, counting a corpus


async def warm_process(port: int, models: list[str]) -> list[str]:
    """Open every page once per model on the app at 127.0.0.1:port, with the app's default
    prompt (the URL names none); the pages that drew an exception or did not finish, as
    "page (model)" (empty when all went well). The pages are the ones the app's navigation
    lists, read from its first run, so this module needs nothing from the UI."""
    failed = []
    for model in models:
        query = urllib.parse.urlencode({"model": model})
        async with Student(port, timeout=TIMEOUT_S) as student:
            if (await student.view("", query)).failed:
                failed.append(f"Home ({model})")
            for page in [p for p in student.pages if p]:
                if (await student.view(page, query)).failed:
                    failed.append(f"{page} ({model})")
    return failed


def warm(ports: list[int], models: list[str] | None = None) -> dict[int, list[str]]:
    """Warm every process on `models` (default: the default model), one process after another
    (on a 2-core machine they would only share the cores); each one's failed pages."""
    models = models or [DEFAULT_MODEL]

    async def each() -> dict[int, list[str]]:
        return {port: await warm_process(port, models) for port in ports}

    return asyncio.run(each())
