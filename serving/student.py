"""One simulated student, speaking Streamlit's own websocket protocol as the browser does
(its messages are built and read through serving/streamlit_protocol.py, the protocol's fence).

A `Student` holds one websocket (one Streamlit session). `view` asks for a page run (a BackMsg
rerun_script with the page's URL name, its query string and any widget values) and reads
ForwardMsgs until script_finished, noting what the browser would need: exceptions drawn, bytes
received, widget ids by label (to change a widget later, as a click does) and the id of a fragment
that asks to be rerun on a timer. Like the browser, it keeps the hashes of the large (cacheable)
messages it received and sends them with each request, so the server sends a reference instead of
an element the session already holds. No browser: the costs measured are the server's and the wire's.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import websockets

from serving.streamlit_protocol import as_text, parse, rerun_request, stream_url

__all__ = ["Student", "View", "stream_url"]  # stream_url: the protocol's, re-exported


@dataclass
class View:
    """One page run as the student saw it."""

    page: str
    seconds: float = float("nan")
    finished: bool = False
    exceptions: list[str] = field(default_factory=list)
    kilobytes: float = 0.0
    shown: str | None = None  # the URL name of the page that ran ('' = Home), from navigation
    # Streamlit's "Page not found" notice came. A process's first runs go through its legacy
    # pages/ router, which sends it for any deep link although st.navigation then runs the page
    # asked for (the app closes the notice in a browser: ui/nav.py CLOSE_NOT_FOUND); it is a
    # failure only where another page ran.
    not_found_notice: bool = False

    @property
    def wrong_page(self) -> bool:
        return self.shown is not None and self.shown != self.page

    @property
    def failed(self) -> bool:
        return bool(self.exceptions) or not self.finished or self.wrong_page

    def as_dict(self) -> dict:
        return {
            "page": self.page or "Home",
            "seconds": self.seconds,
            "finished": self.finished,
            "exceptions": self.exceptions
            + ([f"ran page {self.shown or 'Home'!r} instead"] if self.wrong_page else []),
            "kilobytes": round(self.kilobytes, 1),
        }


class Student:
    """One session: `async with Student(server) as s: await s.view("Attention", "prompt=hi")`."""

    def __init__(self, server: int | str, headers: dict[str, str] | None = None, timeout=120.0):
        self.url, self.headers, self.timeout = stream_url(server), headers, timeout
        self.widget_ids: dict[str, str] = {}  # label -> widget id, from the elements drawn
        self.pages: list[str] = []  # every page's URL name ('' = Home), from the app's navigation
        self.fragment_id = ""  # of a fragment rerun on a timer (st.fragment(run_every=...))
        self.backend: str | None = None  # HAProxy's X-Backend header (serving/haproxy.cfg.template)
        self.cached: set[str] = (
            set()
        )  # hashes of the cacheable messages received, as a browser keeps
        self.ws = None

    async def __aenter__(self) -> Student:
        self.ws = await websockets.connect(
            self.url, max_size=None, open_timeout=self.timeout, additional_headers=self.headers
        )
        self.backend = self.ws.response.headers.get("X-Backend")
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()

    async def view(
        self,
        page: str,
        query: str = "",
        widgets: dict[str, str] | None = None,
        fragment_id: str = "",
        elements: list[str] | None = None,
    ) -> View:
        """Run `page` ('' = Home) with `query`; `widgets` maps a widget's label (as drawn on an
        earlier view) to a new text value, as a student typing into it. Each element drawn is
        appended to `elements` as protobuf text, when given."""
        msg = rerun_request(
            query_string=query,
            page_name=page,
            fragment_id=fragment_id,
            cached_message_hashes=self.cached,
            widgets=[
                (self.widget_ids[label], "string_value", v) for label, v in (widgets or {}).items()
            ],
        )
        seen = View(page)
        t0 = time.perf_counter()
        await self.ws.send(msg)
        seen.finished = await self._read_until_finished(t0 + self.timeout, seen, elements)
        seen.seconds = time.perf_counter() - t0
        return seen

    async def _read_until_finished(self, deadline: float, seen: View, elements) -> bool:
        while time.perf_counter() < deadline:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), deadline - time.perf_counter())
            except TimeoutError:
                return False
            seen.kilobytes += len(raw) / 1000
            fwd = parse(raw)
            if fwd.metadata.cacheable:
                self.cached.add(fwd.hash)
            kind = fwd.WhichOneof("type")
            if kind == "auto_rerun":
                self.fragment_id = fwd.auto_rerun.fragment_id
            elif kind == "delta" and fwd.delta.HasField("new_element"):
                self._note(fwd.delta.new_element, seen)
                if elements is not None:
                    elements.append(as_text(fwd.delta.new_element))
            elif kind == "navigation":
                pages = fwd.navigation.app_pages
                self.pages = [page.url_pathname for page in pages]
                ran = fwd.navigation.page_script_hash
                seen.shown = next(
                    (p.url_pathname for p in pages if p.page_script_hash == ran), None
                )
            elif kind == "page_not_found":  # see View.not_found_notice
                seen.not_found_notice = True
            elif kind == "script_finished":
                return True
        return False

    def _note(self, element, seen: View) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            seen.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:200])
        elif kind in ("text_area", "text_input"):
            widget = getattr(element, kind)
            self.widget_ids[widget.label] = widget.id
