"""Warm each app process before the class arrives: the views a class opens first, over the websocket.

A fresh process loads its models, imports the plotting stack and fills its caches on the first
view of each page; a class of 100 arriving within a second of a fresh server waited p95 about 12 s
for that (python -m benchmarks.bench_class_load --cold). The class server warms each process, on
its own port (not through HAProxy, so every process gets it), before it gives out the address.

What it opens (`plan`): every page on the default model (where every student lands), every stop of
every lesson (a class following the teacher through a lesson opens exactly these views), and Home
on every other model (which loads it). Every page on every model (`every_model`) was the first
plan; with 22 bundled models and 23 pages it took 4-8 minutes a process, where this takes about
half a minute (docs/TEACHING.md), and a page on another model is the one student's first view.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from dataclasses import dataclass, field

from serving.models import DEFAULT_MODEL
from serving.student import Student
from viz_model.lessons.lesson_file import lessons_dir, stop_pages

TIMEOUT_S = 300.0  # one page's first view on a busy machine: loading models, counting a corpus
EVERY_PAGE = "*"  # in a Plan's views: every page the app's navigation lists


@dataclass
class Plan:
    """The views to open, in order, as (page, query) with page "" for Home and EVERY_PAGE for
    each page of the navigation; one session per `label` (a model, or a lesson)."""

    sessions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)

    def add(self, label: str, page: str, query: dict[str, str | int]) -> None:
        self.sessions.setdefault(label, []).append((page, urllib.parse.urlencode(query)))

    @property
    def views(self) -> int:
        return sum(len(v) for v in self.sessions.values())


def plan(models: list[str], every_model: bool = False) -> Plan:
    """Every page on the default model (or on each of `models` when `every_model`), every lesson
    stop, and Home on the other models; models not in `models` are left out."""
    out = Plan()
    for model in models:
        if every_model or model == DEFAULT_MODEL:
            out.add(model, "", {"model": model})
            out.add(model, EVERY_PAGE, {"model": model})
    for lesson, step, page in stop_pages(lessons_dir()):
        out.add(f"lesson {lesson}", page, {"lesson": lesson, "step": step})
    for model in models:
        if model not in out.sessions:
            out.add(model, "", {"model": model})
    return out


async def warm_process(port: int, views: Plan) -> list[str]:
    """Open the plan's views on the app at 127.0.0.1:port; those that drew an exception or did
    not finish, as "page (model or lesson)" (empty when all went well). The pages are the ones the
    app's navigation lists, read from the session's first run, so this needs nothing of the UI."""
    failed = []
    for label, session_views in views.sessions.items():
        async with Student(port, timeout=TIMEOUT_S) as student:
            for page, query in session_views:
                if page == EVERY_PAGE:
                    if not student.pages:  # the navigation comes with the first run
                        await student.view("", query)
                    pages = [p for p in student.pages if p]
                else:
                    pages = [page]
                for name in pages:
                    if (await student.view(name, query)).failed:
                        failed.append(f"{name or 'Home'} ({label})")
    return failed


def warm(ports: list[int], views: Plan) -> dict[int, list[str]]:
    """Warm every process with the plan, one process after another (on a 2-core machine they
    would only share the cores); each one's failed views."""

    async def each() -> dict[int, list[str]]:
        return {port: await warm_process(port, views) for port in ports}

    return asyncio.run(each())
