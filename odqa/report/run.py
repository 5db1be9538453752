"""The function behind ``odqa report``: build the report data from runs, write the HTML page (and the JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odqa.evaluate.retrieval import DEFAULT_KS
from odqa.io import atomic_write
from odqa.report.data import RunSpec, build_report_data
from odqa.report.html import render_html

__all__ = ["ReportConfig", "ReportSummary", "write_report"]


@dataclass(frozen=True)
class ReportConfig:
    """What to report: runs, an optional gold file, where to write, the recall cut-offs, how much text to embed."""

    runs: tuple[RunSpec, ...]
    out: str
    gold: str | None = None
    json_out: str | None = None
    ks: tuple[int, ...] = DEFAULT_KS
    texts: int = 10  # passages per question and run whose text is embedded (the first answer-bearing one always is)


@dataclass(frozen=True)
class ReportSummary:
    """What :func:`write_report` wrote: the page (its size), the JSON if asked for, and each run's summary row."""

    out: Path
    bytes: int
    json_out: Path | None
    questions: int
    runs: list[dict[str, Any]]  # the summary rows of the report data (name, answerable, recall, exact, f1, ...)


def write_report(config: ReportConfig) -> ReportSummary:
    """Write the self-contained HTML report of ``config.runs`` to ``config.out`` (and the data to ``json_out``)."""
    data = build_report_data(config.runs, config.gold, ks=config.ks, texts=config.texts)
    page = render_html(data)
    with atomic_write(config.out) as fh:
        fh.write(page)
    json_out = None
    if config.json_out is not None:
        json_out = Path(config.json_out)
        with atomic_write(json_out) as fh:
            json.dump(data, fh, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            fh.write("\n")
    runs = [{k: v for k, v in run.items() if k != "curve"} for run in data["runs"]]
    return ReportSummary(Path(config.out), len(page.encode("utf-8")), json_out, len(data["questions"]), runs)
