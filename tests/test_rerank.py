"""Cross-encoder reranking, tested through a tiny random sequence classifier loaded by path as users load theirs."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.config import RerankConfig, load_config
from odqa.errors import ConfigError, ModelError
from odqa.records import Hit, Passage
from odqa.retrieve import Reranker, Retriever
from odqa.retrieve.rerank import CrossEncoderReranker, Reranked, rerank_head

QUESTIONS = ["Which team did Carlos play for in 1998?", "Who was the chair of the board in May 2004?"]
TEXTS = [
    "Carlos joined Real Madrid in 1996 and left for Inter in 1999.",
    "The board was chaired by Anne Smith from 2001 to 2006, then by Mark Lee.",
    "The weather in the region is mild and wet for most of the year.",
    "A list of football clubs founded in the nineteenth century.",
    "In 1998 the club won the league for the first time in a decade.",
    "Mark Lee was appointed chair in 2006 after a long vote.",
]


def _hits(texts: Sequence[str], prefix: str = "p") -> list[Hit]:
    """First-stage hits with descending scores 100, 99, ..."""
    return [Hit(Passage(f"{prefix}{i}", f"d{i}", f"Title {i}", text), 100.0 - i) for i, text in enumerate(texts)]


def _direct_scores(folder: Path, question: str, hits: Sequence[Hit], max_length: int = 512) -> np.ndarray:
    """The model's logits computed without sentence-transformers, on (question, title + " " + text) pairs."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    batch = tokenizer([question] * len(hits), [f"{h.passage.title} {h.passage.text}" for h in hits], padding=True,
                      truncation=True, max_length=max_length, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits[:, 0].double().numpy()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def reranker(tiny_cross_encoder: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu", batch_size=4))


class FakeRetriever:
    """Returns the same first-stage list for every query and records the k it was asked for."""

    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits
        self.asked: list[int] = []

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        self.asked.append(k)
        return [self.hits[:k] for _ in queries]


def test_they_satisfy_the_protocols(reranker: CrossEncoderReranker) -> None:
    assert isinstance(reranker, Reranker)
    assert isinstance(Reranked(FakeRetriever([]), reranker), Retriever)


def test_scores_are_the_models_own_logits(reranker: CrossEncoderReranker, tiny_cross_encoder: Path) -> None:
    hits = [_hits(TEXTS), _hits(TEXTS[::-1])]
    scores = reranker.score(QUESTIONS, hits)
    assert [len(s) for s in scores] == [len(TEXTS), len(TEXTS)]
    for question, row, got in zip(QUESTIONS, hits, scores, strict=True):
        np.testing.assert_allclose(got, _direct_scores(tiny_cross_encoder, question, row), rtol=1e-4, atol=1e-5)
    assert np.ptp(scores[0]) > 0.1  # the random model separates passages, so the order below means something


def test_rerank_sorts_by_cross_encoder_score(reranker: CrossEncoderReranker, tiny_cross_encoder: Path) -> None:
    passages = [h.passage for h in _hits(TEXTS)]
    direct = _direct_scores(tiny_cross_encoder, QUESTIONS[0], _hits(TEXTS))
    worst_first = [passages[i] for i in np.argsort(direct)]  # the first stage ranks them the opposite way
    hits = [Hit(p, 100.0 - rank) for rank, p in enumerate(worst_first)]
    [ranked] = reranker.rerank(QUESTIONS[:1], [hits], k=len(hits))
    assert [h.passage for h in ranked] == worst_first[::-1]
    assert [h.score for h in ranked] == pytest.approx(sorted(direct, reverse=True), rel=1e-4, abs=1e-5)
    assert {h.passage for h in ranked} == {h.passage for h in hits}


def test_rerank_keeps_at_most_k(reranker: CrossEncoderReranker) -> None:
    full = reranker.rerank(QUESTIONS, [_hits(TEXTS), _hits(TEXTS[:2])], k=len(TEXTS))
    capped = reranker.rerank(QUESTIONS, [_hits(TEXTS), _hits(TEXTS[:2])], k=3)
    assert [len(r) for r in capped] == [3, 2]
    assert capped[0] == full[0][:3]
    with pytest.raises(ConfigError, match="k must be >= 1"):
        reranker.rerank(QUESTIONS[:1], [_hits(TEXTS)], k=0)


def test_empty_hit_lists_and_no_queries(reranker: CrossEncoderReranker) -> None:
    assert reranker.rerank(QUESTIONS, [[], []], k=5) == [[], []]
    assert reranker.rerank(QUESTIONS, [[], _hits(TEXTS[:1])], k=5)[0] == []
    assert reranker.rerank([], [], k=5) == []
    assert Reranked(FakeRetriever([]), reranker, top_n=3).search(QUESTIONS, k=5) == [[], []]


def test_reranked_reorders_the_head_and_keeps_the_tail_in_first_stage_order(reranker: CrossEncoderReranker) -> None:
    first = _hits(TEXTS)
    retriever = FakeRetriever(first)
    got = Reranked(retriever, reranker, top_n=3).search(QUESTIONS[:1], k=5)[0]
    assert retriever.asked == [5]
    [head] = reranker.rerank(QUESTIONS[:1], [first[:3]], k=3)
    assert got[:3] == head
    assert {h.passage.id for h in got[:3]} == {"p0", "p1", "p2"}
    assert got[3:] == first[3:5]  # untouched: same passages, same first-stage scores


def test_reranked_asks_the_first_stage_for_top_n_when_k_is_smaller(reranker: CrossEncoderReranker) -> None:
    first = _hits(TEXTS)
    retriever = FakeRetriever(first)
    got = Reranked(retriever, reranker, top_n=4).search(QUESTIONS, k=2)
    assert retriever.asked == [4]
    expected = reranker.rerank(QUESTIONS, [first[:4], first[:4]], k=2)
    assert got == expected


def test_rerank_head_works_with_any_reranker() -> None:
    class Reverse:
        def rerank(self, queries: Sequence[str], hits: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]:
            return [list(row)[::-1][:k] for row in hits]

    first = _hits(TEXTS)
    assert [h.passage.id for h in rerank_head(Reverse(), ["q"], [first], top_n=3, k=5)[0]] == \
        ["p2", "p1", "p0", "p3", "p4"]
    assert [h.passage.id for h in rerank_head(Reverse(), ["q"], [first], top_n=10, k=2)[0]] == ["p5", "p4"]
    with pytest.raises(ConfigError, match="top_n and k must be >= 1"):
        rerank_head(Reverse(), ["q"], [first], top_n=0, k=2)
    with pytest.raises(ConfigError, match="top_n must be >= 1"):
        Reranked(FakeRetriever(first), Reverse(), top_n=0)


def test_max_length_truncates_pairs(tiny_cross_encoder: Path) -> None:
    short = CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu", max_length=12))
    hits = _hits(TEXTS)
    got = short.score(QUESTIONS[:1], [hits])[0]
    np.testing.assert_allclose(got, _direct_scores(tiny_cross_encoder, QUESTIONS[0], hits, max_length=12),
                               rtol=1e-4, atol=1e-5)
    assert not np.allclose(got, _direct_scores(tiny_cross_encoder, QUESTIONS[0], hits), atol=1e-3)


@pytest.mark.parametrize("model", ["cross-encoder/ms-marco-MiniLM-L6-v2", "no-such-folder/model"])
def test_a_model_that_cannot_be_had_is_one_line_naming_it(model: str) -> None:
    with pytest.raises(ModelError) as info:
        CrossEncoderReranker(RerankConfig(model=model, device="cpu"))
    message = str(info.value)
    assert "\n" not in message
    assert f"cannot load cross-encoder {model!r}" in message
    assert "needs hub access" in message and "pass its local directory" in message


def test_a_folder_without_a_model_is_a_model_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a model", encoding="utf-8")
    with pytest.raises(ModelError, match=r"local folder holds no loadable model.*save_pretrained"):
        CrossEncoderReranker(RerankConfig(model=str(tmp_path), device="cpu"))


def test_a_classifier_with_several_labels_is_refused(tiny_two_label_classifier: Path) -> None:
    with pytest.raises(ModelError, match=r"2 output labels.*num_labels=1"):
        CrossEncoderReranker(RerankConfig(model=str(tiny_two_label_classifier), device="cpu"))


def test_no_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--rerank MODEL"):
        CrossEncoderReranker(RerankConfig())


@pytest.mark.parametrize(("overrides", "message"), [
    ({"top_n": 0}, "rerank top_n must be >= 1"),
    ({"batch_size": 0}, "rerank batch_size must be >= 1"),
    ({"max_length": 0}, "rerank max_length must be >= 1"),
    ({"model": " "}, "hub id or a local path"),
    ({"top_n": "ten"}, "top_n must be"),
    ({"precision": "int8"}, "precision"),
])
def test_rerank_config_rejects_bad_values(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(RerankConfig, None, **overrides)


def test_importing_the_module_loads_no_model_library() -> None:
    code = ("import sys, odqa.retrieve.rerank; "
            "print([m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules])")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "[]"


def test_half_precision_scores_stay_close(reranker: CrossEncoderReranker, tiny_cross_encoder: Path) -> None:
    import torch

    half = CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu", precision="bf16"))
    assert {p.dtype for p in half.model.parameters()} == {torch.bfloat16}
    hits = [_hits(TEXTS)]
    got, full = half.score(QUESTIONS[:1], hits)[0], reranker.score(QUESTIONS[:1], hits)[0]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, full, rtol=0.05, atol=0.05 * float(np.abs(full).max()))
    with pytest.raises(ConfigError, match="rerank precision 'int8' is not valid"):
        RerankConfig(model="x", precision="int8")  # type: ignore[arg-type]
