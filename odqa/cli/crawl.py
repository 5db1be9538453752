"""``odqa crawl``: gather candidate documents for each question into a resumable run folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from odqa.cli._app import app, console, guarded

if TYPE_CHECKING:
    from odqa.crawl import Summary

__all__ = ["crawl"]


@app.command("crawl")
@guarded
def crawl(
    questions: Annotated[Path, typer.Argument(help="Question records (JSON Lines): {id, question, ...}.")],
    out: Annotated[Path, typer.Option("--out", help="Run folder, e.g. crawl/NAME (rerun to resume).")],
    search: Annotated[
        str | None, typer.Option(help="Web search: google, brave, bing, searxng or none (default none).")
    ] = None,
    top: Annotated[int | None, typer.Option(help="Search results kept per question (default 10).")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Requests in flight in all (default 16).")] = None,
    per_host: Annotated[int | None, typer.Option("--per-host", help="Requests in flight per host.")] = None,
    delay: Annotated[float | None, typer.Option(help="Seconds between request starts on one host.")] = None,
    search_endpoint: Annotated[
        str | None, typer.Option("--search-endpoint", help="Search API URL (a self-hosted SearXNG).")
    ] = None,
    wikipedia: Annotated[
        bool | None, typer.Option("--wikipedia/--no-wikipedia", help="Add the subject's article (default on).")
    ] = None,
    wikipedia_endpoint: Annotated[
        str | None, typer.Option("--wikipedia-endpoint", help="MediaWiki site root (other language, mirror).")
    ] = None,
    wikipedia_api: Annotated[
        str | None,
        typer.Option("--wikipedia-api", help="Article HTML from 'rest' (default) or 'action' (any MediaWiki)."),
    ] = None,
    allow_private: Annotated[
        bool, typer.Option("--allow-private", help="Allow private, loopback and link-local addresses.")
    ] = False,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="Fetch again what failed in an earlier run.")
    ] = False,
    contact: Annotated[
        str | None, typer.Option("--contact", help="Email or URL put in the User-Agent for site owners.")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="YAML file of crawl settings.")] = None,
    dump: Annotated[
        Path | None, typer.Option("--dump", help="MediaWiki XML dump to use instead of the Wikipedia API.")
    ] = None,
    html_dir: Annotated[
        Path | None, typer.Option("--html-dir", help="Folder: <question id>/*.html, <Subject>.html (a subject's "
                                                     "page stands in for its Wikipedia article).")
    ] = None,
    also_wikipedia: Annotated[
        bool, typer.Option("--also-wikipedia", help="With --html-dir: fetch the Wikipedia article of a subject "
                                                    "whose page is in the folder as well.")
    ] = False,
    export: Annotated[
        Path | None, typer.Option("--export", help="Also write the result as JSON Lines with ctxs.")
    ] = None,
    export_passages: Annotated[
        Path | None,
        typer.Option("--export-passages", help="Also write every distinct page as 100-word DPR passages (TSV)."),
    ] = None,
) -> None:
    """Crawl each question's Wikipedia article and web-search results: polite, safe, resumable."""
    from odqa.config import load_config
    from odqa.crawl import CrawlConfig, export_jsonl, is_crawl_dir, read_summary, run_crawl
    from odqa.crawl import export_passages as write_passages

    settings = load_config(
        CrawlConfig,
        config,
        search=search,
        top=top,
        concurrency=concurrency,
        per_host=per_host,
        delay=delay,
        search_endpoint=search_endpoint,
        wikipedia=wikipedia,
        wikipedia_endpoint=wikipedia_endpoint,
        wikipedia_api=wikipedia_api,
        allow_private=allow_private or None,
        retry_failed=retry_failed or None,
        contact=contact,
        dump=None if dump is None else str(dump),
        html_dir=None if html_dir is None else str(html_dir),
        also_wikipedia=also_wikipedia or None,
    )
    try:
        summary = run_crawl(questions, out, settings, console=console)
    except KeyboardInterrupt:  # Ctrl-C: what is stored stays stored; say so, and how to go on
        if is_crawl_dir(out):
            console.print(_summary_table(out, read_summary(out)))
        console.print("interrupted: rerun the same command to continue where it stopped")
        raise typer.Exit(130) from None
    console.print(_summary_table(out, summary))
    if export is not None:
        written = export_jsonl(out, export)
        console.print(f"exported {written} questions to {export}")
    if export_passages is not None:
        written = write_passages(out, export_passages)
        console.print(f"exported {written} passages to {export_passages}")


def _summary_table(out: Path, summary: Summary) -> Table:
    """The end-of-run counts: pages fetched and extracted, failures by reason, work left."""
    table = Table(title="odqa crawl", show_header=False)
    table.add_row("run folder", str(out))
    table.add_row("questions", str(summary.questions))
    table.add_row("pages", str(summary.pages))
    table.add_row("fetched", str(summary.fetched))
    table.add_row("extracted", str(summary.extracted))
    for reason, count in sorted(summary.failed.items()):
        table.add_row(f"failed: {reason}", str(count))
    for what, count in sorted(summary.lookups_failed.items()):
        table.add_row(f"lookup failed: {what}", str(count))
    if summary.pending:
        table.add_row("not yet fetched", f"{summary.pending} (rerun to continue)")
    return table
