"""Complex-TR pseudo-instruction data (paper 004, 3.1): shift range, fictional names, resampling, seeds."""

from __future__ import annotations

import datetime
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from odqa.errors import ConfigError, FormatError, InputError
from odqa.generate.names import KINDS, fictional_pool, sample_names
from odqa.generate.pseudo import (
    PseudoConfig,
    TemporalFact,
    pseudo_instruction_data,
    read_temporal_facts,
    resampling_probabilities,
    time_bin,
)

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_SPAN = re.compile(r"^(?P<who>.+?) (?P<verb>worked for|studied at|received) (?P<what>.+?) "
                   r"(?:from (?P<start>\w+ -?\d+) to (?P<end>\w+ -?\d+)|in (?P<at>\w+ -?\d+))\.$")

KRAMERS = [  # paper 004, Figure 2 (Hans Kramers), plus an education and an award
    {"subject": "Hans Kramers", "relation": "P108", "object": "Leiden University", "start": "1934-01",
     "end": "1952-01"},
    {"subject": "Hans Kramers", "relation": "P108", "object": "Utrecht University", "start": "1926-01",
     "end": "1934-01"},
    {"subject": "Hans Kramers", "relation": "employer", "object": "Delft University of Technology",
     "start": "January 1931", "end": "January 1952"},
    {"subject": "Hans Kramers", "relation": "P69", "object": "Leiden University", "start": "1912",
     "end": "1919"},
    {"subject": "Hans Kramers", "relation": "award received", "object": "Lorentz Medal", "start": "1947"},
]


def write_facts(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def month(text: str) -> int:
    name, year = text.split()
    return int(year) * 12 + _MONTHS.index(name)


def spans(context: str) -> list[tuple[str, str, int, int]]:
    """(verb, object, start, end) of every fact line of a fact_context."""
    out = []
    for line in context.splitlines():
        match = _SPAN.match(line)
        assert match, line
        start = month(match["start"] or match["at"])
        out.append((match["verb"], match["what"], start, month(match["end"]) if match["end"] else start))
    return out


@pytest.fixture
def kramers(tmp_path: Path) -> list[TemporalFact]:
    return read_temporal_facts(write_facts(tmp_path / "facts.jsonl", KRAMERS))


def test_same_seed_same_output_other_seed_differs(kramers: list[TemporalFact]) -> None:
    run = list(pseudo_instruction_data(kramers, PseudoConfig(seed=5, n=40)))
    assert len(run) == 40
    assert run == list(pseudo_instruction_data(kramers, PseudoConfig(seed=5, n=40)))
    assert run != list(pseudo_instruction_data(kramers, PseudoConfig(seed=6, n=40)))


def test_shift_stays_in_range_and_moves_every_fact_of_the_group(kramers: list[TemporalFact]) -> None:
    originals = sorted((f.start, f.end) for f in kramers)
    shifts = set()
    for record in pseudo_instruction_data(kramers, PseudoConfig(seed=1, n=3000, resample=False)):
        shift = record["shift"]
        assert -100 <= shift <= 20
        shifted = sorted((start - 12 * shift, end - 12 * shift) for _, _, start, end in
                         spans(record["fact_context"]))
        assert shifted == originals
        shifts.add(shift)
    assert min(shifts) <= -90 and max(shifts) >= 10  # both ends of [-100, +20] are reached


def test_real_names_are_replaced_by_fictional_ones(kramers: list[TemporalFact]) -> None:
    real = {"Hans Kramers", "Leiden University", "Utrecht University", "Delft University of Technology",
            "Lorentz Medal"}
    people, awards = set(fictional_pool("person")), set(fictional_pool("award"))
    for record in pseudo_instruction_data(kramers, PseudoConfig(seed=2, n=200)):
        text = record["question"] + record["fact_context"] + " ".join(record["text_answers"]["text"])
        assert not any(name in text for name in real)
        facts = spans(record["fact_context"])
        assert record["fact_context"].split(" worked for ")[0] in people
        assert {what for verb, what, _, _ in facts if verb == "received"} <= awards
        # one employer entity keeps one fictional name across the group; the school is a school name
        assert len({what for verb, what, _, _ in facts if verb == "worked for"}) == 3


def test_point_in_time_answers_match_the_fact_context(kramers: list[TemporalFact]) -> None:
    checked = 0
    for record in pseudo_instruction_data(kramers, PseudoConfig(seed=3, n=500, resample=False)):
        match = re.fullmatch(r"Which employer did .+ work for in (\w+ -?\d+)\?", record["question"])
        if not match:
            continue
        when = month(match[1])
        facts = sorted(spans(record["fact_context"]), key=lambda s: s[2])
        expected = [what for verb, what, start, end in facts if verb == "worked for" and start <= when <= end]
        assert record["text_answers"]["text"] == expected
        assert record["id"].startswith("L2_")
        checked += 1
    assert checked > 20


_SHIFTED = re.compile(r"Which employer did .+ work for (?:(?P<years>\d+) years?)?(?: and )?"
                      r"(?:(?P<months>\d+) months?)? (?P<side>after|before) he/she "
                      r"(?P<verb>worked for|studied at|received) (?P<what>.+)\?")


def test_l3_shifted_event_questions_match_the_fact_context(kramers: list[TemporalFact]) -> None:
    """Table 12 (P108): 'Which employer did s work for Δt after he/she studied at o?': Δt after the event's end
    (or before its start); ``date`` is that query time, as Complex-TR writes it."""
    checked = 0
    for record in pseudo_instruction_data(kramers, PseudoConfig(seed=8, n=1500, resample=False)):
        match = _SHIFTED.fullmatch(record["question"])
        if not match:
            continue
        delta = 12 * int(match["years"] or 0) + int(match["months"] or 0)
        facts = spans(record["fact_context"])
        [(start, end)] = [(s, e) for verb, what, s, e in facts if (verb, what) == (match["verb"], match["what"])]
        when = end + delta if match["side"] == "after" else start - delta
        expected = [what for verb, what, s, e in sorted(facts, key=lambda f: (f[2], f[1]))
                    if verb == "worked for" and s <= when <= e]
        assert record["text_answers"]["text"] == expected and expected
        assert record["date"] == f"{_MONTHS[when % 12]} 01 {when // 12:04d}"
        assert record["id"].startswith("L3M_")
        checked += 1
    assert checked > 10


def test_date_is_in_the_form_complex_tr_analysis_parses(kramers: list[TemporalFact]) -> None:
    for record in pseudo_instruction_data(kramers, PseudoConfig(seed=3, n=300, resample=False)):
        parsed = datetime.datetime.strptime(record["date"], "%B %d %Y")  # Prompt_Experiments.ipynb's format
        point = re.fullmatch(r"Which .+ in (\w+) (\d+)\?", record["question"])
        if point:
            assert (parsed.month, parsed.day, parsed.year) == (_MONTHS.index(point[1]) + 1, 1, int(point[2]))


def test_ids_give_level_and_hops_and_load_as_complex_tr(tmp_path: Path, kramers: list[TemporalFact]) -> None:
    from odqa.datasets.complex_tr import load_complex_tr, parse_complex_tr_id
    from odqa.io import write_jsonl

    records = list(pseudo_instruction_data(kramers, PseudoConfig(seed=4, resample=False)))
    kinds = Counter(parse_complex_tr_id(r["id"]) for r in records)
    assert set(kinds) == {("L2", "1-hop"), ("L2", "multi-hop"), ("L3", "1-hop"), ("L3", "multi-hop")}
    out = tmp_path / "pseudo.jsonl"
    write_jsonl(out, records)
    examples = list(load_complex_tr(out))
    assert [e.answers for e in examples] == [tuple(r["text_answers"]["text"]) for r in records]


def test_resampling_probabilities_follow_the_formula() -> None:
    years = [1850] * 10 + [1905] * 40 + [1930] * 20 + [2010] * 40 + [2021] * 99
    assert resampling_probabilities(years) == (0.75, 0.0, 0.5, 1.0, 1.0, 1.0, 0.0)
    assert [time_bin(y) for y in (1899, 1900, 1919, 1920, 2019, 2020)] == [0, 1, 1, 2, 6, None]


def test_resampling_drops_the_most_frequent_bin_and_upsamples_rare_ones(tmp_path: Path) -> None:
    rows = []
    for i in range(30):  # many subjects in 2000-2019, few in the 1900s
        start = 2000 + i % 15 if i < 27 else 1905 + i
        rows.append({"subject": f"P{i}", "relation": "P54", "object": f"T{i}", "start": str(start),
                     "end": str(start + 3)})
        rows.append({"subject": f"P{i}", "relation": "P54", "object": f"U{i}", "start": str(start + 3),
                     "end": str(start + 5)})
    facts = read_temporal_facts(write_facts(tmp_path / "facts.jsonl", rows))

    def bins(resample: bool) -> Counter[int | None]:
        config = PseudoConfig(seed=0, n=1500, resample=resample)
        return Counter(time_bin(int(r["date"].split()[-1])) for r in pseudo_instruction_data(facts, config))

    plain, resampled = bins(False), bins(True)
    assert plain[6] > 200 and resampled[6] == 0  # P = 0 for 2000-2019, the bin of most input questions
    for rare in (0, 1, 4, None):  # P = 1: before 1900, 1900-1919, 1960-1979 and from 2020 on
        assert resampled[rare] > plain[rare]


def test_resampling_that_keeps_nothing_says_why(tmp_path: Path) -> None:
    rows = [{"subject": "A", "relation": "P54", "object": "B", "start": "2005", "end": "2006"}]
    facts = read_temporal_facts(write_facts(tmp_path / "facts.jsonl", rows))
    with pytest.raises(InputError, match="P_i = 0"):
        list(pseudo_instruction_data(facts, PseudoConfig(seed=0, min_shift=0, max_shift=0)))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"subject": "A", "relation": "P999", "object": "B", "start": "2000"}, "unknown relation 'P999'"),
        ({"subject": "A", "relation": "P54", "object": "B", "start": "2000", "end": "1990"}, "before start"),
        ({"subject": "A", "relation": "P54", "object": "B", "start": "soon"}, "valid forms"),
        ({"subject": "A", "object": "B", "start": "2000"}, "got the keys"),
    ],
)
def test_bad_facts_name_the_line_and_the_fix(tmp_path: Path, row: dict[str, Any], message: str) -> None:
    path = write_facts(tmp_path / "facts.jsonl", [KRAMERS[0], row])
    with pytest.raises(FormatError, match=message) as info:
        read_temporal_facts(path)
    assert info.value.line == 2


def test_shift_never_moves_a_question_time_before_year_1(tmp_path: Path) -> None:
    rows = [{"subject": "A", "relation": "P54", "object": "B", "start": "3", "end": "8"},
            {"subject": "A", "relation": "P54", "object": "C", "start": "8", "end": "12"}]
    facts = read_temporal_facts(write_facts(tmp_path / "facts.jsonl", rows))
    records = list(pseudo_instruction_data(facts, PseudoConfig(seed=0, n=300, resample=False)))
    assert min(int(r["date"].split()[-1]) for r in records) >= 1 and min(r["shift"] for r in records) >= 8
    with pytest.raises(InputError, match="start in year 3: no shift up to 5 keeps"):
        list(pseudo_instruction_data(facts, PseudoConfig(seed=0, max_shift=5)))


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="min_shift"):
        PseudoConfig(min_shift=30, max_shift=20)
    with pytest.raises(ConfigError, match="positive"):
        PseudoConfig(n=0)


def test_name_pools_are_distinct_and_large_enough() -> None:
    for kind in KINDS:
        pool = fictional_pool(kind)
        assert len(pool) == len(set(pool)) >= 20
    rng = random.Random(0)
    assert len(set(sample_names("person", 500, rng))) == 500
    with pytest.raises(InputError, match="country name pool has only"):
        sample_names("country", 1000, rng)


def test_subject_with_more_entities_than_the_name_pool_is_an_input_error() -> None:
    pool = len(fictional_pool("award"))
    with pytest.raises(InputError, match=rf"subject 'Hans Kramers' has {pool + 1} distinct award entities.*"
                                         rf"pool has only {pool}; split that subject's facts"):
        sample_names("award", pool + 1, random.Random(0), subject="Hans Kramers")
    facts = [TemporalFact("Hans Kramers", "P166", f"Award {i}", 1900 * 12 + i, 1900 * 12 + i)
             for i in range(pool + 1)]
    with pytest.raises(InputError, match=rf"{pool + 1} distinct award entities.*pool has only {pool}"):
        list(pseudo_instruction_data(facts, PseudoConfig(n=1, seed=0)))
