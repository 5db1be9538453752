"""`odqa index build WikiTables-WithLinks/` and `odqa retrieve HYBRIDQA_QUESTIONS --tables ...`: HybridQA over an
index of many tables, each hit marked with its table, kind and cells.

Data: tests/data/hybridqa (five real WikiTables-WithLinks tables, six dev questions in `dev.tables.json`) and tiny
tables written here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.datasets import hybridqa
from odqa.datasets.hybridqa import TableAnnotator, iter_tables, table_documents, table_of
from odqa.errors import InputError
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.source import read_passages
from odqa.inputs import load_examples

runner = CliRunner()


@pytest.fixture(scope="module")
def tables(data_dir: Path) -> Path:
    return data_dir / "hybridqa" / "WikiTables-WithLinks"


@pytest.fixture(scope="module")
def questions(data_dir: Path) -> Path:
    return data_dir / "hybridqa" / "dev.tables.json"


@pytest.fixture(scope="module")
def bm25_index(tmp_path_factory: pytest.TempPathFactory, tables: Path) -> Path:
    out = tmp_path_factory.mktemp("tables") / "bm25"
    result = runner.invoke(app, ["index", "build", str(tables), "--kind", "bm25", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def _write_table(root: Path, table_id: str, header: list[str], rows: list[list[tuple[str, list[str]]]],
                 pages: dict[str, str]) -> None:
    for folder in ("tables_tok", "request_tok"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    data = [[[text, links] for text, links in row] for row in rows]
    table = {"url": "", "title": table_id.replace("_", " "), "header": [[h, []] for h in header], "data": data,
             "uid": table_id}
    (root / "tables_tok" / f"{table_id}.json").write_text(json.dumps(table), "utf-8")
    (root / "request_tok" / f"{table_id}.json").write_text(json.dumps(pages), "utf-8")


def test_a_tables_folder_gives_every_row_and_linked_page(tables: Path) -> None:
    passages = list(read_passages(tables))
    expected = [(p.id, p.title, p.text) for t in iter_tables(tables) for p in hybridqa.table_passages(t)]
    assert [(p.id, p.title, p.text) for p in passages] == expected  # refine's candidates, table after table
    rows = sum(len(t.rows) for t in iter_tables(tables))
    pages = sum(len(t.cells_linking()) for t in iter_tables(tables))
    assert (rows, pages) == (83, 108) and len(passages) == rows + pages == len({p.id for p in passages})
    table_order = list(dict.fromkeys(p.doc_id for p in passages))
    assert table_order == sorted(table_order) and len(table_order) == 5
    annotator = TableAnnotator(tables)
    for passage in passages:  # each id names its table, and the tables folder says what it is
        assert table_of(passage.id) == passage.doc_id
        meta = annotator.ctx_meta(passage.id)
        assert meta["table_id"] == passage.doc_id and meta["kind"] in ("row", "passage")
    somali = annotator.ctx_meta("List_of_Somali_cities_by_population_0#/wiki/Bosaso")
    assert somali["kind"] == "passage" and somali["cells"] == [[2, 1]]


def test_tables_are_read_one_at_a_time(tables: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[str] = []
    load = hybridqa.load_table

    def counting(tables_dir: str | Path, table_id: str) -> hybridqa.Table:
        loaded.append(table_id)
        return load(tables_dir, table_id)

    monkeypatch.setattr(hybridqa, "load_table", counting)
    passages = read_passages(tables)
    assert next(passages).id == "County_of_Churchill,_Queensland_0#row=0" and loaded == [
        "County_of_Churchill,_Queensland_0"]


def test_a_page_linked_from_two_tables_is_indexed_for_each(tmp_path: Path) -> None:
    page = {"/wiki/Zorblax": "Zorblax is a town famous for its festival."}
    _write_table(tmp_path, "B_table_0", ["Town"], [[("Zorblax", ["/wiki/Zorblax"])]], page)
    _write_table(tmp_path, "A_table_0", ["Town", "Mayor"], [[("Zorblax", ["/wiki/Zorblax"]), ("Ann", [])],
                                                            [("Quim", []), ("Bo", [])]], page)
    ids = [p.id for p in read_passages(tmp_path)]
    assert ids == ["A_table_0#row=0", "A_table_0#row=1", "A_table_0#/wiki/Zorblax", "B_table_0#row=0",
                   "B_table_0#/wiki/Zorblax"]


def test_an_id_from_elsewhere_is_a_clear_error(tables: Path) -> None:
    with pytest.raises(InputError, match="no row or linked page of table 'Daniel_Auteuil_2'"):
        TableAnnotator(tables).ctx_meta("Daniel_Auteuil_2#row=99")
    with pytest.raises(InputError, match="table 'doc:0' not found"):
        TableAnnotator(tables).ctx_meta("doc:0")


def test_retrieve_over_the_tables_index_marks_each_hit(questions: Path, tables: Path, bm25_index: Path,
                                                       tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["retrieve", str(questions), "--tables", str(tables), "--index", str(bm25_index),
                                 "--k", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "table recall@5" in result.output and "answer recall@5" in result.output
    records = _records(out)
    asked = json.loads(questions.read_text("utf-8"))
    assert [r["id"] for r in records] == [q["question_id"] for q in asked]
    for record, question in zip(records, asked, strict=True):
        assert record["table_id"] == question["table_id"] and record["answer_from"] in ("table", "passage")
        assert len(record["ctxs"]) == 5
        for ctx in record["ctxs"]:
            assert ctx["table_id"] == table_of(ctx["id"])
            documents = {d.id: d.meta for d in table_documents(hybridqa.load_table(tables, ctx["table_id"]))}
            assert (ctx["kind"], ctx["cells"]) == (documents[ctx["id"]]["kind"], documents[ctx["id"]]["cells"])
    first = records[0]["ctxs"][0]  # "... the Somalian city with 550,000 residents": Bosaso's row
    assert first["id"] == "List_of_Somali_cities_by_population_0#row=2" and first["cells"] == [[2, c] for c in range(4)]

    evaluated = runner.invoke(app, ["eval", str(out), "--k", "1,5", "--json", str(tmp_path / "eval.json")])
    assert evaluated.exit_code == 0, evaluated.output
    metrics = json.loads((tmp_path / "eval.json").read_text("utf-8"))
    assert metrics["answerable table"] == 4 and metrics["answerable passage"] == 2
    assert metrics["recall@5"] == pytest.approx((4 * metrics["recall@5 table"] + 2 * metrics["recall@5 passage"]) / 6)


def test_a_question_matching_one_row_retrieves_that_row_first(tables: Path, bm25_index: Path,
                                                              tmp_path: Path) -> None:
    asked = tmp_path / "q.json"
    asked.write_text(json.dumps([{"question_id": "q1", "table_id": "County_of_Churchill,_Queensland_0",
                                  "question": "Which parish of Ipswich has the town Grandchester?",
                                  "answer-text": "Alfred"}]), "utf-8")
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, ["retrieve", str(asked), "--tables", str(tables), "--index", str(bm25_index),
                                 "--k", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (record,) = _records(out)
    first = record["ctxs"][0]
    assert (first["id"], first["kind"], first["has_answer"]) == ("County_of_Churchill,_Queensland_0#row=0", "row", True)
    assert record["answer_from"] == "table"


def test_dense_and_bm25_over_tables_fused(questions: Path, tables: Path, bm25_index: Path, tiny_config: IndexConfig,
                                          encoder: Any, tmp_path: Path) -> None:
    dense = tmp_path / "dense"
    build_index(read_passages(tables), dense, tiny_config, encoder=encoder)
    out = tmp_path / "fused.jsonl"
    result = runner.invoke(app, ["retrieve", str(questions), "--tables", str(tables), "--index", str(dense),
                                 "--index", str(bm25_index), "--fuse", "rrf", "--depth", "20", "--k", "5",
                                 "--device", "cpu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    records = _records(out)
    assert len(records) == 6 and all(len(r["ctxs"]) == 5 for r in records)
    assert all({"kind", "cells", "table_id"} <= set(ctx) for r in records for ctx in r["ctxs"])
    assert all(ctx["table_id"] == table_of(ctx["id"]) for r in records for ctx in r["ctxs"])


def test_hybridqa_questions_without_tables_name_the_flag(questions: Path, bm25_index: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(bm25_index), "--out",
                                 str(tmp_path / "o.jsonl")])
    output = " ".join(result.output.split())
    assert result.exit_code == 1 and output.startswith("InputError:") and "holds HybridQA questions" in output
    assert "odqa retrieve QUESTIONS --tables WikiTables-WithLinks/" in output
    assert not (tmp_path / "o.jsonl").exists()


def test_load_examples_with_tables(questions: Path, tables: Path, tmp_path: Path) -> None:
    examples = list(load_examples(questions, tables))
    assert [ex.meta["answer_from"] for ex in examples][:2] == ["passage", "table"]
    with pytest.raises(InputError, match="with tables, pass a HybridQA questions file"):
        load_examples(tables, tables)


def test_refine_marks_its_ctxs_with_the_same_annotator(questions: Path, tables: Path, tmp_path: Path) -> None:
    from odqa.config import RefineConfig
    from odqa.tables import refine_tables_to_file

    out = tmp_path / "refined.jsonl"
    refine_tables_to_file(questions, tables, out, RefineConfig(scorer="table", k=3))
    for record in _records(out):  # a question's candidates are its own table's
        assert all(ctx["table_id"] == record["table_id"] for ctx in record["ctxs"])
