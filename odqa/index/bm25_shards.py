"""BM25 built shard by shard: term counts on disk, then the memory-mapped bm25s index assembled from them.

While an index build writes its passages, each shard is tokenised once (``title + " " + text`` through
:func:`odqa.retrieve.tokenize.tokenize`) into integer ids of its own sorted vocabulary, and keeps three files:
its passages' token counts, its (term, passage, count) triples sorted by term then passage, and its terms, one a
line. Nothing is carried from shard to shard, so a resumed build needs nothing from the shards already written.
Once every shard is written, :func:`assemble_bm25` merges the shards' sorted terms into the global vocabulary
(streamed to disk) and writes the CSC score matrix that ``bm25s.BM25.load(..., mmap=True)`` reads, one block of
terms at a time gathered from every shard. Memory holds one shard, or at assembly a block, four bytes per
passage and per (shard, term), and 20 bytes per term: never the corpus' tokens, nor the vocabulary's strings.
Scores are computed with bm25s' own formulas and float32 / float64 steps, so a search gives exactly what an
in-memory bm25s build of the same corpus gives.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import shutil
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from odqa._optional import require
from odqa.errors import IndexMismatchError, InputError
from odqa.index.manifest import FileEntry, Shard, file_entry
from odqa.index.sparse import BM25_DIR, K1, B, bm25_text
from odqa.index.store import shard_name
from odqa.io import atomic_write
from odqa.records import Passage
from odqa.retrieve.tokenize import tokenize

__all__ = ["BLOCK", "TermShards", "assemble_bm25"]

ROLES = {"bm25_lengths": "npy", "bm25_pairs": "npy", "bm25_terms": "txt"}
BLOCK = 1 << 21  # (term, passage) scores assembled at a time: about 60 MB of working memory


class TermShards:
    """Writes each shard's term counts, over the shard's own sorted vocabulary (no state kept between shards)."""

    def __init__(self, folder: Path, shards: Sequence[Shard]) -> None:
        self.folder = folder
        for shard in shards:  # the finished shards of an interrupted build
            if not ROLES.keys() <= shard.files.keys():
                raise IndexMismatchError(
                    f"{folder} holds an interrupted BM25 build by an older odqa (shard {shard.index} has no term "
                    "counts); pass --overwrite to start again")

    def write(self, number: int, passages: Sequence[Passage]) -> dict[str, FileEntry]:
        """Tokenise one shard and write its three files (each atomically); returns their entries by role."""
        first_use: defaultdict[str, int] = defaultdict(itertools.count().__next__)  # a new term: the next id
        ids, lengths = array("q"), array("i")
        for passage in passages:
            tokens = tokenize(bm25_text(passage))
            lengths.append(len(tokens))
            ids.extend(map(first_use.__getitem__, tokens))
        terms = sorted(first_use)  # code point order: every shard's list merges into the global one
        rank = np.empty(len(terms), dtype=np.int64)
        rank[np.fromiter((first_use[t] for t in terms), dtype=np.int64, count=len(terms))] = np.arange(len(terms))
        rows = np.repeat(np.arange(len(passages), dtype=np.int64), np.frombuffer(lengths, dtype=np.int32))
        keys, counts = np.unique(rank[np.frombuffer(ids, dtype=np.int64)] * len(passages) + rows, return_counts=True)
        pairs = np.empty(len(keys), dtype=[("term", "<i4"), ("row", np.min_scalar_type(max(len(passages) - 1, 0))),
                                           ("count", np.min_scalar_type(int(counts.max(initial=0))))])
        pairs["term"], pairs["row"], pairs["count"] = keys // len(passages), keys % len(passages), counts
        names = {role: shard_name(number, role.replace("_", "-"), suffix) for role, suffix in ROLES.items()}
        with atomic_write(self.folder / names["bm25_lengths"], "wb") as fh:
            np.save(fh, np.frombuffer(lengths, dtype=np.int32))
        with atomic_write(self.folder / names["bm25_pairs"], "wb") as fh:
            np.save(fh, pairs)
        with atomic_write(self.folder / names["bm25_terms"]) as fh:
            fh.writelines(term + "\n" for term in terms)  # tokens hold no whitespace
        return {role: file_entry(self.folder, name) for role, name in names.items()}


def _pairs(folder: Path, shard: Shard) -> np.ndarray:
    pairs: np.ndarray = np.load(folder / shard.files["bm25_pairs"].name, mmap_mode="r")
    return pairs


def _tagged(lines: IO[str], number: int) -> Iterator[tuple[str, int]]:
    for line in lines:
        yield line[:-1], number


def _merge_vocab(path: Path, folder: Path, shards: Sequence[Shard]) -> tuple[int, list[np.ndarray]]:
    """Merge the shards' sorted term lists into the global vocabulary, streamed to ``path`` as bm25s saves it
    (``{term: id}``, its empty token last); returns its size and each shard's local-to-global term ids."""
    files = [(folder / s.files["bm25_terms"].name).open(encoding="utf-8", newline="\n") for s in shards]
    local = [array("i") for _ in shards]
    count, last = 0, None
    try:
        streams = [_tagged(fh, number) for number, fh in enumerate(files)]
        with path.open("w", encoding="utf-8") as out:
            out.write("{")
            for term, number in heapq.merge(*streams):
                if term != last:
                    out.write(f"{', ' if count else ''}{json.dumps(term, ensure_ascii=False)}: {count}")
                    last, count = term, count + 1
                local[number].append(count - 1)
            out.write(f"{', ' if count else ''}\"\": {count}}}")  # bm25s' token for queries with no known term
            _sync(out)
    finally:
        for fh in files:
            fh.close()
    return count, [np.frombuffer(ids, dtype=np.int32) for ids in local]


def _sync(fh: IO[Any]) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _npy_header(fh: IO[bytes], dtype: np.dtype[Any], length: int) -> None:
    """The header ``np.save`` writes for a 1-D array, so the data can follow in blocks."""
    np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                                              "shape": (length,)})


def _idf(df: np.ndarray, count: int) -> np.ndarray:
    """Lucene's idf of each term, by ``math.log`` in float64 and stored float32, as bm25s computes it."""
    idf = np.empty(len(df), dtype=np.float32)
    for start in range(0, len(df), 1 << 16):  # a slice at a time: a Python float per term would grow with N
        idf[start:start + (1 << 16)] = [math.log(1 + (count - n + 0.5) / (n + 0.5))
                                        for n in df[start:start + (1 << 16)].tolist()]
    return idf


def _blocks(indptr: np.ndarray) -> Iterator[tuple[int, int]]:
    """Ranges of terms whose (term, passage) pairs number about :data:`BLOCK` (one frequent term may exceed it)."""
    start, terms = 0, len(indptr) - 1
    while start < terms:
        end = int(np.searchsorted(indptr, indptr[start] + BLOCK, side="right")) - 1
        end = min(max(end, start + 1), terms)
        yield start, end
        start = end


def assemble_bm25(folder: Path, shards: Sequence[Shard]) -> dict[str, FileEntry]:
    """Write ``folder/bm25`` (replaced atomically) from the shards' term counts; returns its file entries."""
    bm25s = require("bm25s", "index")
    lengths = np.concatenate([np.load(folder / s.files["bm25_lengths"].name) for s in shards])
    if not lengths.any():
        raise InputError(f"the {len(lengths):,} passages hold no BM25 terms (only stop-words, punctuation or empty "
                         "texts): nothing to index; check the input's text field")
    starts = np.cumsum([0] + [s.count for s in shards])
    staging = folder / f".{BM25_DIR}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    terms, global_ids = _merge_vocab(staging / "vocab.index.json", folder, shards)
    df = np.zeros(terms, dtype=np.int64)
    for shard, ids in zip(shards, global_ids, strict=True):
        df += np.bincount(ids[_pairs(folder, shard)["term"]], minlength=terms)
    indptr = np.zeros(terms + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    idf = _idf(df, len(lengths))
    average = np.float64(lengths.sum(dtype=np.int64)) / len(lengths)  # what bm25s' np.mean gives
    with (staging / "data.csc.index.npy").open("wb") as data, (staging / "indices.csc.index.npy").open("wb") as rows:
        _npy_header(data, np.dtype(np.float32), int(indptr[-1]))
        _npy_header(rows, np.dtype(np.int32), int(indptr[-1]))
        for first, end in _blocks(indptr):
            block_terms, block_rows, block_counts = [], [], []
            for shard, start, ids in zip(shards, starts, global_ids, strict=False):
                pairs = _pairs(folder, shard)
                lo, hi = np.searchsorted(pairs["term"], np.searchsorted(ids, [first, end]))
                block_terms.append(ids[pairs["term"][lo:hi]])
                block_rows.append(pairs["row"][lo:hi].astype(np.int64) + start)
                block_counts.append(np.array(pairs["count"][lo:hi]))
                del pairs  # unmapped: the shard's pages leave this process
            order = np.argsort(np.concatenate(block_terms), kind="stable")  # by term, then passage
            term_ids = np.concatenate(block_terms)[order]
            passage = np.concatenate(block_rows)[order]
            tf = np.concatenate(block_counts)[order].astype(np.float32)
            # bm25s' Lucene term-frequency part and idf product, step for step (float64, stored float32)
            tfc = tf / (K1 * ((1 - B) + B * lengths[passage] / average) + tf)
            data.write((idf[term_ids] * tfc).astype(np.float32).tobytes())
            rows.write(passage.astype(np.int32).tobytes())
        _sync(data)
        _sync(rows)
    with (staging / "indptr.csc.index.npy").open("wb") as fh:
        np.save(fh, indptr)
        _sync(fh)
    params = {"k1": K1, "b": B, "delta": 0.5, "method": "lucene", "idf_method": "lucene", "dtype": "float32",
              "int_dtype": "int32", "num_docs": len(lengths), "version": bm25s.__version__, "backend": "numpy"}
    with (staging / "params.index.json").open("w") as fh:
        json.dump(params, fh, indent=4)
        _sync(fh)
    shutil.rmtree(folder / BM25_DIR, ignore_errors=True)
    os.replace(staging, folder / BM25_DIR)
    names = sorted(p.name for p in (folder / BM25_DIR).iterdir())
    return {name: file_entry(folder, f"{BM25_DIR}/{name}") for name in names}
