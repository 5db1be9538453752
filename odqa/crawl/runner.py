"""One crawl run: read the questions, look up their sources, fetch and extract every page once, store it all.

Two resumable phases over the store: lookups (Wikipedia title, search results, dump, HTML folder), then pages.
Whatever the store already holds is skipped, so rerunning after a crash or Ctrl-C continues where it stopped.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from odqa.config import write_resolved
from odqa.crawl.config import CrawlConfig
from odqa.crawl.extract import ExtractorPool
from odqa.crawl.fetch import Fetcher, FetchFailure
from odqa.crawl.safety import AddressPolicy
from odqa.crawl.search import SearchProvider, make_provider
from odqa.crawl.sources import html_files_for, read_dump, read_html_file, subject_pages
from odqa.crawl.store import STORE_NAME, CrawlStore, PageRow, ResultRow, Summary, normalise_url, split_reason
from odqa.crawl.wikipedia import Wikipedia, normalise_title
from odqa.errors import CrawlError, FormatError, InputError, OdqaError
from odqa.io import example_from_dict, read_json_or_jsonl
from odqa.records import Example, Page

__all__ = ["read_questions", "run_crawl"]

log = logging.getLogger(__name__)


def read_questions(path: str | Path) -> list[tuple[Example, dict[str, Any]]]:
    """The question records of ``path`` (JSON Lines or a JSON array), checked: a question each, unique ids."""
    examples: list[tuple[Example, dict[str, Any]]] = []
    seen: dict[str, int | None] = {}
    for index, (line, obj) in enumerate(read_json_or_jsonl(path)):
        example = example_from_dict(obj, path=path, line=line, index=index)
        if not example.question.strip():
            raise FormatError("empty 'question'", path=path, line=line)
        if example.id in seen:
            raise FormatError(
                f"duplicate id {example.id!r} (first seen on line {seen[example.id]}); ids must be "
                "unique so a resumed crawl can match its questions",
                path=path,
                line=line,
            )
        seen[example.id] = line
        examples.append((example, dict(obj)))
    if not examples:
        raise InputError(f"{path}: no questions")
    return examples


def _sources(config: CrawlConfig, provider: SearchProvider | None) -> list[str]:
    sources = []
    if config.wikipedia:
        sources.append("dump" if config.dump else "wikipedia")
    if config.html_dir:
        sources.append("html")
    if provider is not None:
        sources.append(provider.name)
    return sources


def _page_in_folder(config: CrawlConfig, example: Example, source: str) -> bool:
    """Whether the subject's page in ``--html-dir`` stands in for its Wikipedia article (unless asked for both)."""
    return (source in ("wikipedia", "dump") and bool(config.html_dir) and not config.also_wikipedia
            and bool(subject_pages(config.html_dir or "", example)))


def run_crawl(
    questions: str | Path,
    out: str | Path,
    config: CrawlConfig,
    *,
    environ: Mapping[str, str] | None = None,
    console: Console | None = None,
) -> Summary:
    """Crawl the questions of ``questions`` into the folder ``out`` (new, or resumed); returns its summary.

    API keys come from ``environ`` (default: the process environment). ``console`` shows progress bars.
    """
    provider = make_provider(config, os.environ if environ is None else environ)
    for folder, name in ((config.html_dir, "--html-dir"), (config.dump, "--dump")):
        if folder and not Path(folder).exists():
            raise InputError(f"{name} {folder}: does not exist")
    examples = read_questions(questions)
    out = Path(out)
    with CrawlStore(out / STORE_NAME) as store:
        store.add_questions(examples)
        write_resolved(config, out / "crawl")
        progress = Progress(
            TextColumn("{task.description:<8}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=console is None,
        )
        run = _Run(config, store, provider, progress)
        lookups = [(example, source) for example, source
                   in store.pending_lookups(_sources(config, provider), retry_failed=config.retry_failed)
                   if not _page_in_folder(config, example, source)]
        run.dump_lookups([example for example, source in lookups if source == "dump"])
        with progress:
            asyncio.run(run.run([(e, s) for e, s in lookups if s != "dump"]))
        return store.summary()


async def _bounded(jobs: Iterable[Callable[[], Awaitable[None]]], limit: int) -> None:
    """Run ``jobs`` with at most ``limit`` started and unfinished; the per-host slots inside set the pace.

    On an error or a cancellation (Ctrl-C) the jobs still running are cancelled and awaited before it propagates,
    so none of them records an outcome once the fetcher and extractor pool behind them are closed.
    """
    running: set[asyncio.Task[None]] = set()
    try:
        for job in jobs:
            if len(running) >= limit:
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()  # a run-level error (jobs record their own item failures) stops the run
            running.add(asyncio.ensure_future(job()))
        while running:
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


class _Run:
    """The state of one run: its fetcher, extractor pool and progress bars."""

    def __init__(
        self, config: CrawlConfig, store: CrawlStore, provider: SearchProvider | None, progress: Progress
    ) -> None:
        self.config = config
        self.store = store
        self.provider = provider
        self.progress = progress
        self.wikipedia = Wikipedia(config.wikipedia_endpoint, config.wikipedia_api)
        self.window = config.concurrency * 4  # pages in flight: fetching, or fetched and awaiting extraction

    def dump_lookups(self, examples: list[Example]) -> None:
        """Store each question's article from the dump, read in one streaming pass.

        Runs before the event loop starts, so Ctrl-C stops a long pass over a multi-GB dump at once.
        """
        if not examples:
            return
        articles = read_dump(self.config.dump or "", {e.subject for e in examples if e.subject})
        for example in examples:
            article = articles.get(normalise_title(example.subject)) if example.subject else None
            if article is None:
                self.store.save_lookup(example.id, "dump", [])
                continue
            url = self._page_url(article.url)
            page = PageRow(url, "ok", final_url=article.url, title=article.title, text=article.text)
            self.store.save_lookup(example.id, "dump", [ResultRow(url, 0, article.title)], pages=[page])

    async def run(self, lookups: list[tuple[Example, str]]) -> None:
        """The online lookups, then every page still to fetch, each recorded as it finishes."""
        policy = AddressPolicy.trusting(
            [self.config.search_endpoint, self.config.wikipedia_endpoint],
            allow_private=self.config.allow_private,
        )
        async with Fetcher(self.config, policy) as fetcher:
            task = self.progress.add_task("lookups", total=len(lookups))
            await _bounded((self._lookup_job(fetcher, e, s, task) for e, s in lookups), self.window)
            pages = _interleave_hosts(self.store.pending_pages(retry_failed=self.config.retry_failed))
            task = self.progress.add_task("pages", total=len(pages))
            with ExtractorPool(self.config.extract_workers, self.config.extract_timeout) as pool:
                await _bounded(
                    (self._page_job(fetcher, pool, url, robots, task) for url, robots in pages), self.window
                )

    def _lookup_job(
        self, fetcher: Fetcher, example: Example, source: str, task: TaskID
    ) -> Callable[[], Awaitable[None]]:
        async def job() -> None:
            error = None
            try:
                results = await self._lookup(fetcher, example, source)
            except FetchFailure as failure:
                results, error = [], str(failure)
            except OdqaError:
                raise  # a run-level problem, not this question's
            except Exception as exc:  # a malformed answer must not abort the crawl: record why it failed
                log.warning("%s lookup of %s failed unexpectedly: %s", source, example.id, type(exc).__name__,
                            exc_info=True)
                results, error = [], f"error: {type(exc).__name__}"
            self.store.save_lookup(example.id, source, results, error=error)
            self.progress.advance(task)

        return job

    async def _lookup(self, fetcher: Fetcher, example: Example, source: str) -> list[ResultRow]:
        if source == "wikipedia":
            title = example.subject
            if not title:
                request = self.wikipedia.search_request(example.question)
                title = self.wikipedia.parse_search(
                    await fetcher.get_json(request.url, params=request.params)
                )
            if not title:
                return []
            return [ResultRow(normalise_url(self.wikipedia.html_url(title)), 0, normalise_title(title))]
        if source == "html":
            files = html_files_for(self.config.html_dir or "", example)
            return [ResultRow(path.resolve().as_uri(), rank, path.stem) for rank, path in enumerate(files)]
        if self.provider is None or source != self.provider.name:
            raise CrawlError(
                f"no lookup for source {source!r}; valid: wikipedia, dump, html or the search provider"
            )
        found: dict[str, ResultRow] = {}
        for request in self.provider.requests(example.question, self.config.top):
            hits = self.provider.parse(
                await fetcher.get_json(request.url, params=request.params, headers=request.headers)
            )
            for hit in hits:
                url = self._page_url(hit.url)
                if (
                    url.startswith(("http://", "https://"))
                    and url not in found
                    and len(found) < self.config.top
                ):
                    found[url] = ResultRow(url, len(found), hit.title)
            if not hits or len(found) >= self.config.top:
                break
        return list(found.values())

    def _page_url(self, url: str) -> str:
        """The key a result URL is stored and fetched under: an article of the configured Wikipedia, in any of its
        URL forms, becomes the one URL this run reads that article from (the API's, or the dump's reader URL), so
        a search result that is the subject's article is that article, not a second copy; other URLs are
        normalised."""
        title = self.wikipedia.title_of(url)
        if title is None:
            return normalise_url(url)
        return normalise_url(self.wikipedia.article_url(title) if self.config.dump else self.wikipedia.html_url(title))

    def _page_job(
        self, fetcher: Fetcher, pool: ExtractorPool, url: str, robots: bool, task: TaskID
    ) -> Callable[[], Awaitable[None]]:
        api = not robots or self.wikipedia.is_api_url(url)  # an article odqa asks the configured API for

        async def job() -> None:
            try:
                if url.startswith("file:"):
                    page = read_html_file(url, self.config.html_dir or "", self.config.max_bytes)
                elif api and Wikipedia.is_parse_url(url):  # an article from the action API
                    page = await self._parse_page(fetcher, url)
                else:
                    page = await fetcher.fetch_page(url, api=api)
                row = await self._extract(pool, page)
            except FetchFailure as failure:  # an action-API failure (fetch_page returns them as a Page)
                row = PageRow(url, "failed", reason=failure.reason, detail=failure.detail or None,
                              http_status=failure.http_status)
            except OdqaError:
                raise  # a run-level problem (a missing extra, a bad option), not this page's
            except Exception as exc:  # one hostile page must never abort the crawl: record why it failed
                log.warning("page %s failed unexpectedly: %s: %s", url, type(exc).__name__, exc, exc_info=True)
                row = PageRow(url, "failed", reason="error", detail=type(exc).__name__)
            self.store.save_page(row)  # a store failure (disk full) does stop the run: nothing could be saved
            self.progress.advance(task)

        return job

    async def _parse_page(self, fetcher: Fetcher, url: str) -> Page:
        """An article's HTML from an ``action=parse`` answer, as a Page whose final URL is the article's."""
        title, html = self.wikipedia.parse_page(await fetcher.get_json(url))
        final = self.wikipedia.article_url(title) if title else url
        return Page(url=url, status="ok", http_status=200, content_type="text/html", html=html, final_url=final)

    @staticmethod
    async def _extract(pool: ExtractorPool, page: Page) -> PageRow:
        base = PageRow(page.url, "failed", final_url=page.final_url, http_status=page.http_status,
                       content_type=page.content_type)
        if page.status != "ok" or page.html is None:
            reason, detail = split_reason(page.error)
            return replace(base, reason=reason, detail=detail)
        extraction = await pool.aextract(page.html, page.final_url or page.url)
        if extraction.reason is not None:
            reason, detail = split_reason(extraction.reason)
            return replace(base, reason=reason, detail=detail, title=extraction.title or None)
        return replace(base, status="ok", title=extraction.title, date=extraction.date, text=extraction.text)


def _interleave_hosts(pages: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Reorder round-robin over hosts, so a window of started tasks spans many hosts instead of one."""
    by_host: dict[str, list[tuple[str, bool]]] = {}
    for item in pages:
        host = item[0].split("/", 3)[2] if "://" in item[0] else ""
        by_host.setdefault(host, []).append(item)
    queues = list(by_host.values())
    ordered: list[tuple[str, bool]] = []
    for depth in range(max((len(q) for q in queues), default=0)):
        ordered.extend(q[depth] for q in queues if depth < len(q))
    return ordered
