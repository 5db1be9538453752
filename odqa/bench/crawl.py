"""Crawl throughput: fetch pages/s against local servers with a fixed latency, and extraction pages/s.

Fetching is I/O bound, so with ``concurrency`` requests in flight and ``latency`` seconds per answer the bound is
``concurrency / latency`` pages/s, lowered by politeness: ``hosts * per_host / latency`` (per-host slots) and
``hosts / delay`` (per-host delay). Each row reports pages/s and its share of the bound that applies.

The servers run in a separate process on 127.0.0.1 .. 127.0.0.N (one host each, robots.txt served).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Sequence
from typing import Any

from odqa.bench._common import BENCH, say
from odqa.crawl import CrawlConfig
from odqa.crawl.extract import ExtractorPool, extract_html
from odqa.crawl.fetch import Fetcher
from odqa.crawl.safety import AddressPolicy

__all__ = ["bench_extract", "bench_fetch", "check", "run"]

WEB = BENCH.parent / "tests" / "data" / "web"
PAGE = (b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Bench page</title></head><body><article>"
        + b"<p>A paragraph of plain prose for the crawl benchmark, long enough to look like an article.</p>" * 20
        + b"</article></body></html>")
ROBOTS = b"User-agent: *\nAllow: /\n"


async def _serve(hosts: list[str], latency: float, ports: Any) -> None:
    """Minimal keep-alive HTTP/1.1 server: every page answers after ``latency`` seconds, robots.txt at once."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                if path == b"/robots.txt":
                    body, kind = ROBOTS, b"text/plain"
                else:
                    await asyncio.sleep(latency)
                    body, kind = PAGE, b"text/html; charset=utf-8"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    servers = [await asyncio.start_server(handle, host, 0, backlog=1024) for host in hosts]
    ports.put([s.sockets[0].getsockname()[1] for s in servers])
    await asyncio.Event().wait()


def _server_main(hosts: list[str], latency: float, ports: Any) -> None:
    asyncio.run(_serve(hosts, latency, ports))


async def _fetch_all(urls: list[str], config: CrawlConfig) -> tuple[float, int]:
    async with Fetcher(config, AddressPolicy(allow_private=True)) as fetcher:
        hosts = sorted({u.rsplit("/", 2)[0] for u in urls})
        await asyncio.gather(*(fetcher.fetch_page(f"{h}/warm") for h in hosts))  # robots.txt + connections
        start = time.perf_counter()
        pages = await asyncio.gather(*(fetcher.fetch_page(u) for u in urls))
        elapsed = time.perf_counter() - start
    return elapsed, sum(p.status == "ok" for p in pages)


def bench_fetch(latency: float, pages: int, hosts: int, levels: Sequence[int] = (4, 8, 16, 32, 64)
                ) -> list[dict[str, Any]]:
    """Pages/s at several concurrency levels, per-host slots and delays, as a share of the bound."""
    context = multiprocessing.get_context("spawn")
    ports_queue = context.Queue()
    names = [f"127.0.0.{i + 1}" for i in range(hosts)]
    server = context.Process(target=_server_main, args=(names, latency, ports_queue), daemon=True)
    server.start()
    try:
        ports = ports_queue.get(timeout=30)
        bases = [f"http://{host}:{port}" for host, port in zip(names, ports, strict=True)]
        urls = [f"{bases[n % hosts]}/page/{n}" for n in range(pages)]
        rows = []
        cases = [(c, c // hosts, 0.0) for c in levels] + [(32, 2, 0.0), (32, 8, 0.1)]
        for concurrency, per_host, delay in cases:
            config = CrawlConfig(concurrency=concurrency, per_host=max(per_host, 1), delay=delay, retries=0,
                                 timeout=30, allow_private=True)
            bound = min(concurrency / latency, hosts * config.per_host / latency,
                        hosts / delay if delay else float("inf"))
            elapsed, ok = asyncio.run(_fetch_all(urls, config))
            rate = ok / elapsed
            rows.append({"concurrency": concurrency, "per_host": config.per_host, "delay_s": delay,
                         "hosts": hosts, "latency_s": latency, "pages": ok, "seconds": round(elapsed, 3),
                         "pages_per_s": round(rate, 1), "bound_pages_per_s": round(bound, 1),
                         "share_of_bound": round(rate / bound, 3)})
            say(f"  fetch c={concurrency:<3} per_host={config.per_host:<3} delay={delay:<4} "
                f"{rate:8.1f} pages/s  bound {bound:8.1f}  share {rate / bound:6.1%}")
        return rows
    finally:
        server.kill()
        server.join()


def bench_extract(count: int) -> dict[str, Any]:
    """Extraction pages/s of the real Wikipedia pages: in this process, then the worker pool."""
    sources = [(WEB / "trafilatura" / "en.wikipedia.org.tsne.html").read_text("utf-8"),
               (WEB / "readability" / "wikipedia" / "source.html").read_text("utf-8")]
    html = [sources[n % len(sources)] for n in range(count)]
    extract_html(html[0])  # import trafilatura outside the timing
    start = time.perf_counter()
    inline = [extract_html(h) for h in html]
    one = count / (time.perf_counter() - start)
    workers = os.cpu_count() or 1
    with ExtractorPool(workers=workers, timeout=60) as pool:

        async def run_all() -> tuple[float, list[Any]]:
            await asyncio.gather(*(pool.aextract(h) for h in html[:workers]))  # start workers outside timing
            started = time.perf_counter()
            done = await asyncio.gather(*(pool.aextract(h) for h in html))
            return time.perf_counter() - started, done

        elapsed, pooled = asyncio.run(run_all())
        many = count / elapsed
    if any(r.reason is not None for r in inline + pooled):
        raise RuntimeError("a bench page failed to extract; the figures would not be comparable")
    say(f"  extract one process {one:6.1f} pages/s   pool of {workers} {many:6.1f} pages/s (x{many / one:.2f})")
    return {"pages": count, "one_process_pages_per_s": round(one, 1), "pool_workers": workers,
            "pool_pages_per_s": round(many, 1), "speedup": round(many / one, 2)}


def run(quick: bool = False, latency: float = 0.05, hosts: int = 4) -> dict[str, Any]:
    """Fetch rows (pages/s against the bound) and extraction pages/s (``quick``: fewer pages and levels)."""
    pages = 200 if quick else 600
    return {"fetch": bench_fetch(latency, pages, hosts, (8, 32) if quick else (4, 8, 16, 32, 64)),
            "extract": bench_extract(12 if quick else 60)}


def check(results: dict[str, Any], floors: dict[str, float]) -> list[str]:
    """Failures: the politeness-limited rows' worst share of their bound below its floor."""
    limited = [row for row in results["fetch"] if row["per_host"] * row["hosts"] < row["concurrency"]
               or row["delay_s"]]
    worst = min(row["share_of_bound"] for row in limited)
    floor = floors["politeness_share_of_bound"]
    return [f"crawl: politeness-limited fetch at {worst:.0%} of its bound < floor {floor:.0%}"] if worst < floor else []
