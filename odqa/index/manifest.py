"""The manifest that makes an index folder self-describing, and the checks run on it before any use.

``manifest.json`` records what the index is (kind, model settings, dimension, FAISS factory, BM25 parameters),
which passage shards are finished (with each file's size and digest), and, once the build is complete, the
passage count and corpus digest. A shard is listed only after all its files are on disk, so a listed shard is a
finished one; ``check_files`` catches files removed or truncated since.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from odqa.errors import IndexFormatError
from odqa.io import atomic_write, read_json

__all__ = [
    "FORMAT", "MANIFEST", "FileEntry", "Manifest", "Shard", "check_files", "file_entry", "open_manifest",
    "read_manifest", "write_manifest",
]

MANIFEST = "manifest.json"
FORMAT = 1  # bumped whenever this odqa could not read what a newer one writes


@dataclass(frozen=True)
class FileEntry:
    """A file of the index, relative to its folder, with the size and SHA-256 it had when written."""

    name: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class Shard:
    """One finished shard: ``count`` passages, the digest of their content, and its files by role."""

    index: int
    count: int
    digest: str
    files: dict[str, FileEntry]


@dataclass
class Manifest:
    """What an index folder holds; ``settings`` fixes how it was built (a resumed build must match them)."""

    kind: str
    settings: dict[str, Any]
    shard_size: int
    shards: list[Shard] = field(default_factory=list)
    complete: bool = False
    count: int | None = None
    corpus_digest: str | None = None
    index_files: dict[str, FileEntry] = field(default_factory=dict)
    format: int = FORMAT
    odqa_version: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def file_entry(folder: Path, name: str) -> FileEntry:
    """Size and SHA-256 of ``folder / name``, read in blocks (files can be large)."""
    digest = hashlib.sha256()
    path = folder / name
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return FileEntry(name=name, bytes=path.stat().st_size, sha256=digest.hexdigest())


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Atomically replace the manifest (sorted keys, no timestamps: equal builds give equal bytes)."""
    from odqa._version import __version__

    manifest.odqa_version = __version__
    with atomic_write(folder / MANIFEST) as fh:
        json.dump(manifest.to_json(), fh, indent=1, sort_keys=True, ensure_ascii=False)
        fh.write("\n")


def _entries(raw: Mapping[str, Any]) -> dict[str, FileEntry]:
    return {role: FileEntry(**entry) for role, entry in raw.items()}


def read_manifest(folder: str | Path) -> Manifest:
    """The manifest of ``folder``; a missing, unreadable or too-new manifest is an :class:`IndexFormatError`."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.is_file():
        what = "is not a folder" if not folder.is_dir() else f"has no {MANIFEST}"
        raise IndexFormatError(f"{folder} {what}, so it is not an odqa index; build one with "
                               f"`odqa index build PASSAGES --out {folder}`")
    raw = read_json(path, "expected an odqa index manifest")
    if not isinstance(raw, dict):
        raise IndexFormatError(f"{path}: expected a JSON object; rebuild the index")
    version = raw.get("format")
    if isinstance(version, int) and version > FORMAT:
        raise IndexFormatError(
            f"{folder} was written by odqa {raw.get('odqa_version', '?')} (index format {version}); this odqa reads "
            f"index format {FORMAT} at most: upgrade odqa (pip install -U odqa) or rebuild the index with this one")
    try:
        shards = [Shard(index=s["index"], count=s["count"], digest=s["digest"], files=_entries(s["files"]))
                  for s in raw["shards"]]
        return Manifest(kind=raw["kind"], settings=raw["settings"], shard_size=raw["shard_size"], shards=shards,
                        complete=raw["complete"], count=raw["count"], corpus_digest=raw["corpus_digest"],
                        index_files=_entries(raw["index_files"]), format=raw["format"],
                        odqa_version=raw["odqa_version"])
    except (KeyError, TypeError) as exc:
        raise IndexFormatError(f"{path}: not an odqa index manifest (missing or bad {exc}); rebuild the index"
                               ) from exc


def check_files(folder: Path, entries: Mapping[str, FileEntry], what: str) -> str | None:
    """Why the files of ``what`` cannot be used (missing, or not the size recorded), or ``None`` when they can."""
    for entry in entries.values():
        path = folder / entry.name
        if not path.is_file():
            return f"{what}: {entry.name} is missing"
        size = path.stat().st_size
        if size != entry.bytes:
            return f"{what}: {entry.name} is truncated or damaged ({size:,} bytes, {entry.bytes:,} recorded)"
    return None


def open_manifest(folder: str | Path, kind: str | None = None) -> Manifest:
    """The manifest of a finished, intact index (of ``kind`` when given); anything else is a typed error."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    if kind is not None and manifest.kind != kind:
        raise IndexFormatError(f"{folder} is a {manifest.kind} index, not a {kind} one")
    if not manifest.complete:
        raise IndexFormatError(
            f"{folder} holds an unfinished build ({len(manifest.shards)} shard(s) written); finish it by running the "
            f"same `odqa index build ... --out {folder}` again (it resumes)")
    rebuild = f"rebuild it with `odqa index build ... --out {folder} --overwrite`"
    for shard in manifest.shards:
        problem = check_files(folder, shard.files, f"shard {shard.index}")
        if problem is not None:
            raise IndexFormatError(f"{folder}: {problem}; {rebuild}")
    problem = check_files(folder, manifest.index_files, manifest.kind + " index")
    if problem is not None:
        raise IndexFormatError(f"{folder}: {problem}; {rebuild}")
    if sum(shard.count for shard in manifest.shards) != manifest.count:
        raise IndexFormatError(f"{folder}: the shards hold {sum(s.count for s in manifest.shards):,} passages but the "
                               f"manifest records {manifest.count:,}; {rebuild}")
    return manifest
