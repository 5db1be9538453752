"""The passage store of an index: text kept apart from vectors, read back one passage at a time.

Each shard's passages are a JSON Lines file plus a ``.npy`` array of line offsets; both are memory-mapped on
read, so a search returns its hits without loading the corpus.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import mmap
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from odqa.index.manifest import FileEntry, Shard, file_entry
from odqa.io import atomic_write
from odqa.records import Passage

__all__ = ["PassageStore", "passage_lines", "shard_digest", "shard_name", "write_passages"]

_OPEN_SHARDS = 64  # shards kept mapped at once: bounds open files for corpora of hundreds of shards


def shard_name(index: int, role: str, suffix: str) -> str:
    """The file of one shard role, relative to the index folder: ``shards/00003.passages.jsonl``."""
    return f"shards/{index:05d}.{role}.{suffix}"


def passage_lines(passages: Sequence[Passage]) -> list[bytes]:
    """The stored form of each passage: one canonical JSON line (equal passages give equal bytes)."""
    return [(json.dumps({"id": p.id, "doc_id": p.doc_id, "title": p.title, "text": p.text}, ensure_ascii=False)
             + "\n").encode() for p in passages]


def shard_digest(lines: Sequence[bytes]) -> str:
    """SHA-256 of a shard's stored passages: it tells a resumed build whether its input is unchanged."""
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line)
    return digest.hexdigest()


def write_passages(folder: Path, index: int, lines: Sequence[bytes]) -> dict[str, FileEntry]:
    """Write one shard's passage text and offsets (each atomically); returns their file entries."""
    text_name, offsets_name = shard_name(index, "passages", "jsonl"), shard_name(index, "offsets", "npy")
    with atomic_write(folder / text_name, "wb") as fh:
        fh.writelines(lines)
    offsets = np.zeros(len(lines) + 1, dtype=np.int64)
    np.cumsum([len(line) for line in lines], out=offsets[1:])
    with atomic_write(folder / offsets_name, "wb") as fh:
        np.save(fh, offsets)
    return {"passages": file_entry(folder, text_name), "offsets": file_entry(folder, offsets_name)}


class _ShardText:
    """One shard's memory-mapped text and offsets."""

    def __init__(self, folder: Path, shard: Shard) -> None:
        self.offsets = np.load(folder / shard.files["offsets"].name, mmap_mode="r")
        with (folder / shard.files["passages"].name).open("rb") as fh:
            self.text = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if shard.count else b""

    def get(self, local: int) -> Passage:
        start, end = int(self.offsets[local]), int(self.offsets[local + 1])
        obj = json.loads(self.text[start:end])
        return Passage(id=obj["id"], doc_id=obj["doc_id"], title=obj["title"], text=obj["text"])

    def close(self) -> None:
        if isinstance(self.text, mmap.mmap):
            self.text.close()


class PassageStore:
    """Passages of an index by row number (the row of their vector), read lazily from the shard files."""

    def __init__(self, folder: str | Path, shards: Sequence[Shard]) -> None:
        self.folder = Path(folder)
        self.shards = list(shards)
        self.starts = [0]
        for shard in self.shards:
            self.starts.append(self.starts[-1] + shard.count)
        self._open: dict[int, _ShardText] = {}

    def __len__(self) -> int:
        return self.starts[-1]

    def _shard(self, number: int) -> _ShardText:
        text = self._open.pop(number, None)
        if text is None:
            text = _ShardText(self.folder, self.shards[number])
            if len(self._open) >= _OPEN_SHARDS:  # evict the least recently used (each holds two file mappings)
                self._open.pop(next(iter(self._open))).close()
        self._open[number] = text  # most recently used last
        return text

    def __getitem__(self, row: int) -> Passage:
        if not 0 <= row < len(self):
            raise IndexError(f"passage row {row} out of range 0..{len(self) - 1}")
        number = bisect.bisect_right(self.starts, row) - 1
        return self._shard(number).get(row - self.starts[number])

    def shard_passages(self, number: int) -> Iterator[Passage]:
        """The passages of one shard, in order."""
        text = self._shard(number)
        for local in range(self.shards[number].count):
            yield text.get(local)

    def __iter__(self) -> Iterator[Passage]:
        for number in range(len(self.shards)):
            yield from self.shard_passages(number)
            done = self._open.pop(number, None)
            if done is not None:
                done.close()

    def close(self) -> None:
        for text in self._open.values():
            text.close()
        self._open.clear()
