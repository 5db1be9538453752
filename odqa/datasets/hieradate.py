"""HieraDate (Ho et al., 2022; paper 000): date comparison questions from HotpotQA and 2WikiMultiHopQA with
three probing tasks.

A record (JSON array or JSON Lines) has ``_id`` (``id`` in the dataset README), ``question, answer, context``
(paragraphs as ``[title, [sentence, ...]]``: 2 gold paragraphs in the normal setting, 2 gold + 8 distractors in
the distractor setting) and the probes:

- extraction: ``ques_extract_k`` / ``ans_extract_k`` for k = 1..2 (dates of birth or death), or 1..4 when the
  main question asks who lived longer (then both dates of both people); ``ans_extract_k_date`` may hold the
  date parts;
- reasoning: ``ques_reason_k`` / ``ans_reason_k``: k = 1..2 yes/no date comparisons, or, for the lived-longer
  case, k = 1..2 ages as ``{"year", "month", "day"}`` and k = 3 a yes/no age comparison;
- robustness: ``ques_robust`` / ``ans_robust``.

Each record becomes an :class:`~odqa.records.Example` whose ``meta["probes"]`` keeps every probe key as given
and ``meta["setting"]`` says ``normal`` (2 paragraphs) or ``distractor``. :func:`probe_examples` turns the
probes into questions of their own (id ``"<_id>#ans_extract_1"``, ...) for a reader to answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from odqa.datasets._fields import json_type
from odqa.errors import FormatError
from odqa.io import read_json_or_jsonl
from odqa.records import Document, Example

__all__ = ["PROBE_SEPARATOR", "is_hieradate", "is_lived_longer", "load_hieradate", "probe_examples", "probe_keys"]

PROBE_SEPARATOR = "#"


def probe_keys(probes: Mapping[str, Any]) -> list[str]:
    """The answer keys of a record's probes in task order (extraction, reasoning, robustness)."""
    extract = [f"ans_extract_{k}" for k in range(1, 5) if f"ans_extract_{k}" in probes]
    reason = [f"ans_reason_{k}" for k in range(1, 4) if f"ans_reason_{k}" in probes]
    return [*extract, *reason, "ans_robust"]


def is_lived_longer(probes: Mapping[str, Any]) -> bool:
    """The age case: four extraction probes, two numerical (age) and one comparison reasoning probe."""
    return "ans_extract_3" in probes


def _required(lived_longer: bool) -> list[str]:
    n_extract, n_reason = (4, 3) if lived_longer else (2, 2)
    keys = [f"extract_{k}" for k in range(1, n_extract + 1)] + [f"reason_{k}" for k in range(1, n_reason + 1)]
    return [f"{side}_{key}" for key in [*keys, "robust"] for side in ("ques", "ans")]


def is_hieradate(obj: Mapping[str, Any]) -> bool:
    """Whether a record looks like HieraDate (HotpotQA-style paragraphs under ``context``, with probes or
    ``_id``); used to auto-detect input files."""
    return isinstance(obj.get("context"), list) and ("_id" in obj or "ques_robust" in obj)


def _is_age(value: Any) -> bool:
    return isinstance(value, Mapping) and all(part in value for part in ("year", "month", "day"))


def _paragraphs(raw: Any, qid: str) -> tuple[Document, ...]:
    docs = []
    for i, para in enumerate(raw):
        if (not isinstance(para, (list, tuple)) or len(para) != 2 or not isinstance(para[0], str)
                or not isinstance(para[1], list) or not all(isinstance(s, str) for s in para[1])):
            raise ValueError(f"context paragraph {i} is not [title, [sentence, ...]]")
        text = " ".join(s.strip() for s in para[1] if s.strip())
        docs.append(Document(id=f"{qid}:{i}", title=para[0], text=text))
    return tuple(docs)


def _example(obj: Mapping[str, Any], path: Path, line: int | None) -> Example:
    try:
        qid = obj["_id"] if "_id" in obj else obj["id"]  # the evaluation script's key, or the README's
        question, answer, context = obj["question"], obj["answer"], obj["context"]
    except KeyError as exc:
        raise FormatError(
            f"not a HieraDate record: missing {exc}; expected _id (or id), question, answer, context and the "
            "probe keys (ques_/ans_extract_k, ques_/ans_reason_k, ques_/ans_robust)", path=path, line=line
        ) from exc
    if not isinstance(qid, str):
        raise FormatError(f"HieraDate record: '{'_id' if '_id' in obj else 'id'}' must be a string, got "
                          f"{json_type(qid)}", path=path, line=line)
    if not isinstance(question, str) or not isinstance(answer, str) or not isinstance(context, list):
        raise FormatError(f"HieraDate record {qid!r}: question and answer must be strings and context a list",
                          path=path, line=line)
    if len(context) < 2:
        raise FormatError(f"HieraDate record {qid!r}: context holds {len(context)} paragraph(s); every setting "
                          "has the 2 gold paragraphs (normal: 2, distractor: 2 + 8)", path=path, line=line)
    lived_longer = is_lived_longer(obj)
    missing = [key for key in _required(lived_longer) if key not in obj]
    if missing:
        case = "lived-longer (4 extraction, 3 reasoning)" if lived_longer else "date (2 + 2)"
        raise FormatError(f"HieraDate record {qid!r} ({case} probes) lacks {', '.join(missing)}",
                          path=path, line=line)
    ages = ("ans_reason_1", "ans_reason_2") if lived_longer else ()
    texts = [k for k in _required(lived_longer) if k not in ages and not isinstance(obj[k], str)]
    if texts:
        raise FormatError(f"HieraDate record {qid!r}: probe questions and text answers must be strings; "
                          f"{', '.join(texts)} is not", path=path, line=line)
    bad_ages = [k for k in ages if not _is_age(obj[k])]
    if bad_ages:
        raise FormatError(f"HieraDate record {qid!r}: {bad_ages[0]} is {obj[bad_ages[0]]!r}; a lived-longer "
                          "record's numerical probes are ages " '{"year": ..., "month": ..., "day": ...}',
                          path=path, line=line)
    try:
        ctxs = _paragraphs(context, str(qid))
    except ValueError as exc:
        raise FormatError(f"HieraDate record {qid!r}: {exc}", path=path, line=line) from exc
    probes = {k: v for k, v in obj.items() if k.startswith(("ques_", "ans_"))}
    known = {"_id", "id", "question", "answer", "context", *probes}
    rest = {k: v for k, v in obj.items() if k not in known}
    meta = rest | {"dataset": "hieradate", "setting": "normal" if len(ctxs) == 2 else "distractor",
                   "probes": probes}
    return Example(id=qid, question=question, answers=(answer,), ctxs=ctxs, meta=meta)


def load_hieradate(path: str | Path) -> Iterator[Example]:
    """Yield one example per HieraDate record (normal or distractor setting, JSON array or JSON Lines)."""
    path = Path(path)
    for line, obj in read_json_or_jsonl(path):
        yield _example(obj, path, line)


def probe_examples(example: Example) -> list[Example]:
    """The probing questions of a loaded record as examples sharing its context (gold ages in meta)."""
    probes = example.meta["probes"]
    out = []
    for key in probe_keys(probes):
        question = probes[key.replace("ans_", "ques_", 1)]
        answer = probes[key]
        answers = (answer,) if isinstance(answer, str) else ()
        out.append(Example(id=f"{example.id}{PROBE_SEPARATOR}{key}", question=question, answers=answers,
                           ctxs=example.ctxs, meta={"dataset": "hieradate", "probe": key, "gold": answer}))
    return out
