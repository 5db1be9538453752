"""Main-text extraction with trafilatura, in worker processes with a hard per-page time limit.

trafilatura can spin for minutes on a pathological page; a worker that overruns its limit is killed and
replaced, and the page is recorded as ``extraction_timeout``. An empty extraction is an outcome too
(``extraction_empty``).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import queue
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from odqa._optional import require
from odqa.errors import CrawlError

__all__ = ["Extraction", "ExtractorPool", "extract_html"]

_READY = "ready"
_START_LIMIT = 120.0  # seconds a fresh worker may take to import trafilatura


@dataclass(frozen=True)
class Extraction:
    """What trafilatura kept of one page; ``reason`` says why there is no text (None when there is)."""

    title: str = ""
    date: str | None = None
    text: str = ""
    reason: str | None = None


def extract_html(html: str, url: str | None = None) -> Extraction:
    """Title, date and main text of one HTML page (runs inside a worker, or inline with ``workers=0``)."""
    trafilatura = require("trafilatura", "crawl")
    try:
        raw = trafilatura.extract(
            html, url=url, output_format="json", with_metadata=True, include_comments=False
        )
    except (
        Exception
    ) as exc:  # hostile HTML can break lxml or trafilatura in any way; one page must not stop a run
        return Extraction(reason=f"extraction_error: {type(exc).__name__}: {exc}")
    data: dict[str, Any] = json.loads(raw) if raw else {}
    text = str(data.get("text") or "").strip()
    if not text:
        return Extraction(title=str(data.get("title") or ""), reason="extraction_empty")
    return Extraction(title=str(data.get("title") or ""), date=data.get("date") or None, text=text)


def _serve(conn: Connection) -> None:
    """Worker loop: import trafilatura once, then extract each ``(html, url)`` sent until the pipe closes.

    Ctrl-C reaches the whole process group: the worker ignores it and is stopped by its pool instead. When the
    crawl process is gone (killed, or it closed the pipe), the worker ends quietly.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    require("trafilatura", "crawl")
    try:
        conn.send(_READY)
        while True:
            html, url = conn.recv()
            conn.send(extract_html(html, url))
    except (EOFError, OSError):
        return


class _Worker:
    """One extraction process and its pipe; stopped when it overruns or dies, then started afresh by the pool."""

    def __init__(self, context: Any) -> None:
        self._context = context
        self._start()

    def _start(self) -> None:
        self._conn, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        child.close()
        self._ready = False

    @property
    def stopped(self) -> bool:
        return bool(self._conn.closed)

    def run(self, html: str, url: str | None, limit: float) -> Extraction:
        try:
            if not self._ready:
                if not self._conn.poll(_START_LIMIT):
                    raise EOFError("worker did not start")
                self._ready = self._conn.recv() == _READY
            self._conn.send((html, url))
            if self._conn.poll(limit):
                result: Extraction = self._conn.recv()
                return result
            reason = f"extraction_timeout: over {limit}s"
        except (EOFError, OSError) as exc:
            reason = f"extraction_error: worker died ({exc})"
        self.stop()
        return Extraction(reason=reason)

    def kill(self) -> None:
        """End the process now; a thread waiting on its pipe then sees end-of-file."""
        if self._process.is_alive():
            self._process.kill()

    def stop(self) -> None:
        self.kill()
        self._process.join()
        self._conn.close()

    def restart(self) -> None:
        self.stop()
        self._start()


class ExtractorPool:
    """``workers`` extraction processes with a time limit per page; ``workers=0`` extracts in a thread of the
    calling process instead (no time limit: for small runs and for measuring the pool's gain)."""

    def __init__(self, workers: int, timeout: float) -> None:
        self._timeout = timeout
        self._closing = False
        self._threads = ThreadPoolExecutor(max_workers=max(workers, 1), thread_name_prefix="odqa-extract")
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._workers: list[_Worker] = []
        if workers:
            context = multiprocessing.get_context("spawn")  # fork is unsafe with the event loop's threads
            self._workers = [_Worker(context) for _ in range(workers)]
            for worker in self._workers:
                self._idle.put(worker)

    def __enter__(self) -> ExtractorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def extract(self, html: str, url: str | None = None) -> Extraction:
        """Extract one page, blocking until a worker is free (thread-safe); raises :class:`CrawlError` when the
        pool is closed meanwhile."""
        if not self._workers:
            return extract_html(html, url)
        worker = self._idle.get()
        try:
            result = worker.run(html, url, self._timeout)
            if self._closing:  # the worker was killed by close(): that says nothing about the page
                raise CrawlError("extraction interrupted: the extractor pool was closed")
            if worker.stopped:
                worker.restart()
            return result
        finally:
            self._idle.put(worker)

    async def aextract(self, html: str, url: str | None = None) -> Extraction:
        """:meth:`extract` for the event loop: runs in one of the pool's threads."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, self.extract, html, url)

    def close(self) -> None:
        """Stop at once, even mid-page (Ctrl-C must not wait for a slow extraction)."""
        self._closing = True
        for worker in self._workers:
            worker.kill()
        self._threads.shutdown(wait=True, cancel_futures=True)
        for worker in self._workers:
            worker.stop()
