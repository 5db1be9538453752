"""``odqa cache info`` and ``odqa cache clear``: the persistent embedding cache, its size and its contents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from odqa.cli._app import app, console, guarded

__all__ = ["cache_app"]

cache_app = typer.Typer(help="The persistent embedding cache: size, contents, clearing.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

CacheDirOpt = Annotated[Path | None, typer.Option(
    help="Cache folder (default $ODQA_CACHE_DIR, else $XDG_CACHE_HOME/odqa/embeddings, else ~/.cache/...).")]


@cache_app.command("info")
@guarded
def info_command(cache_dir: CacheDirOpt = None) -> None:
    """Where the cache is, its size against its limit, and how many vectors each model setting holds."""
    from rich.table import Table

    from odqa.embed.cache import CACHE_FILE, EmbeddingCache, default_cache_dir

    folder = cache_dir if cache_dir is not None else default_cache_dir()
    models = _converted_models(folder)
    if not (folder / CACHE_FILE).is_file():
        console.print(f"no embedding cache at {folder / CACHE_FILE} (no vectors)", highlight=False)
        _print_models(models)
        return
    with EmbeddingCache(folder, "") as cache:
        info = cache.info()
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
    _print_models(models)


def _print_models(models: Path) -> None:
    if models.is_dir():
        console.print(f"converted models {_size(models) / 2**20:,.1f} MiB in {models} (OpenVINO, one per model "
                      "setting; outside the limit; odqa cache clear removes them)", highlight=False)


def _converted_models(folder: Path) -> Path:
    from odqa.embed.openvino import MODELS_DIR

    return folder / MODELS_DIR


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


@cache_app.command("clear")
@guarded
def clear_command(cache_dir: CacheDirOpt = None) -> None:
    """Delete every cached vector and converted model (they are recomputed on demand)."""
    import shutil

    from odqa.embed.cache import CACHE_FILE, EmbeddingCache, default_cache_dir

    folder = cache_dir if cache_dir is not None else default_cache_dir()
    models = _converted_models(folder)
    converted = _size(models) if models.is_dir() else 0
    shutil.rmtree(models, ignore_errors=True)
    cleared = f" and the converted models ({converted / 2**20:,.1f} MiB in {models})" if converted else ""
    if not (folder / CACHE_FILE).is_file():
        console.print(f"no embedding cache at {folder / CACHE_FILE}: no vectors to clear{cleared}", highlight=False)
        return
    with EmbeddingCache(folder, "") as cache:
        before = cache.info()
        cache.clear()
    console.print(f"cleared {before.vectors:,} vectors ({before.bytes_used / 2**20:,.1f} MiB) from {before.path}"
                  + cleared, highlight=False)
