"""The train suite's gate: floors per pipeline and k, no trained pipeline below MiniLM's R@5 by more than the
margin, and (full run) the reranked HybridQA default above BM25 at R@1."""

from __future__ import annotations

import json
from pathlib import Path

from odqa.bench.train import check, table


def _results(trained: tuple[float, float], hybridqa: dict[str, dict[str, float]] | None = None) -> dict:
    return {"ks": [1, 5, 20], "heldout_questions": 49, "heldout_articles": 12,
            "timeqa": {"hybrid minilm (default)": {1: 0.469, 5: 0.816, 20: 1.0},
                       "hybrid + trained retriever": {1: trained[0], 5: trained[1], 20: 1.0}},
            "hybridqa": hybridqa or {}, "training": {"timeqa": {"retriever": {"seconds": 1.0, "steps": 12,
                                                                              "train_questions": 43}}}}


def test_the_pinned_quick_floors_pass_the_measured_run_and_fail_a_model_that_did_not_learn() -> None:
    floors = json.loads((Path(__file__).parents[2] / "bench" / "floors.json").read_text())["train_quick"]
    assert check(_results((0.510, 0.857)), floors) == []
    failures = check(_results((0.469, 0.816)), floors)  # MiniLM's own figures: nothing learned
    assert len(failures) == 2 and all("< floor" in f for f in failures)
    worse = check(_results((0.5, 0.80)), floors)
    assert any("below MiniLM's 0.816" in f for f in worse)
    assert "hybrid + trained retriever" in table(_results((0.510, 0.857)))


def test_the_full_run_needs_the_reranked_hybridqa_default_above_bm25() -> None:
    def row(r1: float, passage: float) -> dict[str, float]:
        return {"recall@1": r1, "recall@5": 0.5, "recall@1 passage": passage}

    close = {"bm25": row(0.2, 0.1), "table-hybrid + trained reranker": row(0.24, 0.1)}
    assert check(_results((0.6, 0.9), close), {"_margin": 0.02}) == [
        "train hybridqa reranked passage R@1 0.100 not above BM25's 0.100",
        "train hybridqa reranked R@1 0.240 not 0.05 above BM25's 0.200"]
    above = {"bm25": row(0.2, 0.1), "table-hybrid + trained reranker": row(0.26, 0.15)}
    assert check(_results((0.6, 0.9), above), {"_margin": 0.02}) == []
