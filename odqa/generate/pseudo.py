"""Complex-TR pseudo-instruction data (paper 004, section 3.1): shifted, fictional facts and questions.

Input, one temporal fact per line (a Wikidata quintuple ``(s, r, o, t_s, t_e)``)::

    {"subject": "Hans Kramers", "relation": "P108", "object": "Leiden University",
     "start": "1934-01", "end": "1952-01"}

``relation`` is a property id or label of :data:`RELATIONS`; ``start``/``end`` are dates at year, month or day
precision (a missing month counts as January); ``end`` defaults to ``start`` (a point in time, e.g. an award).

Per subject group and per pass: one random shift ``Δt`` in [-100, +20] years for every fact of the group,
every subject and object replaced by a fictional name, then L2/L3 questions from the templates, each kept
with the probability ``P_i = 1 - n_i / max(n)`` of its reference year's bin (20-year bins from 1900 to 2020,
one bin before 1900; ``n_i`` counted over the questions of the unshifted input; 1 from 2020 on).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from odqa.dates import parse_date
from odqa.errors import ConfigError, FormatError, InputError
from odqa.generate.names import EntityKind, sample_names
from odqa.io import read_jsonl

__all__ = [
    "RELATIONS",
    "PseudoConfig",
    "PseudoQuestion",
    "Relation",
    "TemporalFact",
    "pseudo_instruction_data",
    "questions_for",
    "read_temporal_facts",
    "resampling_probabilities",
    "time_bin",
]

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
                "October", "November", "December")
#: Left edges of the 20-year bins; years before the first edge form bin 0, years from ``_BINS_END`` on no bin.
_BIN_EDGES = (1900, 1920, 1940, 1960, 1980, 2000)
_BINS_END = 2020
#: The largest ``Δt`` (in months) a question puts between a fact and the time it asks about.
_MAX_DELTA = 120


@dataclass(frozen=True, slots=True)
class Relation:
    """How one Wikidata property is asked about and stated (paper 004, Table 12)."""

    pid: str
    label: str
    subject_kind: EntityKind
    object_kind: EntityKind
    ask: str  # question stem, "{s}" = subject
    state: str  # declarative fact, "{s}" and "{o}"
    during: str  # L3 clause for "when ...", "{o}" = object


def _rel(
    pid: str, label: str, kinds: tuple[EntityKind, EntityKind], ask: str, state: str, during: str
) -> Relation:
    return Relation(pid, label, kinds[0], kinds[1], ask, state, during)


#: The 14 temporal properties of Complex-TR, keyed by property id.
RELATIONS: Mapping[str, Relation] = {r.pid: r for r in (
    _rel("P54", "member of sports team", ("person", "team"), "Which team did {s} play for",
         "{s} played for {o}", "he/she was playing for {o}"),
    _rel("P39", "position held", ("person", "position"), "Which position did {s} hold",
         "{s} held the position of {o}", "he/she held the position of {o}"),
    _rel("P108", "employer", ("person", "company"), "Which employer did {s} work for",
         "{s} worked for {o}", "he/she was working for {o}"),
    _rel("P102", "member of political party", ("person", "party"), "Which political party did {s} belong to",
         "{s} was a member of {o}", "he/she was a member of {o}"),
    _rel("P286", "head coach", ("team", "person"), "Who was the head coach of {s}",
         "{o} was the head coach of {s}", "{o} was the head coach"),
    _rel("P69", "educated at", ("person", "school"), "Where was {s} educated",
         "{s} studied at {o}", "he/she was studying at {o}"),
    _rel("P488", "chairperson", ("company", "person"), "Who was the chair of {s}",
         "{o} was the chair of {s}", "{o} was the chair"),
    _rel("P6", "head of government", ("town", "person"), "Who was the head of the government of {s}",
         "{o} was the head of the government of {s}", "{o} was the head of the government"),
    _rel("P35", "head of state", ("country", "person"), "Who was the head of state of {s}",
         "{o} was the head of state of {s}", "{o} was the head of state"),
    _rel("P127", "owned by", ("company", "person"), "Who was the owner of {s}",
         "{s} was owned by {o}", "{o} was the owner"),
    _rel("P26", "spouse", ("person", "person"), "Who was {s} married to",
         "{s} was married to {o}", "he/she was married to {o}"),
    _rel("P166", "award received", ("person", "award"), "Which award did {s} receive",
         "{s} received {o}", "he/she received {o}"),
    _rel("P937", "work location", ("person", "town"), "Where did {s} work",
         "{s} worked in {o}", "he/she was working in {o}"),
    _rel("P551", "residence", ("person", "town"), "Where did {s} live",
         "{s} lived in {o}", "he/she was living in {o}"),
)}
_BY_LABEL = {r.label: r.pid for r in RELATIONS.values()}


@dataclass(frozen=True, slots=True)
class TemporalFact:
    """A temporal quintuple; times are month indexes (``year * 12 + month - 1``), both ends inclusive."""

    subject: str
    relation: str
    object: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class PseudoQuestion:
    """One generated question with its answers (chronological) and its reference time (a month index)."""

    level: Literal["L2", "L3"]
    hops: Literal["1-hop", "multi-hop"]
    relation: str
    question: str
    answers: tuple[str, ...]
    reference: int


@dataclass(frozen=True, slots=True)
class PseudoConfig:
    """Options of :func:`pseudo_instruction_data`; ``n=None`` makes one pass over the groups."""

    seed: int = 0
    n: int | None = None
    min_shift: int = -100
    max_shift: int = 20
    resample: bool = True

    def __post_init__(self) -> None:
        if self.min_shift > self.max_shift:
            raise ConfigError(f"min_shift {self.min_shift} is above max_shift {self.max_shift}; "
                              "the paper uses -100 and +20")
        if self.n is not None and self.n < 1:
            raise ConfigError(f"n must be a positive number of examples, got {self.n}")


def read_temporal_facts(path: str | Path) -> list[TemporalFact]:
    """Read temporal facts (schema in the module docstring); a bad line raises with its line number."""
    facts = [_fact(obj, path, number) for number, obj in read_jsonl(path)]
    if not facts:
        raise InputError(f"{path}: no temporal facts; expected JSON Lines of "
                         "{subject, relation, object, start, end}")
    return facts


def _fact(obj: Mapping[str, Any], path: str | Path, line: int) -> TemporalFact:
    names = [obj.get(k) for k in ("subject", "relation", "object")]
    if not all(isinstance(v, str) and v.strip() for v in names):
        raise FormatError(f"a fact needs 'subject', 'relation' and 'object' strings; got the keys "
                          f"{sorted(obj)} (schema: {{subject, relation, object, start, end?}})", path=path,
                          line=line)
    subject, relation, obj_name = (str(v).strip() for v in names)
    pid = relation if relation in RELATIONS else _BY_LABEL.get(relation.lower())
    if pid is None:
        valid = ", ".join(f"{r.pid} ({r.label})" for r in RELATIONS.values())
        raise FormatError(f"unknown relation {relation!r}; valid: {valid}", path=path, line=line)
    try:
        start = parse_date(obj.get("start"))
        end = start if obj.get("end") in (None, "") else parse_date(obj["end"])
    except ValueError as exc:
        raise FormatError(f"bad 'start'/'end': {exc}", path=path, line=line) from exc
    first, last = (d.year * 12 + (d.month or 1) - 1 for d in (start, end))
    if last < first:
        raise FormatError(f"end {end.text()} is before start {start.text()}", path=path, line=line)
    return TemporalFact(subject, pid, obj_name, first, last)


def _month_text(month: int) -> str:
    """'May 1872' for a month index."""
    year, index = divmod(month, 12)
    return f"{_MONTH_NAMES[index]} {year}"


def _date_field(month: int) -> str:
    """Complex-TR's ``date`` for a month index: 'May 01 1872' (``%B %d %Y``, the form its analysis parses)."""
    year, index = divmod(month, 12)
    return f"{_MONTH_NAMES[index]} 01 {year:04d}"


def time_bin(year: int) -> int | None:
    """The resampling bin of ``year``: 0 before 1900, 1..6 for 1900-1919 .. 2000-2019, None from 2020 on."""
    if year >= _BINS_END:
        return None
    return sum(1 for edge in _BIN_EDGES if year >= edge)


def resampling_probabilities(years: Iterable[int]) -> tuple[float, ...]:
    """``P_i = 1 - n_i / max(n)`` for the 7 bins, ``n_i`` counted from reference ``years`` (2020+ ignored)."""
    counts = [0] * (len(_BIN_EDGES) + 1)
    for year in years:
        index = time_bin(year)
        if index is not None:
            counts[index] += 1
    top = max(counts)
    if top == 0:
        return tuple(1.0 for _ in counts)
    return tuple(1.0 - count / top for count in counts)


def questions_for(group: Sequence[TemporalFact], rng: random.Random) -> list[PseudoQuestion]:
    """Every template question the facts of one subject support, without duplicates."""
    subject = group[0].subject
    by_relation: dict[str, list[TemporalFact]] = {}
    for fact in group:
        by_relation.setdefault(fact.relation, []).append(fact)
    found: dict[str, PseudoQuestion] = {}
    for fact in group:
        same = by_relation[fact.relation]
        ask = RELATIONS[fact.relation].ask.format(s=subject)
        for question in (*_l2(fact, same, ask, rng), *_l3_neighbours(fact, same, ask)):
            found.setdefault(question.question, question)
        for relation, facts in by_relation.items():
            other = RELATIONS[relation].ask.format(s=subject)
            during = None if relation == fact.relation else _l3_during(fact, facts, other)
            for l3 in (during, _l3_shifted(fact, facts, other, rng)):
                if l3 is not None:
                    found.setdefault(l3.question, l3)
    return list(found.values())


def _holding(facts: Sequence[TemporalFact], first: int, last: int) -> tuple[str, ...]:
    """Objects whose span overlaps ``[first, last]``, in chronological order."""
    hits = sorted((f for f in facts if f.start <= last and f.end >= first), key=lambda f: (f.start, f.object))
    return tuple(dict.fromkeys(f.object for f in hits))


def _l2(
    fact: TemporalFact, same: Sequence[TemporalFact], ask: str, rng: random.Random
) -> list[PseudoQuestion]:
    point = rng.randint(fact.start, fact.end)
    questions = [PseudoQuestion("L2", "1-hop", fact.relation, f"{ask} in {_month_text(point)}?",
                                _holding(same, point, point), point)]
    if fact.end > fact.start:
        first = rng.randint(fact.start, fact.end - 1)
        last = rng.randint(first + 1, fact.end + 24)
        questions.append(PseudoQuestion(
            "L2", "multi-hop", fact.relation, f"{ask} from {_month_text(first)} to {_month_text(last)}?",
            _holding(same, first, last), first))
    delta = rng.randint(1, _MAX_DELTA)
    before = rng.random() < 0.5
    reference = point + delta if before else point - delta
    questions.append(PseudoQuestion(
        "L2", "multi-hop", fact.relation,
        f"{ask} {_span(delta)} {'before' if before else 'after'} {_month_text(reference)}?",
        _holding(same, point, point), reference))
    return questions


def _l3_neighbours(fact: TemporalFact, same: Sequence[TemporalFact], ask: str) -> list[PseudoQuestion]:
    questions = []
    earlier = [f for f in same if f.end <= fact.start and f.object != fact.object]
    if earlier:
        latest = max(f.end for f in earlier)
        answers = tuple(dict.fromkeys(f.object for f in earlier if f.end == latest))
        questions.append(PseudoQuestion("L3", "1-hop", fact.relation, f"{ask} before {fact.object}?", answers,
                                        fact.start))
    later = [f for f in same if f.start >= fact.end and f.object != fact.object]
    if later:
        earliest = min(f.start for f in later)
        answers = tuple(dict.fromkeys(f.object for f in later if f.start == earliest))
        questions.append(PseudoQuestion("L3", "1-hop", fact.relation, f"{ask} after {fact.object}?", answers,
                                        fact.start))
    return questions


def _l3_during(event: TemporalFact, facts: Sequence[TemporalFact], ask: str) -> PseudoQuestion | None:
    answers = _holding(facts, event.start, event.end)
    if not answers:
        return None
    clause = RELATIONS[event.relation].during.format(o=event.object)
    return PseudoQuestion("L3", "multi-hop", facts[0].relation, f"{ask} when {clause}?", answers, event.start)


def _l3_shifted(
    event: TemporalFact, facts: Sequence[TemporalFact], ask: str, rng: random.Random
) -> PseudoQuestion | None:
    """``... 2 years after he/she studied at O?`` (Table 12, P108): ``Δt`` after the event's end or before its
    start; the reference time is that query time."""
    delta = rng.randint(1, _MAX_DELTA)
    after = rng.random() < 0.5
    query = event.end + delta if after else event.start - delta
    answers = _holding(facts, query, query)
    if not answers:
        return None
    relation = RELATIONS[event.relation]
    clause = relation.state.format(s="he/she" if relation.subject_kind == "person" else event.subject,
                                   o=event.object)
    return PseudoQuestion("L3", "multi-hop", facts[0].relation,
                          f"{ask} {_span(delta)} {'after' if after else 'before'} {clause}?", answers, query)


def _span(months: int) -> str:
    """'3 years and 2 months' for a number of months."""
    years, rest = divmod(months, 12)
    return " and ".join(p for p in (_count(years, "year"), _count(rest, "month")) if p)


def _count(value: int, unit: str) -> str:
    return "" if value == 0 else f"{value} {unit}{'s' if value > 1 else ''}"


def _groups(facts: Iterable[TemporalFact]) -> list[list[TemporalFact]]:
    groups: dict[str, list[TemporalFact]] = {}
    for fact in facts:
        groups.setdefault(fact.subject, []).append(fact)
    return list(groups.values())


def _shift_and_rename(group: Sequence[TemporalFact], shift: int, rng: random.Random) -> list[TemporalFact]:
    """Shift every fact by ``shift`` years; give each distinct (name, kind) a fictional name of that kind."""
    wanted: dict[EntityKind, list[str]] = {}
    for fact in group:
        relation = RELATIONS[fact.relation]
        for name, kind in ((fact.subject, relation.subject_kind), (fact.object, relation.object_kind)):
            if name not in wanted.setdefault(kind, []):
                wanted[kind].append(name)
    renamed = {(real, kind): fake for kind, names in wanted.items()
               for real, fake in zip(names, sample_names(kind, len(names), rng, subject=group[0].subject), strict=True)}
    months = shift * 12
    shifted = []
    for fact in group:
        relation = RELATIONS[fact.relation]
        shifted.append(TemporalFact(renamed[fact.subject, relation.subject_kind], fact.relation,
                                    renamed[fact.object, relation.object_kind], fact.start + months,
                                    fact.end + months))
    return shifted


def _fact_context(group: Sequence[TemporalFact]) -> str:
    lines = []
    for fact in sorted(group, key=lambda f: (f.relation, f.start, f.object)):
        statement = RELATIONS[fact.relation].state.format(s=fact.subject, o=fact.object)
        when = (f"in {_month_text(fact.start)}" if fact.start == fact.end
                else f"from {_month_text(fact.start)} to {_month_text(fact.end)}")
        lines.append(f"{statement} {when}.")
    return "\n".join(lines)


def pseudo_instruction_data(facts: Sequence[TemporalFact], config: PseudoConfig) -> Iterator[dict[str, Any]]:
    """Complex-TR-shaped pseudo examples (``id, question, date, text_answers.text, fact_context, context``).

    Ids follow Complex-TR's ``<level>_<subject>_<relation>_<n>``, level ``L2``/``L3`` for 1-hop questions and
    ``L2M``/``L3M`` for multi-hop ones; ``date`` is the reference time as Complex-TR writes it (``May 01 1872``);
    ``shift`` records the group's ``Δt`` in years.

    Everything random comes from ``random.Random(config.seed)``: the same facts and seed give the same output.
    With ``config.n`` it makes as many passes over the groups as it takes to keep ``n`` examples.
    """
    groups = _groups(facts)
    if not groups:
        raise InputError("no temporal facts to generate from")
    counting = random.Random(f"{config.seed}/counts")
    reference_years = [q.reference // 12 for g in groups for q in questions_for(g, counting)]
    probabilities = resampling_probabilities(reference_years) if config.resample else None
    rng = random.Random(config.seed)
    kept = 0
    for round_index in _passes(config):
        kept_this_pass = 0
        for group_index, group in enumerate(groups):
            shift = _draw_shift(group, config, rng)
            pseudo = _shift_and_rename(group, shift, rng)
            context = _fact_context(pseudo)
            for number, question in enumerate(questions_for(pseudo, rng)):
                if probabilities is not None and rng.random() >= _keep_probability(probabilities, question):
                    continue
                yield _record(question, f"pseudo{round_index}-{group_index}", number, context, shift)
                kept += 1
                kept_this_pass += 1
                if config.n is not None and kept >= config.n:
                    return
        if kept_this_pass == 0:
            raise InputError(f"a full pass over {len(groups)} subject groups kept no example: every bin the "
                             "shifted questions fell in has P_i = 0; add facts from other periods or turn "
                             "resampling off")


def _draw_shift(group: Sequence[TemporalFact], config: PseudoConfig, rng: random.Random) -> int:
    """``Δt`` in years, uniform in the configured range but never moving a fact, or a question time up to
    ``_MAX_DELTA`` months before one, before year 1."""
    earliest = min(f.start for f in group) // 12
    low = max(config.min_shift, 1 + _MAX_DELTA // 12 - earliest)
    if low > config.max_shift:
        raise InputError(f"the facts of {group[0].subject!r} start in year {earliest}: no shift up to "
                         f"{config.max_shift} keeps their questions after year 1; raise max_shift or drop them")
    return rng.randint(low, config.max_shift)


def _passes(config: PseudoConfig) -> Iterator[int]:
    index = 0
    while True:
        yield index
        index += 1
        if config.n is None:
            return


def _keep_probability(probabilities: Sequence[float], question: PseudoQuestion) -> float:
    index = time_bin(question.reference // 12)
    return 1.0 if index is None else probabilities[index]


def _record(
    question: PseudoQuestion, group_key: str, number: int, context: str, shift: int
) -> dict[str, Any]:
    level = question.level if question.hops == "1-hop" else f"{question.level}M"
    return {
        "id": f"{level}_{group_key}_{question.relation}_{number}",
        "question": question.question,
        "date": _date_field(question.reference),
        "text_answers": {"text": list(question.answers)},
        "fact_context": context,
        "context": context,
        "shift": shift,
    }
