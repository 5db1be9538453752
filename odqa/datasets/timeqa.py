"""TimeQA (Chen et al., 2021) in its two released shapes.

- ``human_train.{easy,hard}.json(.gzip)``: JSON Lines ``{idx, question, context, targets, from, end, paragraphs}``,
  one line per question, the whole Wikipedia article in ``paragraphs`` (``[{title, text}]``).
- ``human_annotated_train.json``: one JSON array of pages ``{index, type, link, questions, paras}``, where
  ``questions`` is ``[[question, [{para, from, end, answer}, ...]], ...]`` and ``paras`` is ``[title, p1, p2, ...]``.

Each question becomes an :class:`~odqa.records.Example` whose single context is its article as one
:class:`~odqa.records.Document` (chunk it for passages). An unanswerable question has no answer: ``targets: [""]``
in the first shape, ``answer: ""`` in the second; both load as ``answers == ()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from odqa.datasets._fields import json_type, optional_string, string, strings
from odqa.errors import FormatError
from odqa.io import read_json_or_jsonl
from odqa.records import Document, Example

__all__ = ["is_timeqa", "load_timeqa"]


def _article_id(idx: str) -> str:
    # "/wiki/Newton_D._Baker_House#P466#0" -> "/wiki/Newton_D._Baker_House"
    return idx.split("#", 1)[0]


def _answers(texts: Iterable[str]) -> tuple[str, ...]:
    """Distinct answers in order; the empty answer that marks an unanswerable question is dropped."""
    return tuple(dict.fromkeys(t for t in texts if t.strip()))


def _article(paragraphs: Any) -> tuple[str, str]:
    """``(title, text)`` of the ``paragraphs`` list of a question line: the first title, the texts joined."""
    if not isinstance(paragraphs, list):
        raise ValueError(f"'paragraphs' must be a list of {{title, text}}, got {json_type(paragraphs)}")
    titles, texts = [], []
    for i, para in enumerate(paragraphs):
        if not isinstance(para, Mapping):
            raise ValueError(f"paragraph {i} must be an object {{title, text}}, got {json_type(para)}")
        try:
            titles.append(string(para, "title"))
            texts.append(string(para, "text").strip())
        except ValueError as exc:
            raise ValueError(f"paragraph {i}: {exc}") from exc
    return (titles[0].strip() if titles else ""), " ".join(texts)


def _from_line(obj: Mapping[str, Any], path: Path, line: int | None) -> Example:
    try:
        idx, question = string(obj, "idx"), string(obj, "question")
        targets = strings(obj, "targets")
        title, text = _article(obj.get("paragraphs"))
    except ValueError as exc:
        raise FormatError(f"not a TimeQA question record: {exc}", path=path, line=line) from exc
    doc = Document(id=_article_id(idx), title=title, text=text)
    answers = _answers(targets)
    return Example(id=idx, question=question, answers=answers, subject=title, ctxs=(doc,),
                   meta={"dataset": "timeqa", "answerable": bool(answers)})


def _page_article(page: Mapping[str, Any]) -> tuple[str, Document]:
    index = string(page, "index")
    paras = page.get("paras")
    if not isinstance(paras, list) or not paras or not all(isinstance(p, str) for p in paras):
        raise ValueError(f"'paras' must be [title, paragraph, ...] strings, got {json_type(paras)}"
                         + (" holding a non-string" if isinstance(paras, list) and paras else ""))
    link = optional_string(page, "link")
    title, body = paras[0].strip(), paras[1:]
    return index, Document(id=link or _article_id(index), title=title, text=" ".join(p.strip() for p in body))


def _page_question(item: Any) -> tuple[str, tuple[str, ...]]:
    if not isinstance(item, list) or len(item) != 2 or not isinstance(item[1], list):
        raise ValueError(f"not [question, [{{answer, ...}}, ...]], got {json_type(item)}")
    question, spans = item
    if not isinstance(question, str):
        raise ValueError(f"the question must be a string, got {json_type(question)}")
    if not all(isinstance(s, Mapping) and isinstance(s.get("answer"), str) for s in spans):
        raise ValueError("every 'answer' must be a string (\"\" when unanswerable)")
    return question, _answers(s["answer"] for s in spans)


def _from_page(page: Mapping[str, Any], path: Path) -> Iterator[Example]:
    try:
        index, doc = _page_article(page)
        questions = page.get("questions")
        if not isinstance(questions, list):
            raise ValueError(f"'questions' must be a list, got {json_type(questions)}")
    except ValueError as exc:
        raise FormatError(f"not a TimeQA annotated page: {exc}", path=path) from exc
    for number, item in enumerate(questions):
        try:
            question, answers = _page_question(item)
        except ValueError as exc:
            raise FormatError(f"page {index}: question {number}: {exc}", path=path) from exc
        yield Example(id=f"{index}#{number}", question=question, answers=answers, subject=doc.title,
                      ctxs=(doc,), meta={"dataset": "timeqa", "answerable": bool(answers), "type": page.get("type")})


def is_timeqa(obj: Mapping[str, Any]) -> bool:
    """Whether a record looks like either TimeQA shape (used to auto-detect input files)."""
    return ("idx" in obj and "paragraphs" in obj and "targets" in obj) or ("paras" in obj and "questions" in obj)


def load_timeqa(path: str | Path) -> Iterator[Example]:
    """Yield examples from either TimeQA file shape (one JSON array of pages, or JSON Lines of questions)."""
    path = Path(path)
    for line, obj in read_json_or_jsonl(path):
        if "paras" in obj:
            yield from _from_page(obj, path)
        else:
            yield _from_line(obj, path, line)
