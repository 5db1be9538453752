"""Read prediction files, in odqa's format or a dataset's official one, as ``{qid: prediction}``.

Accepted shapes:

- odqa: JSON Lines (or a JSON array) of ``{"id", "prediction"}``, or one JSON object ``{qid: answer}``;
- HybridQA: ``[{"question_id", "pred"}]``; Complex-TR's metric (Hugging Face SQuAD style):
  ``[{"id", "prediction_text"}]``;
- JEMHopQA: ``{"answer": {qid: str}, "derivations": {qid: [[subj, rel, [obj, ...]], ...]}}``, read as
  ``{qid: {"answer", "derivations"}}``;
- HieraDate: ``[{"_id", "answer", "ans_extract_1", ...}]``, read as ``{qid: {...the other keys}}``; so is
  any record with an id and no prediction key;
- readers: FiD's ``final_output.txt`` (``test_reader.py --write_results``: one ``id<TAB>answer`` line per
  question) and Atlas' ``*-step-*.jsonl`` (``{"id", "query", "answers", "generation", ...}``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from odqa.errors import FormatError, InputError
from odqa.io import ID_KEYS, open_text, read_jsonl, reading, require_file

__all__ = ["read_predictions"]

_VALUE_KEYS = ("prediction", "pred", "prediction_text", "generation")
_SHAPES = ('accepted: JSON Lines of {"id": ..., "prediction": ...}, a JSON object {id: answer}, FiD '
           "id<TAB>answer lines, or the dataset's official prediction format (see docs/metrics.md)")


def _record_value(obj: Mapping[str, Any], path: Path, line: int | None) -> tuple[str, object]:
    id_key = next((k for k in ID_KEYS if k in obj), None)
    if id_key is None:
        raise FormatError(f"prediction record has no id (one of {', '.join(ID_KEYS)}); keys: {sorted(obj)}",
                          path=path, line=line)
    value_key = next((k for k in _VALUE_KEYS if k in obj), None)
    if value_key is not None:
        return str(obj[id_key]), obj[value_key]
    return str(obj[id_key]), {k: v for k, v in obj.items() if k != id_key}


def _from_records(records: Iterable[tuple[int | None, Any]], path: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for index, (line, obj) in enumerate(records):
        if not isinstance(obj, dict):
            where = "" if line is not None else f"item {index} of the JSON array "
            raise FormatError(f"{where}is {type(obj).__name__} {json.dumps(obj)[:40]}, expected a prediction object "
                              f"with an id; {_SHAPES}", path=path, line=line)
        qid, value = _record_value(obj, path, line)
        if qid in out:
            raise FormatError(f"duplicate prediction for {qid!r}", path=path, line=line)
        out[qid] = value
    return out


def _is_record(obj: Mapping[str, Any]) -> bool:
    return any(k in obj for k in ID_KEYS) and any(k in obj for k in (*_VALUE_KEYS, "answer"))


def _from_object(obj: dict[str, Any], path: Path) -> dict[str, object]:
    answers, derivations = obj.get("answer"), obj.get("derivations")
    if isinstance(answers, dict) and isinstance(derivations, dict) and set(obj) <= {"answer", "derivations"}:
        out: dict[str, object] = {}
        for qid in dict.fromkeys([*answers, *derivations]):
            record: dict[str, object] = {}  # a part the file lacks stays absent: the evaluator scores or skips it
            if qid in answers:
                record["answer"] = answers[qid]
            if qid in derivations:
                record["derivations"] = derivations[qid]
            out[str(qid)] = record
        return out
    if _is_record(obj):
        return _from_records([(1, obj)], path)
    return {str(qid): value for qid, value in obj.items()}


def _first_line_is_object(text: str) -> bool:
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def _first_line_is_tsv(text: str) -> bool:
    """FiD's ``id<TAB>answer`` lines: the first line has a tab and is not JSON by itself."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if "\t" not in first:
        return False
    try:
        json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        return True
    return False


def _from_tsv(text: str, path: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        qid, tab, answer = line.partition("\t")
        if not tab:
            raise FormatError(f"no tab in this line of id<TAB>answer predictions (FiD's final_output.txt): "
                              f"{line[:60]!r}", path=path, line=number)
        if qid in out:
            raise FormatError(f"duplicate prediction for {qid!r}", path=path, line=number)
        out[qid] = answer
    return out


def read_predictions(path: str | Path) -> dict[str, object]:
    """``{question id: prediction}`` from any accepted shape; a bad file raises with its line number."""
    path = require_file(path, "the prediction file your reader wrote")
    with open_text(path) as fh, reading(path):
        text = fh.read()
    if not text.strip():
        raise InputError(f"{path}: the prediction file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if _first_line_is_tsv(text):
            return _from_tsv(text, path)
        if exc.msg == "Extra data" or _first_line_is_object(text):
            return _from_records(read_jsonl(path), path)  # JSON Lines; a bad line is reported by number
        raise FormatError(f"malformed JSON ({exc.msg}, line {exc.lineno} column {exc.colno}); {_SHAPES}",
                          path=path) from exc
    except RecursionError as exc:
        raise FormatError(f"JSON nested too deeply to read; {_SHAPES}", path=path) from exc
    if isinstance(data, list):
        return _from_records(((None, item) for item in data), path)
    if isinstance(data, dict):
        return _from_object(data, path)
    raise FormatError(f"got a JSON {type(data).__name__}; {_SHAPES}", path=path)
