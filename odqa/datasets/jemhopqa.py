"""JEMHopQA (Ishii et al., 2024; paper 002): Japanese multi-hop questions with derivation triples.

The released files (``train_ver1.2.json``, ``dev_ver1.2.json``) are one JSON array of ``{qid, type, question,
answer, derivations: [[subj, rel, [obj, ...]], ...], page_ids, time_dependent}``; ``type`` is
``compositional`` or ``comparison`` and comparison answers are ``YES``/``NO`` or an entity. Each becomes an
:class:`~odqa.records.Example` with its derivations, type, page ids and time dependence in ``meta``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from odqa.datasets._fields import json_type
from odqa.errors import FormatError
from odqa.io import read_json_or_jsonl
from odqa.records import Example

__all__ = ["is_jemhopqa", "load_jemhopqa"]

_FIELDS = ("qid", "type", "question", "answer", "derivations")


def is_jemhopqa(obj: Mapping[str, Any]) -> bool:
    """Whether a record looks like JEMHopQA (a ``qid`` and derivation triples); used to auto-detect input files."""
    return "qid" in obj and "derivations" in obj


def _derivations(raw: Any) -> list[list[Any]]:
    if not isinstance(raw, list):
        raise ValueError("derivations must be a list")
    steps = []
    for step in raw:
        ok = (
            isinstance(step, list) and len(step) == 3 and isinstance(step[0], str)
            and isinstance(step[1], str) and isinstance(step[2], list)
            and all(isinstance(o, str) for o in step[2])
        )
        if not ok:
            raise ValueError(f"derivation step {step!r} is not [subject, relation, [object, ...]]")
        steps.append([step[0], step[1], list(step[2])])
    return steps


def _example(obj: Mapping[str, Any], path: Path, line: int | None) -> Example:
    missing = [f for f in _FIELDS if f not in obj]
    if missing:
        raise FormatError(
            f"not a JEMHopQA record: missing {', '.join(missing)} (expected {', '.join(_FIELDS)}, page_ids, "
            "time_dependent)", path=path, line=line
        )
    qid = obj["qid"]
    if not isinstance(qid, str):
        raise FormatError(f"JEMHopQA record: 'qid' must be a string, got {json_type(qid)}", path=path, line=line)
    if not isinstance(obj["question"], str) or not isinstance(obj["answer"], str):
        raise FormatError(f"record {qid!r}: question and answer must be strings", path=path, line=line)
    try:
        derivations = _derivations(obj["derivations"])
    except ValueError as exc:
        raise FormatError(f"JEMHopQA record {qid!r}: {exc}", path=path, line=line) from exc
    page_ids = obj.get("page_ids") or []
    if not isinstance(page_ids, list) or not all(isinstance(p, str) for p in page_ids):
        raise FormatError(f"JEMHopQA record {qid!r}: page_ids must be a list of page ids, got "
                          f"{type(page_ids).__name__} {page_ids!r}", path=path, line=line)
    if not isinstance(obj["type"], str):
        raise FormatError(f"JEMHopQA record {qid!r}: type must be a string (compositional or comparison), got "
                          f"{obj['type']!r}", path=path, line=line)
    time_dependent = obj.get("time_dependent", False)
    if not isinstance(time_dependent, bool):
        raise FormatError(f"JEMHopQA record {qid!r}: time_dependent must be true or false, got {time_dependent!r}",
                          path=path, line=line)
    meta = {
        "dataset": "jemhopqa",
        "type": obj["type"],
        "derivations": derivations,
        "page_ids": list(page_ids),
        "time_dependent": time_dependent,
    }
    return Example(id=qid, question=obj["question"], answers=(obj["answer"],), meta=meta)


def load_jemhopqa(path: str | Path) -> Iterator[Example]:
    """Yield one example per JEMHopQA question (JSON array as released, or JSON Lines)."""
    path = Path(path)
    for line, obj in read_json_or_jsonl(path):
        yield _example(obj, path, line)
