"""Render an evaluation result (nested JSON-ready dict, official key names) as a rich table or a JSON file."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from rich.table import Table

from odqa.io import atomic_write

__all__ = ["flatten", "notes", "to_table", "write_json"]


def flatten(result: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(path, value)`` for every leaf, nested keys joined by " / " (``e / f1``, ``by_level / L2 / EM``)."""
    for key, value in result.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from flatten(value, prefix=f"{path} / ")
        else:
            yield path, value


def _cell(value: object, digits: int) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def to_table(result: Mapping[str, object], *, title: str, digits: int = 2) -> Table:
    """A two-column table (metric, value) of every leaf of ``result`` but its notes (see :func:`notes`)."""
    table = Table(title=title, show_lines=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for path, value in flatten(result):
        if path != "note":
            table.add_row(path, _cell(value, digits))
    return table


def notes(result: Mapping[str, object]) -> list[str]:
    """The parts of ``result["note"]`` (how the numbers were computed), one line each, for under the table."""
    note = result.get("note")
    return [part.strip() for part in note.split(";") if part.strip()] if isinstance(note, str) else []


def write_json(path: str | Path, result: Mapping[str, object]) -> None:
    """Atomically write ``result`` as indented JSON (UTF-8, non-ASCII kept)."""
    with atomic_write(path) as fh:
        json.dump(result, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
