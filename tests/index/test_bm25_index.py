"""BM25 indexes (bm25s): scores equal refine's BM25 on the same corpus, and agree with rank-bm25 where the two
formulas coincide."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from odqa.errors import InputError
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.sparse import K1, B, bm25_text
from odqa.records import Example, Passage
from odqa.retrieve.bm25 import bm25_scores
from odqa.retrieve.compose import load_retriever
from odqa.retrieve.protocol import Retriever
from odqa.retrieve.sparse import BM25Retriever
from odqa.retrieve.tokenize import tokenize


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory, corpus: list[Passage]) -> Path:
    out = tmp_path_factory.mktemp("bm25") / "index"
    build_index(corpus, out, IndexConfig(kind="bm25", shard_size=100))
    return out


@pytest.fixture(scope="module")
def questions(timeqa_file: Path) -> list[Example]:
    from odqa.inputs import load_examples

    return list(load_examples(timeqa_file))[::9]


def test_parameters_are_refines() -> None:
    defaults = inspect.signature(bm25_scores).parameters
    assert (defaults["k1"].default, defaults["b"].default) == (K1, B)


def test_scores_equal_refine_bm25_over_the_same_corpus(bm25_index: Path, corpus: list[Passage],
                                                      questions: list[Example]) -> None:
    """Reference: odqa.retrieve.bm25.bm25_scores (itself checked against rank-bm25 in tests/test_refine.py)."""
    retriever = BM25Retriever(bm25_index)
    results = retriever.search([ex.question for ex in questions], k=10)
    for example, hits in zip(questions, results, strict=True):
        expected = bm25_scores(example.question, corpus)
        order = np.argsort(-expected, kind="stable")[:10]
        np.testing.assert_allclose([h.score for h in hits], expected[order], rtol=2e-6)
        assert {h.passage.id for h in hits if h.score > expected[order][-1] + 1e-4} <= {corpus[i].id for i in order}


def test_single_terms_agree_with_rank_bm25_okapi(bm25_index: Path, corpus: list[Passage]) -> None:
    """rank-bm25's own BM25Okapi (unmodified): for one query term, both scores are idf(term) times the same
    term-frequency part, so their ratio is one constant over every passage that holds the term (Okapi's idf is
    Robertson's, Lucene's is ln(1 + ...): the idf is the only part where the formulas differ)."""
    okapi = BM25Okapi([list(tokenize(bm25_text(p))) for p in corpus], k1=K1, b=B)
    retriever = BM25Retriever(bm25_index)
    ids = [p.id for p in corpus]
    for word in ("football", "coach", "elected", "1954", "university"):
        (term,) = tokenize(word)
        reference = okapi.get_scores([term])
        assert 0 < np.count_nonzero(reference) < len(corpus) / 2  # Okapi's idf is positive, not floored
        hits = retriever.search([term], k=len(corpus))[0]
        assert len(hits) == np.count_nonzero(reference)
        ratios = [h.score / reference[ids.index(h.passage.id)] for h in hits]
        np.testing.assert_allclose(ratios, ratios[0], rtol=1e-5)


def test_no_shared_term_no_hits_and_k_beyond_the_corpus(bm25_index: Path, corpus: list[Passage]) -> None:
    retriever = load_retriever(bm25_index)
    assert isinstance(retriever, BM25Retriever) and isinstance(retriever, Retriever)
    assert retriever.search(["zzyzx qwerty", "", "the of"], k=5) == [[], [], []]
    assert len(retriever.search(["Pakistan football"], k=10_000)[0]) <= len(corpus)
    assert retriever.search([], k=3) == []


def test_interrupted_bm25_build_resumes_to_identical_bytes(tmp_path: Path, corpus: list[Passage],
                                                           bm25_index: Path) -> None:
    def interrupted() -> Iterator[Passage]:
        yield from corpus[:250]
        raise KeyboardInterrupt  # in the middle of shard 2

    out = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt):
        build_index(interrupted(), out, IndexConfig(kind="bm25", shard_size=100))
    build_index(corpus, out, IndexConfig(kind="bm25", shard_size=100))
    files = sorted(p.relative_to(bm25_index) for p in bm25_index.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert all((out / f).read_bytes() == (bm25_index / f).read_bytes() for f in files)


@pytest.mark.parametrize("texts", [["the of and", "", "is was were"], ["", ""]])
def test_a_corpus_without_tokens_is_one_typed_error(tmp_path: Path, texts: list[str]) -> None:
    """Only stop-words or empty texts: nothing for BM25 to index, said in one line (not a bm25s traceback)."""
    passages = [Passage(f"p{i}", f"d{i}", "", text) for i, text in enumerate(texts)]
    with pytest.raises(InputError, match="no BM25 terms") as raised:
        build_index(passages, tmp_path / "index", IndexConfig(kind="bm25"))
    assert "\n" not in str(raised.value)
