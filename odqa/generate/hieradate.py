"""HieraDate probing questions (paper 000, Table 1) from two people's dates of birth and death.

Input, one JSON object per line::

    {"id": "q1", "question": "Who lived longer, Maceo Anderson or Jacek Karpiński?",
     "entities": [
       {"entity": "Maceo Anderson", "date_of_birth": "September 3, 1910", "date_of_death": "July 4, 2001"},
       {"entity": "Jacek Karpiński", "date_of_birth": "9 April 1927", "date_of_death": "21 February 2010"}]}

``question`` may be replaced by ``"comparison": "lived longer"`` (a phrase of :data:`COMPARISONS`).
``context`` (``[[title, [sentence, ...]], ...]``) is copied through, or built from the dates when absent.
Output records use the HieraDate keys: ``ques_extract_k``/``ans_extract_k``/``ans_extract_k_date``,
``ques_reason_k``/``ans_reason_k``, ``ques_robust``/``ans_robust``. Extraction answers keep each date as the
source wrote it; reasoning questions write dates as the released generator does (``May 09, 1991``, Table 8).
"""

from __future__ import annotations

import calendar
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from odqa.dates import Age, PartialDate, age_between, parse_date
from odqa.errors import FormatError
from odqa.io import read_jsonl

__all__ = [
    "COMPARISONS",
    "Comparison",
    "DatePair",
    "HieraDateConfig",
    "Person",
    "hieradate_probes",
    "pair_from_dict",
    "read_date_pairs",
]

Field = Literal["birth", "death", "age"]

EXTRACT_BIRTH = (
    "What is the birth date of #name?",
    "What's the birth date of #name?",
    "What is the date of birth of #name?",
    "What's the date of birth of #name?",
    "When was #name born?",
)
EXTRACT_DEATH = (
    "What is the death date of #name?",
    "What's the death date of #name?",
    "What is the date of death of #name?",
    "What's the date of death of #name?",
    "When did #name die?",
)
REASON_BEFORE = "Does #date1 come before #date2?"
REASON_AFTER = "Does #date1 come after #date2?"
REASON_AGE = "How old was #name when they died?"
REASON_YOUNGER = "Is a #age1 person younger than a #age2 person?"
REASON_OLDER = "Is a #age1 person older than a #age2 person?"


@dataclass(frozen=True, slots=True)
class Comparison:
    """What a main-question phrase compares, which person it picks, and its robustness counterpart."""

    field: Field
    pick_larger: bool  # the answer is the person with the later date (or the longer life)
    opposite: str  # the robustness phrase (Table 1, right-hand side)
    clause: str  # how the main question says it: "Who <clause>, A or B?"


#: Main-question phrases (Table 1, left-hand side) and what each compares.
COMPARISONS: Mapping[str, Comparison] = {
    "born first": Comparison("birth", False, "born later", "was born first"),
    "born earlier": Comparison("birth", False, "born later", "was born earlier"),
    "born later": Comparison("birth", True, "born first", "was born later"),
    "died first": Comparison("death", False, "died later", "died first"),
    "died earlier": Comparison("death", False, "died later", "died earlier"),
    "died later": Comparison("death", True, "died first", "died later"),
    "died second": Comparison("death", True, "died first", "died second"),
    "died last": Comparison("death", True, "died first", "died last"),
    "died more recently": Comparison("death", True, "died first", "died more recently"),
    "lived longer": Comparison("age", True, "lived shorter", "lived longer"),
    "lived shorter": Comparison("age", False, "lived longer", "lived shorter"),
}
_ISO = re.compile(r"\d{1,4}-\d{1,2}(?:-\d{1,2})?")  # machine-written dates are rendered, not copied
_PHRASE = re.compile("|".join(map(re.escape, sorted(COMPARISONS, key=len, reverse=True))), re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Person:
    """A person with a date of birth, a date of death when known, and each date as the source wrote it.

    ISO dates (``1910-09-03``) are not kept as written: answers and built contexts show them rendered in words.
    """

    name: str
    birth: PartialDate
    death: PartialDate | None = None
    birth_text: str | None = None
    death_text: str | None = None

    def date(self, field: Literal["birth", "death"]) -> PartialDate:
        """The date of birth or of death; a missing date of death raises :class:`ValueError`."""
        date = self.birth if field == "birth" else self.death
        if date is None:
            raise ValueError(f"{self.name} has no date of {field}")
        return date

    def written(self, field: Literal["birth", "death"]) -> str:
        """The date as the source wrote it (or rendered at its precision when given as an object)."""
        text = self.birth_text if field == "birth" else self.death_text
        return text or self.date(field).text()

    def age(self) -> Age:
        """Age at death in years, months and days, missing month/day counted as 1."""
        return age_between(self.birth.filled(), self.date("death").filled())


@dataclass(frozen=True, slots=True)
class DatePair:
    """One HieraDate main question: a comparison between two people."""

    id: str
    question: str
    phrase: str
    first: Person
    second: Person
    context: tuple[tuple[str, tuple[str, ...]], ...] | None = None


def read_date_pairs(path: str | Path) -> Iterator[DatePair]:
    """Read the input JSON Lines (schema in the module docstring); a bad line raises with its line number."""
    for number, obj in read_jsonl(path):
        yield pair_from_dict(obj, path=path, line=number, index=number - 1)


def pair_from_dict(
    obj: Mapping[str, Any], *, path: str | Path = "<input>", line: int | None = None, index: int = 0
) -> DatePair:
    """Validate one input object into a :class:`DatePair`."""
    entities = obj.get("entities")
    if not isinstance(entities, list) or len(entities) != 2:
        raise FormatError(f"'entities' must list exactly two people, got {entities!r}", path=path, line=line)
    first, second = (_person(e, path, line) for e in entities)
    question, phrase = _question_and_phrase(obj, first.name, second.name, path, line)
    comparison = COMPARISONS[phrase]
    if comparison.field != "birth" and (first.death is None or second.death is None):
        raise FormatError(f"'{phrase}' compares dates of death: both entities need 'date_of_death'",
                          path=path, line=line)
    qid = next((str(obj[k]) for k in ("id", "_id") if obj.get(k) not in (None, "")), f"hieradate-{index}")
    return DatePair(qid, question, phrase, first, second, _context(obj.get("context"), path, line))


def _person(obj: Any, path: str | Path, line: int | None) -> Person:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("entity"), str) or not obj["entity"].strip():
        raise FormatError(f"each entity needs an 'entity' name and 'date_of_birth', got {obj!r}", path=path,
                          line=line)
    dates: dict[str, PartialDate | None] = {}
    for key in ("date_of_birth", "date_of_death"):
        raw = obj.get(key)
        try:
            dates[key] = None if raw in (None, "") else parse_date(raw)
        except ValueError as exc:
            raise FormatError(f"{obj['entity']}: bad {key}: {exc}", path=path, line=line) from exc
    birth, death = dates["date_of_birth"], dates["date_of_death"]
    if birth is None:
        raise FormatError(f"{obj['entity']}: 'date_of_birth' is required", path=path, line=line)
    if death is not None and death.filled() < birth.filled():
        raise FormatError(f"{obj['entity']}: date of death {death.text()} is before date of birth "
                          f"{birth.text()}", path=path, line=line)
    texts = {k: v.strip() if isinstance(v := obj.get(k), str) and not _ISO.fullmatch(v.strip()) else None
             for k in ("date_of_birth", "date_of_death")}
    return Person(obj["entity"].strip(), birth, death, texts["date_of_birth"], texts["date_of_death"])


def _question_and_phrase(
    obj: Mapping[str, Any], name1: str, name2: str, path: str | Path, line: int | None
) -> tuple[str, str]:
    valid = ", ".join(repr(p) for p in COMPARISONS)
    question = obj.get("question")
    if isinstance(question, str) and question.strip():
        match = _PHRASE.search(question)
        if match is None:
            raise FormatError(f"question {question!r} uses none of the comparison phrases {valid}",
                              path=path, line=line)
        return question.strip(), match.group(0).lower()
    phrase = str(obj.get("comparison", "")).strip().lower()
    if phrase not in COMPARISONS:
        raise FormatError(f"give a 'question' or a 'comparison' (one of {valid}); "
                          f"got {obj.get('comparison')!r}", path=path, line=line)
    return f"Who {COMPARISONS[phrase].clause}, {name1} or {name2}?", phrase


def _context(raw: Any, path: str | Path, line: int | None) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(_is_paragraph(p) for p in raw):
        raise FormatError(f"'context' must be [[title, [sentence, ...]], ...], got {str(raw)[:80]}", path=path,
                          line=line)
    return tuple((title, tuple(sentences)) for title, sentences in raw)


def _is_paragraph(raw: Any) -> bool:
    return (isinstance(raw, list) and len(raw) == 2 and isinstance(raw[0], str) and isinstance(raw[1], list)
            and all(isinstance(s, str) for s in raw[1]))


@dataclass(frozen=True, slots=True)
class HieraDateConfig:
    """Options of :func:`hieradate_probes`: the year-only version, and the seed for template choice."""

    year_only: bool = False
    seed: int = 0


def hieradate_probes(
    pairs: Iterable[DatePair], config: HieraDateConfig = HieraDateConfig()
) -> Iterator[dict[str, Any]]:
    """One HieraDate record per pair: main question and answer, extraction, reasoning and robustness probes.

    Templates are drawn with ``random.Random(config.seed)``: the same seed gives the same output. The
    year-only version (paper 000) asks the reasoning questions with years only; an age is then the whole years
    of the exact age (90 for Maceo Anderson, not 2001 - 1910; Table 8: 83, not 84) with month and day 0: they
    are parts of a span, not missing date parts (those count as 1, appendix B.2, before any arithmetic). A
    pair whose compared values are equal has no answer: :class:`FormatError`.
    """
    rng = random.Random(config.seed)
    for pair in pairs:
        yield _probe(pair, rng, config.year_only)


def _probe(pair: DatePair, rng: random.Random, year_only: bool) -> dict[str, Any]:
    comparison = COMPARISONS[pair.phrase]
    people = (pair.first, pair.second)
    keys = [_sort_key(p, comparison.field) for p in people]
    if keys[0] == keys[1]:
        raise FormatError(f"{pair.id}: {pair.first.name} and {pair.second.name} have the same "
                          f"{comparison.field}; '{pair.phrase}' has no answer, drop this pair")
    larger = 0 if keys[0] > keys[1] else 1
    winner = people[larger if comparison.pick_larger else 1 - larger]
    loser = people[1 - people.index(winner)]
    record: dict[str, Any] = {
        "_id": pair.id,
        "type": "combined" if comparison.field == "age" else "comparison",
        "version": "year-only" if year_only else "full-date",
        "question": pair.question,
        "answer": winner.name,
        "context": [[t, list(s)] for t, s in pair.context or _default_context(people)],
    }
    fields: tuple[Literal["birth", "death"], ...] = (
        ("birth", "death") if comparison.field == "age" else (comparison.field,)
    )
    number = 0
    for person in people:
        for field in fields:
            number += 1
            templates = EXTRACT_BIRTH if field == "birth" else EXTRACT_DEATH
            record[f"ques_extract_{number}"] = rng.choice(templates).replace("#name", person.name)
            record[f"ans_extract_{number}"] = person.written(field)
            record[f"ans_extract_{number}_date"] = person.date(field).as_dict()
    reasoning = _age_reasoning(people, rng, year_only) if comparison.field == "age" else \
        _date_reasoning(people, comparison.field, year_only)
    for number, (question, answer) in enumerate(reasoning, start=1):
        record[f"ques_reason_{number}"] = question
        record[f"ans_reason_{number}"] = answer
    record["ques_robust"] = _swap_phrase(pair.question, comparison.opposite)
    record["ans_robust"] = loser.name
    return record


def _sort_key(person: Person, field: Field) -> tuple[int, int, int]:
    if field == "age":
        age = person.age()
        return (age.years, age.months, age.days)
    filled = person.date(field).filled()
    return (filled.year, filled.month, filled.day)


def _date_reasoning(
    people: Sequence[Person], field: Literal["birth", "death"], year_only: bool
) -> list[tuple[str, str]]:
    dates = [p.date(field) for p in people]
    if year_only:
        texts = [str(d.year) for d in dates]
        first, second = dates[0].year, dates[1].year
        before, after = first < second, first > second
    else:
        texts = [_reason_date(d) for d in dates]
        before, after = dates[0].filled() < dates[1].filled(), dates[0].filled() > dates[1].filled()
    fill = {"#date1": texts[0], "#date2": texts[1]}
    return [(_fill(REASON_BEFORE, fill), _yes_no(before)), (_fill(REASON_AFTER, fill), _yes_no(after))]


def _reason_date(date: PartialDate) -> str:
    """A date as the released generator writes reasoning questions, whatever the paragraph's form: 'May 09,
    1991' (zero-padded day, paper 000 Table 8), 'May 1992', '1718'."""
    if date.month is None or date.day is None:
        return date.text()
    return f"{calendar.month_name[date.month]} {date.day:02d}, {date.year}"


def _age_reasoning(people: Sequence[Person], rng: random.Random, year_only: bool) -> list[tuple[str, Any]]:
    ages = [p.age() for p in people]
    steps: list[tuple[str, Any]] = []
    for person, age in zip(people, ages, strict=True):
        months, days = (0, 0) if year_only else (age.months, age.days)
        answer = {"year": age.years, "month": months, "day": days}
        steps.append((REASON_AGE.replace("#name", person.name), answer))
    first, second = ((a.years,) if year_only else (a.years, a.months, a.days) for a in ages)
    younger = rng.random() < 0.5
    template = REASON_YOUNGER if younger else REASON_OLDER
    texts = [a.text(year_only=year_only) for a in ages]
    question = _fill(template, {"#age1": texts[0], "#age2": texts[1]})
    steps.append((question, _yes_no(first < second if younger else first > second)))
    return steps


def _default_context(people: Sequence[Person]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    paragraphs = []
    for person in people:
        span = person.written("birth") + (f" – {person.written('death')}" if person.death else "")
        paragraphs.append((person.name, (f"{person.name} ({span}).",)))
    return tuple(paragraphs)


def _swap_phrase(question: str, opposite: str) -> str:
    match = _PHRASE.search(question)
    if match is None:
        raise ValueError(f"question {question!r} holds no comparison phrase")
    found = match.group(0)
    replacement = opposite.capitalize() if found[0].isupper() else opposite
    return question[: match.start()] + replacement + question[match.end():]


def _fill(template: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        template = template.replace(key, value)
    return template


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"
