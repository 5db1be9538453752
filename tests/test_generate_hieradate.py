"""HieraDate probe generation checked against the worked examples of paper 000 (Figures 1 and 2, Table 8)."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path
from typing import Any

import pytest

from odqa.dates import PartialDate, age_between, parse_date
from odqa.errors import FormatError
from odqa.generate.hieradate import (
    EXTRACT_BIRTH,
    EXTRACT_DEATH,
    HieraDateConfig,
    hieradate_probes,
    pair_from_dict,
    read_date_pairs,
)

MACEO = {"entity": "Maceo Anderson", "date_of_birth": "September 3, 1910", "date_of_death": "July 4, 2001"}
JACEK = {"entity": "Jacek Karpiński", "date_of_birth": "9 April 1927", "date_of_death": "21 February 2010"}
FIGURE_1 = {"id": "fig1", "question": "Who lived longer, Maceo Anderson or Jacek Karpiński?",
            "entities": [MACEO, JACEK]}
FIGURE_2 = {"id": "fig2", "question": "Who was born first, George Washington or Lawrence Washington?",
            "entities": [{"entity": "George Washington", "date_of_birth": "February 22, 1732",
                          "date_of_death": "December 14, 1799"},
                         {"entity": "Lawrence Washington", "date_of_birth": "1718", "date_of_death": "1752"}]}


def probe(obj: dict[str, Any], **options: Any) -> dict[str, Any]:
    return next(hieradate_probes([pair_from_dict(obj)], HieraDateConfig(**options)))


def test_figure_1_ages_are_exact_calendar_differences() -> None:
    record = probe(FIGURE_1)
    assert record["answer"] == "Maceo Anderson"
    assert record["type"] == "combined"
    assert record["ques_reason_1"] == "How old was Maceo Anderson when they died?"
    assert record["ans_reason_1"] == {"year": 90, "month": 10, "day": 1}
    assert record["ques_reason_2"] == "How old was Jacek Karpiński when they died?"
    assert record["ans_reason_2"] == {"year": 82, "month": 10, "day": 12}
    older = "Is a 90-year-10-month-1-day-old person older than a 82-year-10-month-12-day-old person?"
    younger = older.replace("older than", "younger than")
    assert (record["ques_reason_3"], record["ans_reason_3"]) in {(older, "yes"), (younger, "no")}
    assert record["ques_robust"] == "Who lived shorter, Maceo Anderson or Jacek Karpiński?"
    assert record["ans_robust"] == "Jacek Karpiński"


def test_figure_1_extraction_asks_both_dates_of_both_people() -> None:
    record = probe(FIGURE_1)
    expected = [("Maceo Anderson", EXTRACT_BIRTH, "September 3, 1910", {"year": 1910, "month": 9, "day": 3}),
                ("Maceo Anderson", EXTRACT_DEATH, "July 4, 2001", {"year": 2001, "month": 7, "day": 4}),
                ("Jacek Karpiński", EXTRACT_BIRTH, "9 April 1927", {"year": 1927, "month": 4, "day": 9}),
                ("Jacek Karpiński", EXTRACT_DEATH, "21 February 2010", {"year": 2010, "month": 2, "day": 21})]
    for k, (name, templates, text, parts) in enumerate(expected, start=1):
        assert record[f"ques_extract_{k}"] in {t.replace("#name", name) for t in templates}
        assert record[f"ans_extract_{k}"] == text
        assert record[f"ans_extract_{k}_date"] == parts
    assert "ques_extract_5" not in record


def test_figure_1_year_only_version() -> None:
    record = probe(FIGURE_1, year_only=True)
    assert record["version"] == "year-only"
    assert record["ans_reason_1"] == {"year": 90, "month": 0, "day": 0}
    assert record["ans_reason_2"] == {"year": 82, "month": 0, "day": 0}
    older = "Is a 90-year-old person older than a 82-year-old person?"
    younger = "Is a 90-year-old person younger than a 82-year-old person?"
    assert (record["ques_reason_3"], record["ans_reason_3"]) in {(older, "yes"), (younger, "no")}


def test_figure_2_comparison_uses_dates_as_written_and_defaults_month_and_day() -> None:
    record = probe(FIGURE_2)
    assert record["type"] == "comparison"
    assert record["answer"] == "Lawrence Washington"
    assert record["ques_reason_1"] == "Does February 22, 1732 come before 1718?"
    assert record["ans_reason_1"] == "no"
    assert record["ques_reason_2"] == "Does February 22, 1732 come after 1718?"
    assert record["ans_reason_2"] == "yes"
    assert record["ans_extract_2"] == "1718"
    assert record["ans_extract_2_date"] == {"year": 1718, "month": 1, "day": 1}
    assert record["ques_robust"] == "Who was born later, George Washington or Lawrence Washington?"
    assert record["ans_robust"] == "George Washington"


def test_figure_2_year_only_version() -> None:
    record = probe(FIGURE_2, year_only=True)
    assert record["ques_reason_1"] == "Does 1732 come before 1718?"
    assert record["ques_reason_2"] == "Does 1732 come after 1718?"
    assert (record["ans_reason_1"], record["ans_reason_2"]) == ("no", "yes")


def test_table_8_died_later_with_iso_input_and_generated_question() -> None:
    record = probe({"comparison": "died later", "entities": [
        {"entity": "Oliver A. Unger", "date_of_birth": "1914-08-28", "date_of_death": "1981-03-27"},
        {"entity": "Ross Story", "date_of_birth": "1920-01-16", "date_of_death": "1991-05-09"}]})
    assert record["question"] == "Who died later, Oliver A. Unger or Ross Story?"
    assert record["answer"] == "Ross Story"
    assert record["ques_reason_1"] == "Does March 27, 1981 come before May 09, 1991?"  # zero-padded, as printed
    assert record["ans_reason_1"] == "yes"
    assert record["ans_reason_2"] == "no"
    assert record["ques_robust"] == "Who died first, Oliver A. Unger or Ross Story?"
    assert record["context"] == [["Oliver A. Unger", ["Oliver A. Unger (August 28, 1914 – March 27, 1981)."]],
                                 ["Ross Story", ["Ross Story (January 16, 1920 – May 9, 1991)."]]]


def test_table_8_died_first_writes_dates_as_the_dataset_does_not_as_the_paragraph() -> None:
    lotte = {"entity": "Lotte Backes", "date_of_birth": "May 2, 1901", "date_of_death": "May 12, 1990"}
    willem = {"entity": "Willem van Haecht", "date_of_birth": "1593", "date_of_death": "12 July 1637"}
    question = {"question": "Who died first, Lotte Backes or Willem van Haecht?", "entities": [lotte, willem]}
    record = probe(question)
    assert record["answer"] == "Willem van Haecht"
    assert (record["ques_reason_1"], record["ans_reason_1"]) == ("Does May 12, 1990 come before July 12, 1637?", "no")
    assert (record["ques_reason_2"], record["ans_reason_2"]) == ("Does May 12, 1990 come after July 12, 1637?", "yes")
    assert record["ans_extract_2"] == "12 July 1637"  # extraction answers stay as written
    year_only = probe(question, year_only=True)
    assert [year_only[f"ques_reason_{k}"] for k in (1, 2)] == ["Does 1990 come before 1637?",
                                                                 "Does 1990 come after 1637?"]


def test_table_8_lived_longer_ages_full_and_year_only() -> None:
    question = {"question": "Who lived longer, Andrzej Markowski or François Missoffe?", "entities": [
        {"entity": "Andrzej Markowski", "date_of_birth": "22 August 1924", "date_of_death": "30 October 1986"},
        {"entity": "François Missoffe", "date_of_birth": "13 October 1919", "date_of_death": "28 August 2003"}]}
    record = probe(question)
    assert record["answer"] == "François Missoffe"
    assert record["ans_reason_1"] == {"year": 62, "month": 2, "day": 8}
    assert record["ans_reason_2"] == {"year": 83, "month": 10, "day": 15}
    older = "Is a 62-year-2-month-8-day-old person older than a 83-year-10-month-15-day-old person?"
    assert (record["ques_reason_3"], record["ans_reason_3"]) in {
        (older, "no"), (older.replace("older than", "younger than"), "yes")}
    year_only = probe(question, year_only=True)  # 83 whole years, not 2003 - 1919 = 84
    assert year_only["ans_reason_2"] == {"year": 83, "month": 0, "day": 0}
    assert year_only["ques_reason_3"] in {"Is a 62-year-old person older than a 83-year-old person?",
                                          "Is a 62-year-old person younger than a 83-year-old person?"}


@pytest.mark.parametrize(
    ("birth", "death", "age"),
    [
        ((1910, 9, 3), (2001, 7, 4), (90, 10, 1)),  # Figure 1, Maceo Anderson
        ((1927, 4, 9), (2010, 2, 21), (82, 10, 12)),  # Figure 1, Jacek Karpiński
        ((1924, 8, 22), (1986, 10, 30), (62, 2, 8)),  # Table 8, Andrzej Markowski
        ((1919, 10, 13), (2003, 8, 28), (83, 10, 15)),  # Table 8, François Missoffe
        ((2001, 1, 31), (2001, 3, 1), (0, 1, 1)),  # month-end clamping
        ((1904, 2, 29), (1905, 2, 28), (1, 0, 0)),  # leap day
    ],
)
def test_age_between_worked_examples(birth: tuple[int, int, int], death: tuple[int, int, int],
                                     age: tuple[int, int, int]) -> None:
    result = age_between(dt.date(*birth), dt.date(*death))
    assert (result.years, result.months, result.days) == age


def test_age_between_matches_dateutil_relativedelta() -> None:
    relativedelta = pytest.importorskip("dateutil.relativedelta").relativedelta
    rng = random.Random(7)
    for _ in range(2000):
        start = dt.date(1800, 1, 1) + dt.timedelta(days=rng.randrange(80000))
        end = start + dt.timedelta(days=rng.randrange(40000))
        ours, ref = age_between(start, end), relativedelta(end, start)
        assert (ours.years, ours.months, ours.days) == (ref.years, ref.months, ref.days), (start, end)


def test_missing_month_and_day_default_to_one() -> None:
    assert parse_date("1950").filled() == dt.date(1950, 1, 1)
    assert parse_date({"year": 1950, "month": 3, "day": 0}).filled() == dt.date(1950, 3, 1)
    record = probe({"comparison": "lived longer", "entities": [
        {"entity": "A", "date_of_birth": "1900", "date_of_death": "March 1950"},
        {"entity": "B", "date_of_birth": {"year": 1900, "month": 0, "day": 0}, "date_of_death": "1949"}]})
    assert record["ans_reason_1"] == {"year": 50, "month": 2, "day": 0}
    assert record["ans_reason_2"] == {"year": 49, "month": 0, "day": 0}
    assert record["ans_extract_1"] == "1900" and record["ans_extract_2"] == "March 1950"


def test_parse_date_rejects_impossible_dates_with_valid_forms() -> None:
    with pytest.raises(ValueError, match=r"outside 1\.\.28"):
        parse_date("February 30, 1901")
    with pytest.raises(ValueError, match="valid forms"):
        parse_date("the third of May")
    assert PartialDate(1992, 5).text() == "May 1992"


def test_same_seed_same_output_and_seed_changes_templates() -> None:
    pairs = [pair_from_dict(FIGURE_1 | {"id": str(i)}) for i in range(30)]
    first = list(hieradate_probes(pairs, HieraDateConfig(seed=3)))
    assert first == list(hieradate_probes(pairs, HieraDateConfig(seed=3)))
    other = list(hieradate_probes(pairs, HieraDateConfig(seed=4)))
    assert [r["ques_extract_1"] for r in first] != [r["ques_extract_1"] for r in other]
    assert len({r["ques_extract_1"] for r in first}) > 1  # the template really is drawn


def test_every_table_1_phrase_flips_for_robustness() -> None:
    cases = {"Who was born earlier, A or B?": "Who was born later, A or B?",
             "Who died more recently, A or B?": "Who died first, A or B?",
             "Who died last, A or B?": "Who died first, A or B?",
             "Who was born later, A or B?": "Who was born first, A or B?"}
    people = [{"entity": "A", "date_of_birth": "1900-01-01", "date_of_death": "1950-01-01"},
              {"entity": "B", "date_of_birth": "1901-01-01", "date_of_death": "1960-01-01"}]
    for question, robust in cases.items():
        record = probe({"question": question, "entities": people})
        assert record["ques_robust"] == robust
        assert {record["answer"], record["ans_robust"]} == {"A", "B"}


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (FIGURE_1 | {"question": "Who is taller, A or B?"}, "none of the comparison phrases"),
        ({"comparison": "died first",
          "entities": [{"entity": "A", "date_of_birth": "1900"}, {"entity": "B", "date_of_birth": "1901"}]},
         "date_of_death"),
        ({"comparison": "born first", "entities": [MACEO]}, "exactly two"),
        ({"comparison": "born first", "entities": [MACEO | {"date_of_birth": "Smarch 3, 1910"}, JACEK]},
         "bad date_of_birth"),
        (FIGURE_1 | {"context": [["Maceo Anderson", "one sentence, not a list"]]}, "'context' must be"),
    ],
)
def test_bad_records_say_what_is_wrong(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        pair_from_dict(obj)


def test_a_tie_has_no_answer(tmp_path: Path) -> None:
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"comparison": "born first", "entities": [MACEO, MACEO | {"entity": "Twin"}]})
                    + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match="same birth"):
        list(hieradate_probes(read_date_pairs(path)))


def test_output_loads_with_the_hieradate_loader(tmp_path: Path) -> None:
    from odqa.datasets.hieradate import load_hieradate
    from odqa.io import write_jsonl

    out = tmp_path / "probes.jsonl"
    write_jsonl(out, hieradate_probes([pair_from_dict(FIGURE_1), pair_from_dict(FIGURE_2)]))
    examples = list(load_hieradate(out))
    assert [e.answers for e in examples] == [("Maceo Anderson",), ("Lawrence Washington",)]
    assert examples[0].meta["probes"]["ans_reason_1"] == {"year": 90, "month": 10, "day": 1}
