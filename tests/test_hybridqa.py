"""HybridQA: the two shipped tables end to end (loader -> passages -> TableRetriever -> answer in top k)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odqa.datasets.hybridqa import Cell, Table, load_hybridqa, load_table, table_documents, table_passages
from odqa.datasets.hybridqa_linking import TableRetriever
from odqa.errors import ConfigError, FormatError, InputError
from odqa.retrieve.protocol import Retriever

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
    # only Karim Bencherifa's passage is within tau (TF-IDF on "15 february 1968") or the best substring match;
    # the other 20-odd passages, which share a word or two with the question, link nothing
    assert {(c.row, c.column) for c in links if c.source == "passage"} == {(2, 0), (11, 0)}


def test_passage_linking_is_the_papers_ensemble_of_tfidf_2_3_grams_and_longest_substring() -> None:
    table = Table(id="t", title="Players", header=("Player", "Club"),
                  rows=((Cell("Ana", ("/wiki/A",)), Cell("Partizan")), (Cell("Bo", ("/wiki/B",)), Cell("Dinamo"))),
                  passages={"/wiki/A": "Ana was born in Kraljevo . She played in Serbia .",
                            "/wiki/B": "Bo was born in Split , Croatia . He played in Zagreb ."})
    retriever = TableRetriever(table)
    # one shared content word is no 2-3 gram: TF-IDF finds nothing, the longest substring ("kraljevo") does
    links = retriever.link("Which club did the player from Kraljevo join ?")
    assert [(c.row, c.column, c.source) for c in links] == [(0, 0, "passage")]
    # a shared bigram ("split croatia") is a TF-IDF match; B wins both retrievers, so only B's cell links
    links = retriever.link("Which club signed the player born in Split , Croatia ?")
    assert [(c.row, c.column, c.source) for c in links] == [(1, 0, "passage")]
    [hits] = retriever.search(["Which club signed the player born in Split , Croatia ?"], k=2)
    assert [h.passage.id for h in hits] == ["t#row=1", "t#/wiki/B"]  # the linked row, then its passage
    with pytest.raises(ConfigError, match="tau"):
        TableRetriever(table, tau=1.5)


def gold_ids(question: dict[str, Any]) -> set[str]:
    """The answer's cells (as their row passage) and linked passages, from the traced answer nodes."""
    table_id = question["table_id"]
    ids = set()
    for _, (row, _column), link, source in question["answer-node"]:
        ids.add(f"{table_id}#{link}" if source == "passage" else f"{table_id}#row={row}")
    return ids


def test_answer_bearing_row_or_passage_is_in_the_top_3(tables: Path, traced: list[dict[str, Any]]) -> None:
    ranks, top3 = {}, {}
    for question in traced:
        retriever = TableRetriever(load_table(tables, question["table_id"]))
        [hits] = retriever.search([question["question"]], k=10)
        ids = [hit.passage.id for hit in hits]
        ranks[question["question_id"]] = min(ids.index(g) + 1 for g in gold_ids(question) if g in ids)
        top3[question["question_id"]] = [i.split("#", 1)[1] for i in ids[:3]]
    # measured: Bosaso's passage (Gulf of Aden) is 2nd, after its row (550,000); Karim Bencherifa's two rows
    # (Nationality: Morocco) are 1st and 2nd, his passage (born 15 February 1968) 3rd
    assert ranks == {"00ad8c3df9fa9da0": 2, "00c4fbc89bffe739": 1}
    assert top3 == {"00ad8c3df9fa9da0": ["row=2", "/wiki/Bosaso", "/wiki/Bari"],
                    "00c4fbc89bffe739": ["row=2", "row=11", "/wiki/Karim_Bencherifa"]}


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


def test_the_two_tables_scored_end_to_end_by_odqa_eval(root: Path, tables: Path, tmp_path: Path) -> None:
    """Loader -> TableRetriever -> FiD file -> recall@k; official predictions -> in-table / in-passage EM and F1
    against the official reference entries of these two questions (00ad...: passage, 00c4...: table)."""
    from odqa.evaluate.run import EvalConfig, run_eval
    from odqa.io import example_to_fid, write_fid

    examples = list(load_hybridqa(root / "sample_dev_questions.traced.json", tables))
    records = []
    for example in examples:
        [hits] = TableRetriever(load_table(tables, example.meta["table_id"])).search([example.question], k=10)
        records.append(example_to_fid(example, hits))
    fid = tmp_path / "retrieved.jsonl"
    write_fid(fid, records)
    recall = run_eval(EvalConfig(dataset="fid", predictions=str(fid), ks=(1, 2, 10)))
    # "Morocco" is in the first row passage of its question; "Gulf of Aden" in the second passage (Bosaso's)
    assert (recall["recall@1"], recall["recall@2"], recall["recall@10"]) == (0.5, 1.0, 1.0)

    reference = root / "dev_reference.traced.json"
    oracle = tmp_path / "oracle.json"
    oracle.write_text(json.dumps([{"question_id": e.id, "pred": e.answers[0]} for e in examples]), "utf-8")
    assert run_eval(EvalConfig(dataset="hybridqa", predictions=str(oracle), gold=str(reference))) == {
        "table exact": 100.0, "table f1": 100.0, "passage exact": 100.0, "passage f1": 100.0,
        "total exact": 100.0, "total f1": 100.0, "total": 2}
    perturbed = tmp_path / "perturbed.json"
    perturbed.write_text(json.dumps([{"question_id": "00ad8c3df9fa9da0", "pred": "the Aden"},
                                     {"question_id": "00c4fbc89bffe739", "pred": "Moroccan"}]), "utf-8")
    # "the Aden" -> [aden] vs [gulf, of, aden]: P 1, R 1/3, F1 0.5; "Moroccan" shares no token with "Morocco"
    assert run_eval(EvalConfig(dataset="hybridqa", predictions=str(perturbed), gold=str(reference))) == {
        "table exact": 0.0, "table f1": 0.0, "passage exact": 0.0, "passage f1": 50.0,
        "total exact": 0.0, "total f1": 25.0, "total": 2}


def test_linking_tfidf_equals_scikit_learn(tables: Path) -> None:
    """The linker's 20-line TF-IDF is scikit-learn's TfidfVectorizer (sublinear tf, smoothed idf, l2 norm) over
    the same n-grams; kept by hand so HybridQA linking needs no scikit-learn, checked here against it."""
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    from odqa.datasets.hybridqa_linking import _SENTENCE, _TfIdf

    table = load_table(tables, SOMALI)
    sentences = [s for link in table.cells_linking() for s in _SENTENCE.split(table.passages[link]) if s.strip()]
    ours = _TfIdf(sentences, sizes=(2, 3))
    vectorizer = sklearn_text.TfidfVectorizer(analyzer=lambda text: list(ours._grams(text).elements()),
                                              sublinear_tf=True)
    matrix = vectorizer.fit_transform(sentences)
    best = 0.0
    for question in ("Which gulf is north of the Somalian city with 550,000 residents?", sentences[5], sentences[9]):
        expected = (matrix @ vectorizer.transform([question]).T).toarray().ravel()
        assert ours.similarities(question) == pytest.approx(list(expected), abs=1e-12)
        best = max(best, *expected)
    assert best > 0.5
