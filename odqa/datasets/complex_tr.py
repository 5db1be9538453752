"""Complex-TR (Tan et al., 2024; paper 004): multi-answer, multi-hop temporal questions.

Shapes read (JSON Lines or a JSON array of records, or the SQuAD-style file the official evaluation reads):

- records ``{id, question, date, text_answers: {text: [...]}, fact_context, context}`` (ReasonQA / open-book),
  or ``answers: {text: [...]}`` as the released fine-tuning script names the column;
- the ODQA files, where ``passages: [{title, text, ...}]`` holds the retrieved 100-word passages, and FiD
  JSON Lines of these questions (``answers: [...]``, ``ctxs``), as ``odqa refine`` writes them;
- ``{"data": [{"paragraphs": [{"qas": [{id, answers: {text: [...]}}]}]}]}`` (``sem_metric/evaluate.py``).

Level and hop count come from the id, ``<level>_<subject>_<relation>[_<relation>]_<n>`` (e.g.
``L2_Q451225_P108_4``), as the released analysis notebook parses it: ``L2``/``L3`` is a 1-hop question of that
level, a level with a suffix (``L2M``, ``L2H``, ``L3M``, ``L3H``) a multi-hop one. An empty answer list means
unanswerable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from odqa.datasets._fields import json_type, optional_string
from odqa.errors import FormatError
from odqa.io import read_json, read_json_or_jsonl, text_lines
from odqa.records import Document, Example

__all__ = ["is_complex_tr", "is_squad_style", "load_complex_tr", "parse_complex_tr_id"]

_LEVEL = re.compile(r"L([23])([A-Z]*)")


def parse_complex_tr_id(qid: str) -> tuple[str, str]:
    """``(level, hops)`` of a question id, e.g. ``("L2", "1-hop")``; ValueError for an id of another shape."""
    parts = qid.split("_")
    match = _LEVEL.fullmatch(parts[0])
    if len(parts) not in (4, 5) or match is None or not all(parts[1:]):
        raise ValueError(
            f"id {qid!r} is not '<level>_<subject>_<relation>[_<relation>]_<n>' with level L2, L3 or a "
            "multi-hop variant (L2M, L2H, L3M, L3H), e.g. 'L2_Q451225_P108_4'"
        )
    return f"L{match.group(1)}", "multi-hop" if match.group(2) else "1-hop"


def _answers(obj: Mapping[str, Any]) -> list[str]:
    for key in ("text_answers", "answers"):
        block = obj.get(key)
        answers = block.get("text") if isinstance(block, Mapping) else block
        if isinstance(answers, list):
            if not all(isinstance(a, str) for a in answers):
                raise ValueError(f"the answers under '{key}' must be strings")
            return list(answers)
    raise ValueError("no answer list: expected 'text_answers' (or 'answers') as {'text': [...]}, or a FiD "
                     "'answers' list")


def _contexts(obj: Mapping[str, Any], qid: str) -> tuple[Document, ...] | None:
    passages = obj.get("passages", obj.get("ctxs"))
    if passages is not None:
        if not isinstance(passages, list):
            raise ValueError("'passages' (or 'ctxs') must be a list of {title, text}")
        docs = []
        for i, p in enumerate(passages):
            if not isinstance(p, Mapping) or not isinstance(p.get("text"), str):
                raise ValueError(f"passage {i} has no 'text' string")
            pid = p.get("id")
            if pid is not None and (isinstance(pid, bool) or not isinstance(pid, (str, int))):
                raise ValueError(f"passage {i}: 'id' must be a string or a number, got {json_type(pid)}")
            try:
                title = optional_string(p, "title") or ""
            except ValueError as exc:
                raise ValueError(f"passage {i}: {exc}") from exc
            extra = {k: v for k, v in p.items() if k not in {"id", "title", "text"}}
            docs.append(Document(id=str(pid) if pid not in (None, "") else f"{qid}:{i}", title=title,
                                 text=p["text"], meta=extra))
        return tuple(docs)
    context = obj.get("context")
    if context is None:
        return None
    if not isinstance(context, str):
        raise ValueError(f"'context' must be the context text (a string), got a JSON {type(context).__name__}")
    return (Document(id=f"{qid}:context", title="", text=context),)


def _example(obj: Mapping[str, Any], path: Path, line: int | None) -> Example:
    qid = obj.get("id")
    if not isinstance(qid, str):
        raise FormatError("not a Complex-TR record: no 'id' string", path=path, line=line)
    try:
        level, hops = parse_complex_tr_id(qid)
        answers = _answers(obj)
        ctxs = _contexts(obj, qid)
    except ValueError as exc:
        raise FormatError(f"Complex-TR record {qid!r}: {exc}", path=path, line=line) from exc
    question = obj.get("question", "")
    if not isinstance(question, str):
        raise FormatError(f"Complex-TR record {qid!r}: 'question' must be a string", path=path, line=line)
    known = {"id", "question", "text_answers", "answers", "passages", "ctxs", "context"}
    meta = {k: v for k, v in obj.items() if k not in known}
    meta |= {"dataset": "complex-tr", "level": level, "hops": hops, "answerable": bool(answers)}
    return Example(id=qid, question=question, answers=tuple(answers), ctxs=ctxs, meta=meta)


_SQUAD = 'expected data[].paragraphs[].qas[] ({"data": [{"paragraphs": [{"qas": [{"id", "answers"}]}]}]})'


def _field(obj: Any, key: str, where: str, path: Path) -> list[Any]:
    """``obj[key]`` as a list, or a FormatError naming the place (``where``, empty for the whole file)."""
    if not isinstance(obj, Mapping):
        raise FormatError(f"not a SQuAD-style file: {where or 'the file'} is a JSON {type(obj).__name__}, not an "
                          f"object; {_SQUAD}", path=path)
    value = obj.get(key)
    if not isinstance(value, list):
        got = "missing" if value is None else f"a JSON {type(value).__name__}"
        raise FormatError(f"not a SQuAD-style file: {where + '.' if where else ''}{key} is {got}, not a list; "
                          f"{_SQUAD}", path=path)
    return value


def _squad_records(data: Any, path: Path) -> Iterator[Mapping[str, Any]]:
    for i, article in enumerate(_field(data, "data", "", path)):
        for j, paragraph in enumerate(_field(article, "paragraphs", f"data[{i}]", path)):
            where = f"data[{i}].paragraphs[{j}]"
            for k, qa in enumerate(_field(paragraph, "qas", where, path)):
                if not isinstance(qa, Mapping):
                    raise FormatError(f"{where}.qas[{k}] is a JSON {type(qa).__name__}, expected a question object "
                                      "{id, question, answers: {text: [...]}}", path=path)
                yield qa


def is_squad_style(path: Path) -> bool:
    """Whether ``path`` is one whole JSON object (the SQuAD-style file) rather than records, judged by its first
    line."""
    first = next((line for _, line in text_lines(path) if line.strip()), "")
    try:
        obj = json.loads(first)
    except (json.JSONDecodeError, RecursionError):
        return first.lstrip().startswith("{")  # a pretty-printed object; read_json reports it if broken
    return isinstance(obj, dict) and "data" in obj


def is_complex_tr(obj: Mapping[str, Any]) -> bool:
    """Whether a record looks like a Complex-TR question: its ``text_answers``, or an id of the dataset's shape."""
    qid = obj.get("id")
    if "text_answers" in obj:
        return True
    if not isinstance(qid, str):
        return False
    try:
        parse_complex_tr_id(qid)
    except ValueError:
        return False
    return True


def load_complex_tr(path: str | Path) -> Iterator[Example]:
    """Yield one example per Complex-TR question, in file order."""
    path = Path(path)
    if is_squad_style(path):
        whole = read_json(path, "expected Complex-TR records (JSON Lines or a JSON array) or a SQuAD-style file")
        for qa in _squad_records(whole, path):
            yield _example(qa, path, None)
        return
    for line, obj in read_json_or_jsonl(path):
        yield _example(obj, path, line)
