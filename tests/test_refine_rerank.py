"""`odqa refine --rerank MODEL --rerank-top N`: a second stage over each question's top N refined passages."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.config import RefineConfig, RerankConfig
from odqa.errors import ConfigError
from odqa.inputs import load_examples
from odqa.records import Document, Example, Hit
from odqa.refine import refine
from odqa.retrieve.rerank import CrossEncoderReranker

DEMO = Path(__file__).parents[1] / "odqa" / "demo" / "data" / "timeqa_hard_slice.jsonl.gz"


class Reverse:
    """Puts each list in reverse order: a reranker whose effect is known."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, list[int], int]] = []

    def rerank(self, queries: Sequence[str], hits: Sequence[Sequence[Hit]], k: int) -> list[list[Hit]]:
        self.asked.append((len(queries), [len(row) for row in hits], k))
        return [list(row)[::-1][:k] for row in hits]


@pytest.fixture(scope="module")
def examples() -> list[Example]:
    return list(itertools.islice(load_examples(DEMO), 6))


def _ids(hits: Sequence[Hit]) -> list[str]:
    return [h.passage.id for h in hits]


def test_refine_reranks_the_top_n_and_keeps_the_rest(examples: list[Example]) -> None:
    plain = list(refine(examples, RefineConfig(scorer="bm25", k=8)))
    config = RefineConfig(scorer="bm25", k=5, rerank=RerankConfig(model="reverse", top_n=3))
    reverse = Reverse()
    reranked = list(refine(examples, config, reranker=reverse))
    assert reverse.asked == [(6, [3] * 6, 3)]  # one call per block, each question's top 3
    for before, after in zip(plain, reranked, strict=True):
        assert _ids(after.hits) == _ids(before.hits[:3])[::-1] + _ids(before.hits[3:5])
        assert after.hits[3:] == before.hits[3:5]


def test_a_top_n_above_k_reranks_more_than_is_kept(examples: list[Example]) -> None:
    plain = list(refine(examples, RefineConfig(scorer="bm25", k=8)))
    config = RefineConfig(scorer="bm25", k=2, rerank=RerankConfig(model="reverse", top_n=6))
    reranked = list(refine(examples, config, reranker=Reverse()))
    for before, after in zip(plain, reranked, strict=True):
        assert _ids(after.hits) == _ids(before.hits[:6])[::-1][:2]


def test_empty_questions_and_no_candidates_are_not_reranked() -> None:
    docs = (Document("d", "T", "one two three four five six"),)
    examples = [Example("a", "", ("x",), ctxs=docs), Example("b", "Who?", ctxs=()), Example("c", "six five", ctxs=docs)]
    reverse = Reverse()
    config = RefineConfig(scorer="bm25", k=3, rerank=RerankConfig(model="reverse", top_n=3))
    out = list(refine(examples, config, reranker=reverse))
    assert reverse.asked == [(1, [1], 3)]  # only question "c", with its one passage
    assert [len(item.hits) for item in out] == [1, 0, 1]
    assert out[0].hits[0].score == 0.0  # the empty question keeps its passages in their original order


def test_reranker_and_config_must_agree(examples: list[Example]) -> None:
    with pytest.raises(ConfigError, match=r"reranker goes with config\.rerank\.model"):
        list(refine(examples, RefineConfig(scorer="bm25"), reranker=Reverse()))
    with pytest.raises(ConfigError, match=r"reranker goes with config\.rerank\.model"):
        list(refine(examples, RefineConfig(scorer="bm25", rerank=RerankConfig(model="x"))))


def test_cli_refine_with_a_cross_encoder(tmp_path: Path, tiny_cross_encoder: Path) -> None:
    runner = CliRunner()
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(line + "\n" for line in _first_lines(DEMO, 5)))
    plain, reranked = tmp_path / "plain.jsonl", tmp_path / "reranked.jsonl"
    result = runner.invoke(app, ["refine", str(questions), "--scorer", "bm25", "--k", "5", "--out", str(plain)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["refine", str(questions), "--scorer", "bm25", "--k", "5", "--out", str(reranked),
                                 "--rerank", str(tiny_cross_encoder), "--rerank-top", "4"])
    assert result.exit_code == 0, result.output
    assert "reranked" in result.output and "top 4 by" in result.output
    scorer = CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu"))
    before = list(refine(load_examples(questions), RefineConfig(scorer="bm25", k=5)))
    rows = [json.loads(line) for line in reranked.read_text().splitlines()]
    assert [r["ctxs"][4] for r in rows] == [json.loads(line)["ctxs"][4] for line in plain.read_text().splitlines()]
    for item, row in zip(before, rows, strict=True):
        [expected] = scorer.rerank([item.example.question], [item.hits[:4]], k=4)
        assert [c["id"] for c in row["ctxs"][:4]] == _ids(expected)
    resolved = json.loads((tmp_path / "reranked.jsonl.config.json").read_text())
    assert resolved["rerank"]["model"] == str(tiny_cross_encoder) and resolved["rerank"]["top_n"] == 4
    result = runner.invoke(app, ["refine", str(questions), "--scorer", "bm25", "--out", str(tmp_path / "x.jsonl"),
                                 "--rerank", "cross-encoder/ms-marco-MiniLM-L6-v2"])
    assert result.exit_code == 1
    assert result.output.startswith("ModelError: cannot load cross-encoder 'cross-encoder/ms-marco-MiniLM-L6-v2'")


def _first_lines(path: Path, n: int) -> list[str]:
    import gzip

    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in itertools.islice(fh, n)]


def test_cli_refine_tables_rerank_each_questions_top_n(tmp_path: Path, data_dir: Path,
                                                       tiny_cross_encoder: Path) -> None:
    from odqa.refine import RefineStats
    from odqa.tables import refine_tables

    root = data_dir / "hybridqa"
    tables, questions = root / "WikiTables-WithLinks", root / "dev.tables.json"
    plain, reranked = tmp_path / "plain.jsonl", tmp_path / "reranked.jsonl"
    runner = CliRunner()
    assert runner.invoke(app, ["refine", str(questions), "--tables", str(tables), "--k", "6", "--out",
                               str(plain)]).exit_code == 0
    result = runner.invoke(app, ["refine", str(questions), "--tables", str(tables), "--k", "6", "--out",
                                 str(reranked), "--rerank", str(tiny_cross_encoder), "--rerank-top", "4"])
    assert result.exit_code == 0, result.output
    scorer = CrossEncoderReranker(RerankConfig(model=str(tiny_cross_encoder), device="cpu"))
    before = list(refine_tables(load_examples(questions, tables), tables, RefineConfig(scorer="table-hybrid", k=6),
                                stats=RefineStats()))
    rows = [json.loads(line) for line in reranked.read_text().splitlines()]
    plain_rows = [json.loads(line) for line in plain.read_text().splitlines()]
    for item, row, first in zip(before, rows, plain_rows, strict=True):
        [expected] = scorer.rerank([item.example.question], [item.hits[:4]], k=4)
        assert [c["id"] for c in row["ctxs"][:4]] == _ids(expected)
        assert row["ctxs"][4:] == first["ctxs"][4:6]  # past the top 4: first-stage order, kinds and cells kept
