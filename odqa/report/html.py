"""Render report data (:mod:`odqa.report.data`) as one self-contained HTML page.

The summary table and the recall@k chart (inline SVG) are written here, so they show before the page's script
has read the data; the question list is drawn by the script in ``template.html`` from the embedded JSON, a screen
at a time. Nothing is loaded from elsewhere: the page opens offline from disk.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from html import escape
from importlib import resources
from pathlib import PurePath
from typing import Any

from odqa._version import __version__

__all__ = ["COLORS", "recall_chart", "render_html", "summary_table"]

COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#7F7F7F", "#000000")  # Okabe-Ito
_SLOTS = ("__TITLE__", "__SUBTITLE__", "/*__RUN_COLORS__*/", "<!--__SUMMARY__-->", "<!--__CHART__-->")


def _color(index: int) -> str:
    return COLORS[index % len(COLORS)]


def _fraction(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else "–"


def _percent(value: object) -> str:
    return f"{value:.1f}" if isinstance(value, float) else "–"


def summary_table(data: Mapping[str, Any]) -> str:
    """One row per run: questions, answerable, recall@k for each k up to the deepest run's depth, EM and F1 (%)
    when it has predictions."""
    depth = max((run["depth"] for run in data["runs"]), default=0)
    ks: Sequence[int] = [k for k in data["ks"] if k <= depth] or data["ks"][:1]  # no R@100 for top-20 runs
    has_preds = any("exact" in run for run in data["runs"])
    head = ["run", "questions", "answerable", *(f"R@{k}" for k in ks)]
    if has_preds:
        head += ["EM %", "F1 %"]
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    rows = [f"<thead><tr>{cells}</tr></thead><tbody>"]
    for i, run in enumerate(data["runs"]):
        missing = f' <span class="muted">({run["missing"]} missing)</span>' if run["missing"] else ""
        tds = [
            f'<td class="name"><span class="dot run-{i}"></span>{escape(run["name"])}'
            f'<div class="path" title="{escape(run["path"])}">{escape(PurePath(run["path"]).name)}</div></td>',
            f'<td>{run["questions"]}{missing}</td>',
            f'<td>{run["answerable"]}</td>',
        ]
        for k in ks:
            value = run["recall"][str(k)]
            beyond = k > run["depth"]
            note = f' title="only {run["depth"]} passages per question: recall@{run["depth"]}"' if beyond else ""
            tds.append(f'<td class="num recall{" beyond" if beyond else ""}" data-run="{i}" data-k="{k}"{note}>'
                       f"{_fraction(value)}</td>")
        if has_preds:
            tds += [f'<td class="num">{_percent(run.get("exact"))}</td>',
                    f'<td class="num">{_percent(run.get("f1"))}</td>']
        rows.append(f"<tr>{''.join(tds)}</tr>")
    return f'<table class="summary">{"".join(rows)}</tbody></table>'


def _ticks(depth: int) -> list[int]:
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if t <= depth]
    if depth > ticks[-1] * 1.25:
        ticks.append(depth)
    return ticks


def recall_chart(data: Mapping[str, Any], width: int = 560, height: int = 300) -> str:
    """Answer recall@k against k (log scale) for every run, one line each, as an inline SVG."""
    depth = max([2, *(run["depth"] for run in data["runs"])])
    left, right, top, bottom = 48, 16, 14, 40
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(k: int) -> float:
        return left + plot_w * math.log(k) / math.log(depth)

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
             f'width="{width}" height="{height}" role="img" aria-label="answer recall at k">']
    for tick in range(6):
        v = tick / 5
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                     f'<text class="tick" x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    for k in _ticks(depth):
        parts.append(f'<line class="grid" x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{top}" y2="{top + plot_h}"/>'
                     f'<text class="tick" x="{x(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{k}</text>')
    parts.append(f'<text class="axis" x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle">'
                 "k (passages read, log scale)</text>"
                 f'<text class="axis" transform="translate(12 {top + plot_h / 2:.1f}) rotate(-90)" '
                 'text-anchor="middle">answer recall@k</text>')
    for i, run in enumerate(data["runs"]):
        curve: Sequence[float] = run["curve"]
        color = _color(i)
        points = " ".join(f"{x(k):.1f},{y(v):.1f}" for k, v in enumerate(curve, start=1))
        parts.append(f'<polyline class="curve" data-run="{i}" fill="none" stroke="{color}" stroke-width="2" '
                     f'points="{points}"/>')
        for k in data["ks"]:
            if k <= len(curve):
                v = curve[k - 1]
                parts.append(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3.5" fill="{color}">'
                             f'<title>{escape(run["name"])}: recall@{k} = {v:.3f}</title></circle>')
    for i, run in enumerate(data["runs"]):  # legend, bottom right, where recall curves never go
        ly = top + plot_h - 10 - 18 * (len(data["runs"]) - 1 - i)
        lx = width - right - 150
        parts.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="{_color(i)}" '
                     f'stroke-width="3"/><text class="legend" x="{lx + 24}" y="{ly}">{escape(run["name"])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _json_for_script(data: object) -> str:
    """Compact, strict JSON (no NaN: the page's JSON.parse would fail) that cannot end its ``<script>`` element
    early (``<`` written as ``\\u003c``)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


PASSAGE_BLOCK = 1000  # passage-table rows per embedded block; the page parses a block when it first shows a row


def _data_scripts(data: Mapping[str, Any]) -> str:
    """The data as JSON ``<script>`` elements: everything but the passage table, then the table in blocks of
    :data:`PASSAGE_BLOCK` rows, so the page reads only the passages it shows (a 5,000-question report need not
    parse all of them before drawing its first questions)."""
    rows: Sequence[Any] = data["passages"]
    head = {**data, "passages": [], "passage_block": PASSAGE_BLOCK, "passage_blocks": -(-len(rows) // PASSAGE_BLOCK)}
    parts = [f'<script type="application/json" id="odqa-data">{_json_for_script(head)}</script>']
    for b, start in enumerate(range(0, len(rows), PASSAGE_BLOCK)):
        block = _json_for_script(list(rows[start:start + PASSAGE_BLOCK]))
        parts.append(f'<script type="application/json" id="odqa-passages-{b}">{block}</script>')
    return "\n".join(parts)


def render_html(data: Mapping[str, Any]) -> str:
    """The whole page: template, summary, chart, run colours and the data, in one string."""
    template = (resources.files("odqa.report") / "template.html").read_text(encoding="utf-8")
    runs = data["runs"]
    subtitle = (f'{len(data["questions"]):,} questions · {len(runs)} run{"s" if len(runs) != 1 else ""}'
                f'{" · gold: " + data["gold"] if data["gold"] else ""} · odqa {__version__}')
    values = (
        escape("odqa report: " + " vs ".join(run["name"] for run in runs)),
        escape(subtitle),
        "".join(f".run-{i}{{--run:{_color(i)}}}" for i in range(len(runs))),
        summary_table(data),
        recall_chart(data),
    )
    for slot, value in zip(_SLOTS, values, strict=True):
        if template.count(slot) < 1:
            raise RuntimeError(f"report template lacks {slot}")  # a packaging fault, not a user error
        template = template.replace(slot, value)
    head, slot, tail = template.partition("<!--__DATA__-->")  # last: the data may contain any slot name
    return head + _data_scripts(data) + tail
