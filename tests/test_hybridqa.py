"""HybridQA: the two shipped tables end to end (loader -> passages -> TableRetriever -> answer in top k)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odqa.datasets.hybridqa import Cell, Table, load_hybridqa, load_table, table_documents, table_passages
from odqa.errors import ConfigError, FormatError, InputError
from odqa.retrieve.protocol import Retriever
from odqa.retrieve.table import TableRetriever

SOMALI = "List_of_Somali_cities_by_population_0"
MOHUN = "List_of_Mohun_Bagan_A.C._managers_0"


@pytest.fixture(scope="module")
def root(data_dir: Path) -> Path:
    return data_dir / "hybridqa"


@pytest.fixture(scope="module")
def tables(root: Path) -> Path:
    return root / "WikiTables-WithLinks"


@pytest.fixture(scope="module")
def traced(root: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((root / "sample_dev_questions.traced.json").read_text("utf-8"))
    return data


def test_a_table_becomes_header_value_rows_and_linked_passages(tables: Path) -> None:
    table = load_table(tables, SOMALI)
    assert table.header == ("Rank", "City", "Region", "Population")
    assert len(table.rows) == 18
    docs = table_documents(table)
    rows = [d for d in docs if d.meta["kind"] == "row"]
    linked = [d for d in docs if d.meta["kind"] == "passage"]
    assert len(rows) == 18 and len(linked) == len(table.cells_linking()) == 34
    assert rows[2].text == "Rank: 3; City: Bosaso; Region: Bari; Population: 550,000"
    assert rows[2].title == "List of cities in Somalia by population"
    assert rows[2].meta["links"] == ["/wiki/Bari", "/wiki/Bosaso"]
    bosaso = next(d for d in linked if d.meta["link"] == "/wiki/Bosaso")
    assert bosaso.title == "Bosaso" and bosaso.meta["cells"] == [[2, 1]]
    assert "Gulf of Aden" in bosaso.text
    assert [p.id for p in table_passages(table)] == [d.id for d in docs]


def test_a_link_in_several_cells_is_one_passage_tied_to_each(tables: Path) -> None:
    docs = table_documents(load_table(tables, MOHUN))
    karim = next(d for d in docs if d.meta.get("link") == "/wiki/Karim_Bencherifa")
    assert karim.id == f"{MOHUN}#/wiki/Karim_Bencherifa"
    assert karim.meta["cells"] == [[2, 0], [11, 0]]


def test_loader_gives_question_answer_and_table_context(root: Path, tables: Path) -> None:
    examples = list(load_hybridqa(root / "sample_dev_questions.traced.json", tables))
    assert [e.id for e in examples] == ["00ad8c3df9fa9da0", "00c4fbc89bffe739"]
    assert [e.answers for e in examples] == [("Gulf of Aden",), ("Morocco",)]
    assert examples[0].meta["table_id"] == SOMALI and "answer-node" in examples[0].meta
    assert examples[0].ctxs is not None and len(examples[0].ctxs) == 18 + 34


def test_missing_table_and_bad_question_are_explained(root: Path, tables: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="WikiTables-WithLinks"):
        list(load_hybridqa(root / "dev.sample.json", tables))  # its tables are not shipped
    bad = tmp_path / "q.json"
    bad.write_text(json.dumps([{"question_id": "x", "question": "?"}]), encoding="utf-8")
    with pytest.raises(FormatError, match="missing 'table_id'"):
        list(load_hybridqa(bad, tables))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Which gulf is north of the Somalian city with 550,000 residents ?", {(2, 3, "exact")}),
        ("Which city has the highest population ?", {(0, 3, "argmax")}),
        ("Which region has the smallest population ?", {(17, 3, "argmin")}),
        ("Which cities have a population of more than 500,000 ?", {(r, 3, "greater") for r in (0, 1, 2)}),
        ("Which cities have a population below 65,000 ?", {(17, 3, "less")}),
    ],
)
def test_cell_matching(tables: Path, question: str, expected: set[tuple[int, int, str]]) -> None:
    links = TableRetriever(load_table(tables, SOMALI)).link(question)
    assert {(c.row, c.column, c.source) for c in links if c.source != "passage"} == expected


def test_a_small_hand_built_table_without_passages() -> None:
    table = Table(id="t", title="Winners", header=("Year", "Winner"),
                  rows=((Cell("1999"), Cell("Ann")), (Cell("2004"), Cell("Bo"))))
    retriever = TableRetriever(table)
    assert [(c.row, c.source) for c in retriever.link("Who won after 2000 ?")] == [(1, "greater")]
    [hits] = retriever.search(["Who won in 2004 ?"], k=5)
    assert [h.passage.id for h in hits] == ["t#row=1", "t#row=0"]


def test_superlative_over_dates(tables: Path) -> None:
    links = TableRetriever(load_table(tables, MOHUN)).link("Who was the earliest manager ?")
    assert {(c.row, c.source) for c in links if c.source == "argmin"} == {(0, "argmin")}


def test_passage_retrieval_links_the_cells_of_the_matched_passage(tables: Path) -> None:
    question = "What is the nationality of the manager who was born on 15 February 1968 ?"
    links = TableRetriever(load_table(tables, MOHUN)).link(question)
    assert [(c.row, c.column, c.source) for c in links[:2]] == [(2, 0, "passage"), (11, 0, "passage")]


def gold_ids(question: dict[str, Any]) -> set[str]:
    """The answer's cells (as their row passage) and linked passages, from the traced answer nodes."""
    table_id = question["table_id"]
    ids = set()
    for _, (row, _column), link, source in question["answer-node"]:
        ids.add(f"{table_id}#{link}" if source == "passage" else f"{table_id}#row={row}")
    return ids


def test_answer_bearing_row_or_passage_is_in_the_top_3(tables: Path, traced: list[dict[str, Any]]) -> None:
    ranks = {}
    for question in traced:
        retriever = TableRetriever(load_table(tables, question["table_id"]))
        [hits] = retriever.search([question["question"]], k=10)
        ids = [hit.passage.id for hit in hits]
        ranks[question["question_id"]] = min(ids.index(g) + 1 for g in gold_ids(question) if g in ids)
    # measured: Bosaso's passage (Gulf of Aden) is 2nd, after its row (550,000); Karim Bencherifa's row
    # (Nationality: Morocco) is 1st, his passage (born 15 February 1968) 2nd
    assert ranks == {"00ad8c3df9fa9da0": 2, "00c4fbc89bffe739": 1}


def test_search_is_batch_first_and_sorted(tables: Path) -> None:
    retriever = TableRetriever(load_table(tables, SOMALI))
    assert isinstance(retriever, Retriever)
    results = retriever.search(["Which city has the highest population ?", "gulf", "Bari"], k=5)
    assert [len(hits) for hits in results] == [5, 5, 5]
    for hits in results:
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert results[0][0].passage.id == f"{SOMALI}#row=0"
    assert len(retriever.search(["x"], k=1000)[0]) == 18 + 34
    with pytest.raises(ConfigError, match="k must be"):
        retriever.search(["x"], k=0)
