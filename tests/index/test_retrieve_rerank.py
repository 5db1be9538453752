"""`odqa retrieve --rerank MODEL --rerank-top N`: a cross-encoder over a BM25 index's top N, from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.config import RerankConfig
from odqa.inputs import load_examples
from odqa.records import Hit, Passage
from odqa.retrieve.rerank import CrossEncoderReranker

runner = CliRunner()


@pytest.fixture(scope="module")
def bm25_and_questions(tmp_path_factory: pytest.TempPathFactory, timeqa_file: Path) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("rerank-cli")
    index = root / "bm25"
    result = runner.invoke(app, ["index", "build", str(timeqa_file), "--kind", "bm25", "--out", str(index)])
    assert result.exit_code == 0, result.output
    asked = [ex for ex in load_examples(timeqa_file) if ex.answers][:6]
    questions = root / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": ex.id, "question": ex.question, "answers": list(ex.answers)})
                                 + "\n" for ex in asked))
    return index, questions


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_retrieve_reranks_the_top_n_and_keeps_the_rest(tmp_path: Path, bm25_and_questions: tuple[Path, Path],
                                                       tiny_cross_encoder: Path) -> None:
    index, questions = bm25_and_questions
    plain, reranked = tmp_path / "plain.jsonl", tmp_path / "reranked.jsonl"
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(index), "--k", "5", "--out", str(plain)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(index), "--k", "5", "--out",
                                 str(reranked), "--rerank", str(tiny_cross_encoder), "--rerank-top", "3"])
    assert result.exit_code == 0, result.output
    assert "reranked" in result.output and "top 3 by" in result.output

    scorer = CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu"))
    moved = 0
    for before, after in zip(_rows(plain), _rows(reranked), strict=True):
        first, second = before["ctxs"], after["ctxs"]
        assert isinstance(first, list) and isinstance(second, list)
        assert second[3:] == first[3:]  # below top N: same passages, same BM25 scores, same order
        head = [Hit(Passage(c["id"], c["id"], c["title"], c["text"]), c["score"]) for c in first[:3]]
        [expected] = scorer.rerank([str(before["question"])], [head], k=3)
        assert [c["id"] for c in second[:3]] == [h.passage.id for h in expected]
        assert [c["score"] for c in second[:3]] == pytest.approx([h.score for h in expected], rel=1e-4, abs=1e-5)
        moved += [c["id"] for c in second[:3]] != [c["id"] for c in first[:3]]
    assert moved > 0
    resolved = json.loads((tmp_path / "reranked.jsonl.config.json").read_text())
    assert resolved["rerank"] == {"model": str(tiny_cross_encoder), "top_n": 3, "batch_size": 32,
                                  "max_length": None, "device": None, "precision": "fp32"}


def test_retrieve_rerank_errors_are_one_line(tmp_path: Path, bm25_and_questions: tuple[Path, Path]) -> None:
    index, questions = bm25_and_questions
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(index), "--out", str(tmp_path / "o.jsonl"),
                                 "--rerank", "cross-encoder/ms-marco-MiniLM-L6-v2"])
    assert result.exit_code == 1
    assert result.output.startswith("ModelError: cannot load cross-encoder 'cross-encoder/ms-marco-MiniLM-L6-v2'")
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(index), "--out", str(tmp_path / "o.jsonl"),
                                 "--rerank", "x", "--rerank-top", "0"])
    assert result.exit_code == 1 and "rerank top_n must be >= 1" in result.output
    assert not (tmp_path / "o.jsonl").exists()
