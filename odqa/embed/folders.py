"""Where odqa keeps what it computes once per model, and the one module that knows those folders' layout: passage
vectors (the embedding cache, :mod:`odqa.embed.cache`) and converted models (:mod:`odqa.embed.openvino`), each in
a folder of its own. ``odqa cache info`` / ``clear`` and the benchmarks go through these functions.

Converted models live apart from the vectors so that every run reads them back, with or without a vector cache
(``--no-cache``, an index build, a dense index's query encoder, Ray actors): converting costs a torch import and
seconds per run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odqa.embed.cache import CACHE_FILE, CacheInfo, EmbeddingCache

__all__ = ["CacheSummary", "cache_summary", "clear_cache", "converted_folder", "default_cache_dir",
           "default_converted_dir"]


def _user_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "odqa"


def default_cache_dir() -> Path:
    """Passage vectors: ``$ODQA_CACHE_DIR``, else ``$XDG_CACHE_HOME/odqa/embeddings``, else
    ``~/.cache/odqa/embeddings``."""
    explicit = os.environ.get("ODQA_CACHE_DIR")
    return Path(explicit) if explicit else _user_cache() / "embeddings"


def default_converted_dir() -> Path:
    """Converted models: ``$ODQA_CONVERTED_DIR``, else ``$XDG_CACHE_HOME/odqa/converted``, else
    ``~/.cache/odqa/converted``."""
    explicit = os.environ.get("ODQA_CONVERTED_DIR")
    return Path(explicit) if explicit else _user_cache() / "converted"


def converted_folder(root: Path, key: Mapping[str, Any]) -> Path:
    """The folder under ``root`` holding the model converted under ``key`` (what its graph depends on)."""
    return root / hashlib.sha256(json.dumps(dict(key), sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class CacheSummary:
    """What the cache folders hold: the vector file (None where there is none) and the converted models."""

    cache_file: Path
    vectors: CacheInfo | None
    converted_dir: Path
    converted_models: int
    converted_bytes: int


def _folders(cache_dir: Path | None, converted_dir: Path | None) -> tuple[Path, Path]:
    return (cache_dir if cache_dir is not None else default_cache_dir(),
            converted_dir if converted_dir is not None else default_converted_dir())


def cache_summary(cache_dir: Path | None = None, converted_dir: Path | None = None) -> CacheSummary:
    """Size and contents of the vector cache and the converted models (default folders where None)."""
    cache_dir, converted_dir = _folders(cache_dir, converted_dir)
    vectors = None
    if (cache_dir / CACHE_FILE).is_file():
        with EmbeddingCache(cache_dir, "") as cache:
            vectors = cache.info()
    models = ([p for p in converted_dir.iterdir() if p.is_dir() and not p.name.startswith(".")]  # not staging
              if converted_dir.is_dir() else [])
    size = sum(f.stat().st_size for m in models for f in m.rglob("*") if f.is_file())
    return CacheSummary(cache_dir / CACHE_FILE, vectors, converted_dir, len(models), size)


def clear_cache(cache_dir: Path | None = None, converted_dir: Path | None = None) -> CacheSummary:
    """Delete every cached vector and converted model (both are recomputed on demand); returns what there was."""
    before = cache_summary(cache_dir, converted_dir)
    shutil.rmtree(before.converted_dir, ignore_errors=True)
    if before.vectors is not None:
        with EmbeddingCache(before.cache_file.parent, "") as cache:
            cache.clear()
    return before
