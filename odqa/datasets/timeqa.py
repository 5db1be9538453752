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


def _from_line(obj: Mapping[str, Any], path: Path, line: int | None) -> Example:
    try:
        idx, question, targets, paragraphs = obj["idx"], obj["question"], obj["targets"], obj["paragraphs"]
        title = paragraphs[0]["title"] if paragraphs else ""
        text = " ".join(p["text"].strip() for p in paragraphs)
    except (KeyError, TypeError, IndexError) as exc:
        raise FormatError(f"not a TimeQA question record (missing or bad {exc})", path=path, line=line) from exc
    doc_id = _article_id(idx)
    doc = Document(id=doc_id, title=title.strip(), text=text)
    answers = _answers(str(t) for t in targets)
    return Example(id=idx, question=question, answers=answers, subject=title.strip(), ctxs=(doc,),
                   meta={"dataset": "timeqa", "answerable": bool(answers)})


def _from_page(page: Mapping[str, Any], path: Path) -> Iterator[Example]:
    try:
        index, paras, questions = page["index"], page["paras"], page["questions"]
        title, body = paras[0], paras[1:]
    except (KeyError, TypeError, IndexError) as exc:
        raise FormatError(f"not a TimeQA annotated page (missing or bad {exc})", path=path) from exc
    doc = Document(id=page.get("link") or _article_id(index), title=title.strip(),
                   text=" ".join(p.strip() for p in body))
    for number, item in enumerate(questions):
        try:
            question, spans = item
            answers = _answers(str(s["answer"]) for s in spans)
        except (TypeError, ValueError, KeyError) as exc:
            raise FormatError(f"page {index}: question {number} is not [question, [{{answer, ...}}]]",
                              path=path) from exc
        yield Example(id=f"{index}#{number}", question=question, answers=answers, subject=title.strip(),
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
