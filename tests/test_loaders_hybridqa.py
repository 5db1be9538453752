"""HybridQA loader errors: tables and question files that cannot be read or do not fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from odqa.datasets import load_hybridqa, load_table
from odqa.errors import FormatError, InputError


@pytest.fixture()
def tables(tmp_path: Path) -> Path:
    root = tmp_path / "WikiTables-WithLinks"
    (root / "tables_tok").mkdir(parents=True)
    (root / "request_tok").mkdir()
    return root


def test_a_table_that_is_not_utf8_or_not_an_object(tables: Path) -> None:
    (tables / "tables_tok" / "t1.json").write_bytes(b'{"title": "caf\xe9"}')
    with pytest.raises(FormatError, match=r"t1\.json: not UTF-8 text"):
        load_table(tables, "t1")
    (tables / "tables_tok" / "t2.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(FormatError, match="not a HybridQA table: got a JSON list; expected an object with url"):
        load_table(tables, "t2")
    (tables / "tables_tok" / "t3.json").write_text('{"title": "t", "header": [["a", []]], "data": []}', "utf-8")
    (tables / "request_tok" / "t3.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(FormatError, match=r"expected an object \{link: passage text\}, got a JSON list"):
        load_table(tables, "t3")
    (tables / "tables_tok" / "t4.json").mkdir()
    with pytest.raises(InputError, match="table 't4' not found"):
        load_table(tables, "t4")


def test_a_question_whose_table_id_is_not_a_name(data_dir: Path, tables: Path, tmp_path: Path) -> None:
    source = data_dir / "hybridqa" / "WikiTables-WithLinks"
    questions = tmp_path / "q.jsonl"
    table_id = "List_of_Somali_cities_by_population_0"
    for sub in ("tables_tok", "request_tok"):
        shutil.copy(source / sub / f"{table_id}.json", tables / sub)
    good = {"question_id": "a", "question": "?", "table_id": table_id}
    for bad, message in [({"table_id": [table_id]}, r"question 'b': table_id must be the name of a table file"),
                         ({"question": None}, r"question 'b': question and answer-text must be strings"),
                         ({"answer-text": ["x"]}, r"question 'b': question and answer-text must be strings")]:
        rows = [good, good | {"question_id": "b"} | bad]
        questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        with pytest.raises(FormatError, match=message) as info:
            list(load_hybridqa(questions, tables))
        assert info.value.line == 2


def test_load_hybridqa_keeps_a_bounded_number_of_tables(data_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.datasets.hybridqa as hybridqa

    source = data_dir / "hybridqa" / "WikiTables-WithLinks"
    ids = sorted(p.stem for p in (source / "tables_tok").glob("*.json"))[:3]
    order = [ids[0], ids[0], ids[1], ids[2], ids[0], ids[2]]
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"question_id": f"q{i}", "question": "?", "table_id": t}
                                     for i, t in enumerate(order)]), encoding="utf-8")
    loads: list[str] = []
    real = hybridqa.load_table

    def counting(tables_dir: str | Path, table_id: str) -> hybridqa.Table:
        loads.append(table_id)
        return real(tables_dir, table_id)

    monkeypatch.setattr(hybridqa, "load_table", counting)
    examples = list(load_hybridqa(questions, source, cached=2))
    assert [ex.meta["table_id"] for ex in examples] == order
    assert loads == [ids[0], ids[1], ids[2], ids[0]]  # with room for 2, the first table was let go and read again
    loads.clear()
    assert [ex.ctxs for ex in load_hybridqa(questions, source)] == [ex.ctxs for ex in examples]
    assert loads == ids  # the default room (64) reads each table once
