"""``odqa cache info`` and ``odqa cache clear``: the persistent embedding cache and the converted models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded

if TYPE_CHECKING:
    from odqa.embed.folders import CacheSummary

__all__ = ["cache_app"]

cache_app = typer.Typer(help="The persistent embedding cache and converted models: size, contents, clearing.",
                        no_args_is_help=True)
app.add_typer(cache_app, name="cache")

CacheDirOpt = Annotated[Path | None, typer.Option(
    help="Vector cache folder (default $ODQA_CACHE_DIR, else $XDG_CACHE_HOME/odqa/embeddings, else ~/.cache/...).")]
ConvertedDirOpt = Annotated[Path | None, typer.Option(
    help="Converted models folder (default $ODQA_CONVERTED_DIR, else $XDG_CACHE_HOME/odqa/converted, else "
         "~/.cache/...).")]


@cache_app.command("info")
@guarded
def info_command(cache_dir: CacheDirOpt = None, converted_dir: ConvertedDirOpt = None) -> None:
    """Where the cache is, its size against its limit, how many vectors each model setting holds, and the
    converted models."""
    from rich.table import Table

    from odqa.embed.folders import cache_summary

    summary = cache_summary(cache_dir, converted_dir)
    info = summary.vectors
    if info is None:
        console.print(f"no embedding cache at {summary.cache_file} (no vectors)", highlight=False)
        _print_models(summary)
        return
    table = Table(title=f"embedding cache {info.path}")
    table.add_column("model setting")
    table.add_column("vectors", justify="right")
    held = {fingerprint: entry for fingerprint, entry in info.models.items() if entry[1]}  # all evicted: not shown
    for fingerprint, (identity, count) in sorted(held.items(), key=lambda kv: -kv[1][1]):
        settings = json.loads(identity)
        run = ", ".join([settings.get("precision", "?")] + ([settings["backend"]] if "backend" in settings else []))
        label = f"{settings.get('model', '?')} ({run}, {fingerprint})"
        table.add_row(label, f"{count:,}")
    table.add_row("all", f"{info.vectors:,}")
    console.print(table)
    console.print(f"size {info.bytes_used / 2**20:,.1f} MiB of a {info.limit_bytes / 2**30:g} GiB limit "
                  "(least recently used vectors are evicted past it; set it with --cache-limit-gb)", highlight=False)
    _print_models(summary)


def _print_models(summary: CacheSummary) -> None:
    if summary.converted_models:
        console.print(f"converted models {summary.converted_bytes / 2**20:,.1f} MiB in {summary.converted_dir} "
                      f"({summary.converted_models} OpenVINO model(s), one per model and length limit; outside the "
                      "limit; odqa cache clear removes them)", highlight=False)


@cache_app.command("clear")
@guarded
def clear_command(cache_dir: CacheDirOpt = None, converted_dir: ConvertedDirOpt = None) -> None:
    """Delete every cached vector and converted model (they are recomputed on demand)."""
    from odqa.embed.folders import clear_cache

    before = clear_cache(cache_dir, converted_dir)
    cleared = (f" and the converted models ({before.converted_bytes / 2**20:,.1f} MiB in {before.converted_dir})"
               if before.converted_models else "")
    if before.vectors is None:
        console.print(f"no embedding cache at {before.cache_file}: no vectors to clear{cleared}", highlight=False)
        return
    console.print(f"cleared {before.vectors.vectors:,} vectors ({before.vectors.bytes_used / 2**20:,.1f} MiB) from "
                  f"{before.vectors.path}" + cleared, highlight=False)
