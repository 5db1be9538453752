"""HybridQA metrics (paper 003 section 5.2; ``evaluate_script.py`` of wenhuchen/HybridQA): SQuAD EM and token
F1 against the single reference answer, as percentages, for questions answered from a table cell, from a
passage, and in total.

Gold is the official reference file ``{"reference": {qid: answer}, "table": [qids], "passage": [qids]}``;
predictions map question id to answer (the official ``[{"question_id", "pred"}]`` list is read by
:func:`odqa.evaluate.predictions.read_predictions`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from odqa.errors import FormatError
from odqa.evaluate._common import answer_string, check_missing, mean
from odqa.evaluate.answers import exact_match, token_f1
from odqa.io import read_json

__all__ = ["HybridQAReference", "evaluate_hybridqa", "read_reference"]


@dataclass(frozen=True, slots=True)
class HybridQAReference:
    """The official evaluation reference: each question's answer and where the answer comes from."""

    answers: Mapping[str, str]
    table: tuple[str, ...]
    passage: tuple[str, ...]


def read_reference(path: str | Path) -> HybridQAReference:
    """Read a ``dev_reference.json``-style file, or a question file (``[{"question_id", "answer-text"}]``,
    without the table/passage split); any other shape is a :class:`FormatError` saying what is expected."""
    expected = ('expected {"reference": {qid: answer}, "table": [qids], "passage": [qids]} (the official '
                'dev_reference.json) or a question file [{"question_id", "answer-text", ...}]')
    data = read_json(path, expected)
    if isinstance(data, list):
        return _from_questions(data, path)
    if not isinstance(data, dict):
        raise FormatError(f"got a JSON {type(data).__name__}; {expected}", path=path)
    if not isinstance(data.get("reference"), dict):
        raise FormatError(f"no 'reference' object (keys: {sorted(data)[:10]}); {expected}", path=path)
    table, passage = data.get("table", []), data.get("passage", [])
    if not isinstance(table, list) or not isinstance(passage, list):
        raise FormatError(expected + "; 'table' and 'passage' must be lists", path=path)
    answers = {str(k): str(v) for k, v in data["reference"].items()}
    unknown = [q for q in [*table, *passage] if str(q) not in answers]
    if unknown:
        raise FormatError(
            f"{len(unknown)} ids in 'table'/'passage' are not in 'reference' (first: {unknown[0]!r})",
            path=path,
        )
    return HybridQAReference(answers=answers, table=tuple(map(str, table)), passage=tuple(map(str, passage)))


def _from_questions(items: list[object], path: str | Path) -> HybridQAReference:
    answers: dict[str, str] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "question_id" not in item or "answer-text" not in item:
            raise FormatError(f"item {i} is not a question with 'question_id' and 'answer-text' (got "
                              f"{json.dumps(item)[:60]}); give HybridQA's dev_reference.json, or its dev.json "
                              "with answer-text", path=path)
        answers[str(item["question_id"])] = str(item["answer-text"])
    return HybridQAReference(answers=answers, table=(), passage=())


def evaluate_hybridqa(
    reference: HybridQAReference, predictions: Mapping[str, object], *, ignore_missing: bool = False
) -> dict[str, object]:
    """The official keys: ``table exact``, ``table f1``, ``passage exact``, ``passage f1``, ``total exact``,
    ``total f1``, ``total``; a group without questions gets ``None`` (the official script divides by 0)."""
    ids = list(reference.answers)
    kept = check_missing(ids, predictions, ignore_missing=ignore_missing)
    em: dict[str, float] = {}
    f1: dict[str, float] = {}
    for qid in ids:
        if qid in kept:
            pred = answer_string(qid, predictions[qid])
            em[qid] = exact_match(pred, [reference.answers[qid]])
            f1[qid] = token_f1(pred, [reference.answers[qid]])
    out: dict[str, object] = {}
    for name, group in (("table", reference.table), ("passage", reference.passage), ("total", ids)):
        scored = [q for q in group if q in kept]
        out[f"{name} exact"] = mean([em[q] for q in scored], 100.0)
        out[f"{name} f1"] = mean([f1[q] for q in scored], 100.0)
    out["total"] = len(kept)
    if len(kept) < len(ids):
        out["missing"] = len(ids) - len(kept)
    return out
