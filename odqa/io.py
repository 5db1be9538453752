"""Readers and writers: JSON Lines, FiD JSON, DPR TSV. Every write is atomic (temp file + rename)."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import itertools
import json
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, cast

from odqa.errors import FormatError, InputError, OutputError
from odqa.records import Document, Example, Hit, Passage

__all__ = [
    "ID_KEYS",
    "atomic_write",
    "example_from_dict",
    "example_to_fid",
    "open_text",
    "read_dpr_tsv",
    "read_fid",
    "read_json",
    "read_json_or_jsonl",
    "read_jsonl",
    "reading",
    "require_file",
    "text_lines",
    "write_dpr_tsv",
    "write_fid",
    "write_jsonl",
]

CtxKey = Literal["ctxs", "passages"]

#: Keys that hold a question's id, in the order they are looked up (odqa/FiD, HotpotQA-style, JEMHopQA, TimeQA,
#: HybridQA), for question records and prediction records alike.
ID_KEYS = ("id", "_id", "qid", "idx", "question_id")


def require_file(path: str | Path, what: str | None = None) -> Path:
    """``path`` as a Path when it names something readable that is not a folder (a file, a pipe); else an
    :class:`InputError` saying which, and ``what`` the user should give instead."""
    path = Path(path)
    give = f"; give {what}" if what else ""
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a file{give}")
    if not path.exists():
        raise InputError(f"{path}: no such file{give}")
    return path


def _open_binary(path: str | Path) -> BinaryIO:
    path = require_file(path)
    try:
        if path.suffix in {".gz", ".gzip"}:
            return cast(BinaryIO, gzip.open(path, "rb"))
        return path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot open ({exc.strerror or exc})") from exc


def open_text(path: str | Path) -> IO[str]:
    """Open a UTF-8 text file for reading, transparently gunzipping ``.gz`` / ``.gzip`` files.

    Read it inside :func:`reading` (or line by line with :func:`text_lines`) so undecodable bytes and corrupt
    gzip data become a :class:`FormatError` naming the file.
    """
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8-sig")


@contextlib.contextmanager
def reading(path: str | Path, line: int | None = None) -> Iterator[None]:
    """Translate decoding and I/O failures while reading ``path`` into odqa errors."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text (byte {exc.object[exc.start:exc.start + 1]!r} at offset {exc.start}); "
                          "re-encode the file as UTF-8", path=path, line=line) from exc
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise FormatError(f"corrupt or truncated gzip data ({exc}); check the download or drop the .gz suffix",
                          path=path) from exc
    except OSError as exc:
        raise InputError(f"{path}: read failed ({exc.strerror or exc})") from exc


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` pairs of a UTF-8 text file, with read errors reported by file and line."""
    with _open_binary(path) as fh:
        number = 0
        while True:
            with reading(path, number + 1):
                raw = fh.readline()
                if not raw:
                    return
                number += 1
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            yield number, line


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a bad line raises with file and line."""
    for number, line in text_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"malformed JSON ({exc.msg}, column {exc.colno})", path=path, line=number) from exc
        except RecursionError as exc:
            raise FormatError("JSON nested too deeply to read", path=path, line=number) from exc
        if not isinstance(obj, dict):
            raise FormatError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=number)
        yield number, obj


def read_json(path: str | Path, expected: str = "") -> Any:
    """One whole JSON document; a failure names the file and, when given, what was ``expected`` there."""
    hint = f"; {expected}" if expected else ""
    with open_text(path) as fh, reading(path):
        try:
            return json.load(fh)
        except json.JSONDecodeError as exc:
            raise FormatError(f"malformed JSON ({exc.msg}, line {exc.lineno}){hint}", path=path) from exc
        except RecursionError as exc:
            raise FormatError(f"JSON nested too deeply to read{hint}", path=path) from exc


def read_json_or_jsonl(path: str | Path) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """Read either one JSON array of objects or JSON Lines; yields ``(line_or_None, object)``."""
    with open_text(path) as fh, reading(path, 1):
        head = fh.read(1)
        while head and head.isspace():
            head = fh.read(1)
    if head != "[":
        yield from read_jsonl(path)
        return
    for item in read_json(path):
        if not isinstance(item, dict):
            raise FormatError(f"expected a list of JSON objects, found {type(item).__name__}", path=path)
        yield None, item


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only on success.

    The file gets the permissions a plain ``open`` would give it; a path that cannot be written raises
    :class:`OutputError`.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}; choose another output path") from exc
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> int:
    """Atomically write ``rows`` as JSON Lines; returns the number of rows."""
    count = 0
    with atomic_write(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count


def _title(raw: Any, index: int, where: tuple[str | Path, int | None]) -> str:
    """A context's title as text: a string as given; a JSON number is a title too (an article named 1999) and
    keeps its JSON spelling (1999, 0, 2.5); missing or null is no title. Anything else is refused."""
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return json.dumps(raw)
    raise FormatError(f"context {index}: 'title' must be a string or a number, got {json.dumps(raw)[:80]}",
                      path=where[0], line=where[1])


def _ctx_to_document(ctx: Any, index: int, example_id: str, where: tuple[str | Path, int | None]) -> Document:
    if isinstance(ctx, str):
        return Document(id=f"{example_id}:{index}", title="", text=ctx)
    if not isinstance(ctx, dict) or not isinstance(ctx.get("text"), str):
        raise FormatError(f"context {index} must be a string or an object with a 'text' string", path=where[0],
                          line=where[1])
    cid = ctx.get("id")
    meta = {k: v for k, v in ctx.items() if k not in {"id", "title", "text", "url"}}
    return Document(
        id=str(cid) if cid not in (None, "") else f"{example_id}:{index}",
        title=_title(ctx.get("title"), index, where),
        text=ctx["text"],
        url=ctx.get("url"),
        meta=meta,
    )


def example_from_dict(
    obj: Mapping[str, Any], *, path: str | Path = "<input>", line: int | None = None, index: int = 0
) -> Example:
    """Build an :class:`Example` from a question record (odqa, FiD/Atlas or Complex-TR ODQA shape).

    Accepted keys: ``id`` (or ``_id``/``qid``/``idx``), ``question``, ``answers`` (or ``answer``/``target``/
    ``targets``/``text_answers.text``), optional ``subject``, and candidates under ``ctxs`` or ``passages``
    (strings or objects with ``text`` and optional ``id``/``title``).
    """
    question = obj.get("question")
    if not isinstance(question, str):
        raise FormatError("record has no 'question' string", path=path, line=line)
    qid = next((obj[k] for k in ID_KEYS if obj.get(k) not in (None, "")), None)
    example_id = str(qid) if qid is not None else str(index)
    answers = _answers_of(obj, path, line)
    raw_ctxs = obj.get("ctxs", obj.get("passages"))
    ctxs: tuple[Document, ...] | None = None
    if raw_ctxs is not None:
        if not isinstance(raw_ctxs, list):
            raise FormatError(f"'ctxs'/'passages' must be a list, got {type(raw_ctxs).__name__}", path=path, line=line)
        ctxs = tuple(_ctx_to_document(c, i, example_id, (path, line)) for i, c in enumerate(raw_ctxs))
    known = {*ID_KEYS, "question", "answers", "answer", "target", "targets", "text_answers", "subject", "ctxs",
             "passages"}
    given_meta = obj.get("meta") or {}
    if not isinstance(given_meta, Mapping):
        raise FormatError(f"'meta' must be an object, got {type(given_meta).__name__}", path=path, line=line)
    meta = dict(given_meta) | {k: v for k, v in obj.items() if k not in known and k != "meta"}
    subject = obj.get("subject")
    return Example(id=example_id, question=question, answers=answers,
                   subject=str(subject) if subject else None, ctxs=ctxs, meta=meta)


def _answers_of(obj: Mapping[str, Any], path: str | Path, line: int | None) -> tuple[str, ...]:
    raw: Any = None
    for key in ("answers", "answer", "targets", "target"):
        if key in obj:
            raw = obj[key]
            break
    else:
        text_answers = obj.get("text_answers")
        if isinstance(text_answers, Mapping):
            raw = text_answers.get("text")
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(a, (str, int, float)) for a in raw):
        return tuple(str(a) for a in raw)
    raise FormatError(f"answers must be a string or a list of strings, got {json.dumps(raw)[:80]}", path=path,
                      line=line)


def read_fid(path: str | Path) -> Iterator[Example]:
    """Read FiD / Atlas / odqa question files (JSON array or JSON Lines)."""
    for index, (line, obj) in enumerate(read_json_or_jsonl(path)):
        yield example_from_dict(obj, path=path, line=line, index=index)


def example_to_fid(
    example: Example,
    hits: Sequence[Hit],
    *,
    has_answer: Sequence[bool] | None = None,
    ctx_key: CtxKey = "ctxs",
) -> dict[str, Any]:
    """The FiD JSON record for ``example`` with ``hits`` (already sorted best first)."""
    ctxs = []
    for i, hit in enumerate(hits):
        ctx: dict[str, Any] = {
            "id": hit.passage.id,
            "title": hit.passage.title,
            "text": hit.passage.text,
            "score": float(hit.score),
        }
        if has_answer is not None:
            ctx["has_answer"] = bool(has_answer[i])
        ctxs.append(ctx)
    return {"id": example.id, "question": example.question, "answers": list(example.answers), ctx_key: ctxs}


def write_fid(path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Atomically write FiD JSON Lines records."""
    return write_jsonl(path, records)


def read_dpr_tsv(path: str | Path) -> Iterator[Passage]:
    """Read DPR passages (``id\\ttext\\ttitle``, with or without the header row)."""
    with open_text(path) as fh, reading(path):
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        try:
            header = next(reader, None)
            if header is None:
                raise InputError(f"{path}: empty file, expected DPR passages 'id\\ttext\\ttitle'")
            has_header = [h.strip().lower() for h in header[:3]] == ["id", "text", "title"]
            for number, row in enumerate(reader if has_header else itertools.chain([header], reader),
                                         start=2 if has_header else 1):
                if len(row) < 3:
                    raise FormatError(f"expected 3 tab-separated fields, got {len(row)}", path=path, line=number)
                if any("\x00" in field for field in row):
                    raise FormatError("NUL byte in a field: not a UTF-8 text TSV (UTF-16, or binary data?); "
                                      "re-export the passages as UTF-8", path=path, line=reader.line_num)
                pid, text, title = row[0], row[1], row[2]
                yield Passage(id=pid, doc_id=title, title=title, text=text)
        except csv.Error as exc:  # a field over csv.field_size_limit(): mostly an unclosed quote
            raise FormatError(f"unreadable TSV ({exc}); a quote '\"' opening a field must be closed",
                              path=path, line=reader.line_num) from exc


def write_dpr_tsv(path: str | Path, passages: Iterable[Passage]) -> int:
    """Atomically write DPR passages TSV with its header row."""
    count = 0
    with atomic_write(path) as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        for p in passages:
            writer.writerow([p.id, p.text, p.title])
            count += 1
    return count
