"""BM25 built shard by shard (odqa.index.bm25_shards): the same matrix and the same search results as bm25s' own
in-memory build, memory that does not grow with the corpus' tokens, and resuming after a kill at any point (the
final assembly included) to identical bytes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import bm25s
import numpy as np
import pytest

from odqa.index import bm25_shards
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.manifest import read_manifest
from odqa.index.sparse import K1, B, bm25_text
from odqa.records import Passage
from odqa.retrieve.tokenize import tokenize


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def mixed(corpus: list[Passage]) -> list[Passage]:
    """The TimeQA passages with empty, stop-word-only and Japanese passages among them (bigram tokens)."""
    extra = [Passage("e1", "e", "", ""), Passage("e2", "e", "The", "of the and"),
             Passage("j1", "j", "東京", "東京都は日本の首都である。"),
             Passage("j2", "j", "大阪", "大阪府は日本の府である。")]
    return corpus[:200] + extra[:2] + corpus[200:400] + extra[2:] + corpus[400:]


def in_memory(passages: list[Passage]) -> bm25s.BM25:
    """What odqa built before: bm25s indexing every passage's tokens in memory."""
    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    retriever.index([list(tokenize(bm25_text(p))) for p in passages], show_progress=False)
    return retriever


@pytest.mark.parametrize("block", [500, 1 << 21])
def test_matrix_equals_bm25s_in_memory_build_column_by_column(tmp_path: Path, mixed: list[Passage], block: int,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Every term's column (passages and float32 scores) is bm25s' to the bit, in blocks of 500 pairs or one."""
    monkeypatch.setattr(bm25_shards, "BLOCK", block)
    build_index(mixed, tmp_path / "index", IndexConfig(kind="bm25", shard_size=97))
    ours = bm25s.BM25.load(str(tmp_path / "index" / "bm25"), mmap=True)
    reference = in_memory(mixed)
    assert ours.vocab_dict.keys() == reference.vocab_dict.keys()
    assert ours.scores["num_docs"] == reference.scores["num_docs"] == len(mixed)
    ref, got = reference.scores, ours.scores
    assert got["data"].dtype == ref["data"].dtype and got["indices"].dtype == ref["indices"].dtype
    assert len(got["data"]) == len(ref["data"])
    for term, column in reference.vocab_dict.items():
        if term == "":
            assert ours.vocab_dict[""] == len(got["indptr"]) - 1  # bm25s' empty-query token, past the last column
            continue
        mine = ours.vocab_dict[term]
        a, b = slice(*ref["indptr"][column:column + 2]), slice(*got["indptr"][mine:mine + 2])
        assert got["indices"][b].tobytes() == ref["indices"][a].tobytes(), term
        assert got["data"][b].tobytes() == ref["data"][a].tobytes(), term
    params = json.loads((tmp_path / "index" / "bm25" / "params.index.json").read_text())
    assert params["num_docs"] == len(mixed) and params["method"] == "lucene" and params["k1"] == K1


def test_search_gives_bm25s_in_memory_top_k_and_scores(tmp_path: Path, mixed: list[Passage]) -> None:
    build_index(mixed, tmp_path / "index", IndexConfig(kind="bm25", shard_size=50))
    ours = bm25s.BM25.load(str(tmp_path / "index" / "bm25"), mmap=True)
    reference = in_memory(mixed)
    queries = [list(tokenize(q)) for q in ("Who coached the football team in 1954?", "university elected president",
                                           "東京の首都", "Pakistan", "zzyzx")]
    queries += [list(tokenize(bm25_text(p)))[:12] for p in mixed[::37]]
    for k in (1, 10, 100):
        got_rows, got_scores = ours.retrieve(queries, k=k, show_progress=False)
        ref_rows, ref_scores = reference.retrieve(queries, k=k, show_progress=False)
        assert got_scores.tobytes() == ref_scores.tobytes()
        assert np.array_equal(got_rows, ref_rows)


def test_build_memory_does_not_grow_with_the_corpus_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Python-side peak (numpy included) of a build: 8x the passages, about the same peak, with assembly blocks
    smaller than either corpus (as they are at scale). Held in memory as before, the tokens alone of the 896 extra
    passages would add about 1 MB."""
    import tracemalloc

    monkeypatch.setattr(bm25_shards, "BLOCK", 2_500)
    words = [f"word{i}" for i in range(300)]

    def generated(count: int) -> Iterator[Passage]:
        for i in range(count):
            yield Passage(f"p{i}", f"d{i // 10}", f"Title {i % 50}",
                          " ".join(words[(i * 7 + j * 13) % len(words)] for j in range(120)))

    peaks = []
    for count in (128, 1024):
        build_index(generated(16), tmp_path / f"warm{count}", IndexConfig(kind="bm25", shard_size=64))
        tracemalloc.start()
        build_index(generated(count), tmp_path / f"n{count}", IndexConfig(kind="bm25", shard_size=64))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0], peaks


_KILLED_BUILD = """
import sys, time
import odqa.index.bm25_shards as shards
import odqa.index.build as build
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.source import read_passages

source, out, where = sys.argv[1], sys.argv[2], sys.argv[3]

def block():
    print("blocked", flush=True)
    time.sleep(600)

def passages():
    for i, p in enumerate(read_passages(source)):
        if where == "shard" and i == 250:
            block()
        yield p

if where == "assembly":  # after the first block of scores is written to the staging folder
    blocks = shards._blocks
    def first_then_block(indptr):
        for number, span in enumerate(blocks(indptr)):
            if number == 1:
                block()
            yield span
    shards._blocks = first_then_block
    shards.BLOCK = 500
if where == "replaced":  # the index folder is in place, the manifest not yet marked complete
    write = build.write_manifest
    def write_then_block(folder, manifest):
        if manifest.complete:
            block()
        write(folder, manifest)
    build.write_manifest = write_then_block

build_index(passages(), out, IndexConfig(kind="bm25", shard_size=100))
"""


@pytest.mark.parametrize("where", ["shard", "assembly", "replaced"])
def test_build_killed_anywhere_resumes_to_identical_bytes(tmp_path: Path, timeqa_file: Path, corpus: list[Passage],
                                                          where: str,
                                                          kill_when_blocked: Callable[..., None]) -> None:
    reference = tmp_path / "reference"
    build_index(corpus, reference, IndexConfig(kind="bm25", shard_size=100))
    out = tmp_path / "index"
    kill_when_blocked(_KILLED_BUILD, str(timeqa_file), str(out), where)
    killed = read_manifest(out)
    assert not killed.complete
    assert len(killed.shards) == (2 if where == "shard" else 6)
    if where == "assembly":
        assert (out / ".bm25.tmp" / "data.csc.index.npy").is_file()
    if where == "replaced":
        assert (out / "bm25" / "data.csc.index.npy").is_file()
    build_index(corpus, out, IndexConfig(kind="bm25", shard_size=100))
    assert files_of(out) == files_of(reference)
