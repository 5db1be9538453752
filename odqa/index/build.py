"""Build an index folder from a passage stream, shard by shard, resuming an interrupted build.

Passages are read ``shard_size`` at a time; each shard's text (and, for a dense index, its vectors) is written
atomically and only then listed in the manifest, so the manifest never lists an unfinished shard. A rerun with
the same input and settings checks each listed shard's digest against the input, skips it, and carries on from
the first unlisted one; once every shard is on disk the FAISS or BM25 index is built from the shards and the
manifest marked complete. The result is byte-identical to an uninterrupted build.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import shutil
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa.errors import ConfigError, IndexMismatchError, InputError, OutputError
from odqa.index.config import IndexConfig
from odqa.index.ids import IdCheck
from odqa.index.manifest import MANIFEST, Manifest, Shard, check_files, read_manifest, write_manifest
from odqa.index.store import PassageStore, passage_lines, shard_digest, write_passages
from odqa.index.vectors import VectorSource
from odqa.records import Passage

if TYPE_CHECKING:
    from odqa.embed import Encoder
    from odqa.index.resources import BuildPlan
    from odqa.ray import RayConfig

__all__ = ["CorpusSize", "build_index", "corpus_size", "index_settings", "open_encoder"]

Progress = Callable[[int], None]


def open_encoder(config: IndexConfig, ray: RayConfig | None = None) -> Encoder:
    """The encoder a dense build uses: the configured model, without the embedding cache unless one is named
    (an index's shards are its own cache); with ``ray``, one that encodes on that Ray cluster (same bytes)."""
    from odqa.ray import engine_encoder

    return engine_encoder(config.embed if config.embed.cache_dir else replace(config.embed, cache_dir=""), ray)


def index_settings(config: IndexConfig, encoder: Encoder | None, vectors: VectorSource | None = None
                   ) -> dict[str, Any]:
    """What fixes an index's content: a resumed build must match them, a search is checked against them."""
    if config.kind == "bm25":
        if vectors is not None:
            raise ConfigError("--vectors are for a dense index; drop them, or pass --kind dense")
        from odqa.index.sparse import bm25_settings

        return bm25_settings()
    if vectors is not None:
        if encoder is not None:
            raise ConfigError("a dense index gets its vectors from an encoder or from --vectors, not both")
        from odqa.index.dense import imported_settings

        return imported_settings(config, vectors.dimension)
    if encoder is None:
        raise ConfigError("a dense index needs an encoder: build_index(passages, out, config, "
                          "encoder=open_encoder(config)), or vectors computed elsewhere (vectors=PATH)")
    from odqa.index.dense import dense_settings

    return dense_settings(config, encoder)


@dataclass(frozen=True)
class CorpusSize:
    """How many passages an input holds and the bytes their stored text takes (what a build plans from)."""

    count: int
    text_bytes: int


def corpus_size(passages: Iterable[Passage]) -> CorpusSize:
    """Count ``passages`` (one pass, memory of one passage at a time)."""
    count = text_bytes = 0
    for passage in passages:
        count += 1
        text_bytes += len(passage_lines([passage])[0]) + 8  # + its offset
    return CorpusSize(count, text_bytes)


# What a build writes besides the files its manifest lists: temporary files of atomic writes (and staging folders)
# left by a kill mid-write, shard and index files written but not yet listed, and the CLI's resolved config.
_STAGING = (".*.tmp", "shards/.*.tmp", "shards/[0-9][0-9][0-9][0-9][0-9].*", "faiss.index", "faiss.ivfdata", "bm25",
            "build.config.json")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def _own_files(out: Path) -> list[Path]:
    """Every file of the odqa index in ``out`` (listed in its manifest, or a staging name), nothing else.

    Anything but a valid odqa manifest (another program's ``manifest.json``), or a manifest naming a file outside
    ``out``, is an :class:`OutputError`: nothing is removed then.
    """
    try:
        manifest = read_manifest(out)
    except InputError as exc:  # IndexFormatError, or FormatError for a file that is not JSON
        raise OutputError(f"{out}: its {MANIFEST} is not an odqa index manifest ({exc}); --overwrite replaces only "
                          "an odqa index; choose another --out folder") from exc
    root = out.resolve()
    listed = [entry.name for shard in manifest.shards for entry in shard.files.values()]
    listed += [entry.name for entry in manifest.index_files.values()]
    paths = []
    for name in listed:
        path = out / name
        if not path.resolve().is_relative_to(root) or path.resolve() == root:
            raise OutputError(f"{out}: its {MANIFEST} names a file outside the folder ({name!r}); not removing "
                              "anything: delete the folder yourself or choose another --out folder")
        paths.append(path)
    return [*paths, *(p for pattern in _STAGING for p in out.glob(pattern))]


def _clear(out: Path) -> None:
    """Remove the odqa index in ``out``: its own files, its emptied subfolders, then its manifest (last, so a
    kill midway leaves a folder that is still recognised as an index)."""
    own = _own_files(out)
    for path in own:
        _remove(path)
    for folder in sorted({p.parent for p in own if p.parent != out}, key=lambda p: -len(p.parts)):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    (out / MANIFEST).unlink()


def _resume(out: Path, config: IndexConfig, settings: dict[str, Any], overwrite: bool) -> Manifest:
    """The manifest to continue from: a fresh one, or the interrupted build's minus any damaged shard."""
    fresh = Manifest(kind=config.kind, settings=settings, shard_size=config.shard_size)
    if overwrite and (out / MANIFEST).is_file():
        _clear(out)
        write_manifest(out, fresh)  # the user's own files, if any, stay beside the new index
        return fresh
    if not (out / MANIFEST).is_file():
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise OutputError(f"{out} exists and is not an odqa index; choose an empty or new --out folder")
        write_manifest(out, fresh)  # from now on a rerun resumes, even if killed before the first shard
        return fresh
    manifest = read_manifest(out)
    for pattern in _STAGING[:2]:  # left by a build killed mid-write
        for stray in out.glob(pattern):
            _remove(stray)
    if manifest.complete:
        raise OutputError(f"{out} already holds a complete index; pass --overwrite to rebuild it, or choose "
                          "another --out folder")
    before = {"kind": manifest.kind, "shard_size": manifest.shard_size, **manifest.settings}
    now = {"kind": config.kind, "shard_size": config.shard_size, **settings}
    changed = sorted(key for key in before.keys() | now.keys() if before.get(key) != now.get(key))
    if changed:
        diffs = ", ".join(f"{key} {before.get(key)!r} -> {now.get(key)!r}" for key in changed)
        raise IndexMismatchError(f"{out} holds an interrupted build with other settings ({diffs}); resume it with "
                                 "its settings, or pass --overwrite to start again")
    for position, shard in enumerate(manifest.shards):
        if check_files(out, shard.files, f"shard {shard.index}") is not None:
            manifest.shards = manifest.shards[:position]  # rebuilt from here on
            break
    return manifest


def _listed_bytes(out: Path, overwrite: bool) -> int:
    """Bytes already written by an interrupted build in ``out`` that a rerun keeps."""
    if overwrite or not (out / MANIFEST).is_file():
        return 0
    try:
        return sum(entry.bytes for shard in read_manifest(out).shards for entry in shard.files.values())
    except InputError:
        return 0  # _resume says what is wrong with it


def _no_space(exc: OutputError, number: int) -> OutputError:
    """``exc`` with how to go on when the disk filled up (the build resumes from the shard that failed)."""
    cause = exc.__cause__
    if isinstance(cause, OSError) and cause.errno == errno.ENOSPC:
        return OutputError(f"{exc}; free disk space and rerun the same command: the build resumes from shard "
                           f"{number}")
    return exc


def build_index(
    passages: Iterable[Passage],
    out: str | Path,
    config: IndexConfig | None = None,
    *,
    encoder: Encoder | None = None,
    vectors: str | Path | VectorSource | None = None,
    size: CorpusSize | None = None,
    overwrite: bool = False,
    progress: Progress | None = None,
    plan: Callable[[BuildPlan], None] | None = None,
) -> Manifest:
    """Build (or resume building) the index of ``passages`` in folder ``out``; returns its manifest.

    A dense index needs ``encoder`` (see :func:`open_encoder`) or ``vectors`` computed elsewhere: a ``.npy`` file
    or a folder of ``.npy`` shards in passage order (:class:`~odqa.index.vectors.VectorSource`), with
    ``config.embed.model`` the model that computed them (recorded, so queries are encoded by it). Where the
    passage count is known (``passages`` a list, or ``size`` from :func:`corpus_size`), everything is checked
    before anything is written: the vectors (count, dimension, dtype, NaN/inf, unit length), the index's memory
    against this machine's, the disk it needs against the free disk; ``plan`` is told the figures. ``progress`` is
    told how many passages each finished (or skipped) shard held.
    """
    from odqa.index.resources import check_plan, plan_build

    out = Path(out)
    config = config or IndexConfig()
    source = vectors if isinstance(vectors, VectorSource) or vectors is None else VectorSource(vectors)
    settings = index_settings(config, encoder, source)
    dimension = int(settings["dimension"]) if config.kind == "dense" else None
    if dimension is not None:
        from odqa.index.dense import new_index

        new_index(config.faiss, dimension)  # a factory that cannot work fails before any encoding
    if size is None and isinstance(passages, Sized):
        size = corpus_size(passages)
    if size is not None:
        if source is not None:
            source.check(size.count, None, bool(settings["normalize"]))
        build_plan = plan_build(config.kind, size.count, size.text_bytes, config.faiss, dimension, config.train_size)
        check_plan(build_plan, out, _listed_bytes(out, overwrite))
        if plan is not None:
            plan(build_plan)
    manifest = _resume(out, config, settings, overwrite)
    terms = None
    if config.kind == "bm25":
        from odqa.index.bm25_shards import TermShards

        terms = TermShards(out, manifest.shards)  # the vocabulary of the shards already written
    stream = iter(passages)
    number = start = 0
    ids = IdCheck()
    while batch := list(itertools.islice(stream, config.shard_size)):
        written = PassageStore(out, manifest.shards[:number])
        try:
            ids.add([p.id for p in batch], written)
        finally:
            written.close()
        lines = passage_lines(batch)
        digest = shard_digest(lines)
        if number < len(manifest.shards):
            if manifest.shards[number].digest != digest:
                raise IndexMismatchError(
                    f"the passages of shard {number} differ from those of the interrupted build in {out}: the input "
                    "changed since; pass --overwrite to build from scratch")
        else:
            try:
                files = write_passages(out, number, lines)
                if config.kind == "dense":
                    from odqa.index.dense import write_vectors

                    files["vectors"] = write_vectors(out, number, _shard_vectors(batch, start, encoder, source))
                if terms is not None:
                    files.update(terms.write(number, batch))
            except OutputError as exc:
                raise _no_space(exc, number) from exc.__cause__
            manifest.shards.append(Shard(index=number, count=len(batch), digest=digest, files=files))
            write_manifest(out, manifest)
        if progress is not None:
            progress(len(batch))
        number += 1
        start += len(batch)
    if number < len(manifest.shards):
        raise IndexMismatchError(f"the input holds fewer passages than the interrupted build in {out} already "
                                 "indexed: it changed since; pass --overwrite to build from scratch")
    manifest.count = sum(shard.count for shard in manifest.shards)
    if not manifest.count:
        raise InputError("the input holds no passages; expected JSON Lines {id, title, text}, DPR TSV, a question "
                         "file or a crawl folder")
    if source is not None and source.count != manifest.count:
        source.check(manifest.count, None, False)  # raises: the count differs
    manifest.corpus_digest = hashlib.sha256("".join(s.digest for s in manifest.shards).encode()).hexdigest()
    try:
        if config.kind == "dense":
            from odqa.index.dense import build_faiss

            manifest.index_files = build_faiss(out, manifest, config)
        else:
            from odqa.index.bm25_shards import assemble_bm25

            manifest.index_files = assemble_bm25(out, manifest.shards)
    except OutputError as exc:
        raise _no_space(exc, number) from exc.__cause__
    manifest.complete = True
    write_manifest(out, manifest)
    return manifest


def _shard_vectors(batch: list[Passage], start: int, encoder: Encoder | None, source: VectorSource | None
                   ) -> np.ndarray:
    """The vectors of one shard: encoded, or rows ``start:start + len(batch)`` of the imported ones (checked)."""
    if source is None:
        assert encoder is not None  # index_settings refused a dense build with neither
        return encoder.encode_passages(batch)
    if source.count < start + len(batch):
        source.check(start + len(batch), None, False)  # raises: fewer vectors than passages
    rows = source.rows(start, start + len(batch))
    if not np.isfinite(rows).all():
        source.check(source.count, None, False)  # raises, naming the first bad vector
    return rows
