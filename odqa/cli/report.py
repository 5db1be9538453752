"""``odqa report``: a self-contained HTML page comparing runs question by question (and the data as JSON)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from odqa.cli._app import app, console, guarded
from odqa.cli.eval import KOpt, _parse_ks
from odqa.errors import ConfigError

__all__ = ["report_command"]


@app.command("report")
@guarded
def report_command(
    runs: Annotated[list[Path], typer.Argument(
        metavar="RUN...", help="Refine, retrieve or read outputs (FiD or Atlas JSON Lines), shown side by side.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML page to write.")],
    gold: Annotated[Path | None, typer.Option(
        help="Questions and gold answers (any file `odqa refine` reads); default: those in the runs.")] = None,
    pred: Annotated[list[Path] | None, typer.Option(
        help="Predictions for the run at the same position (any format `odqa eval` reads); repeat per run.")
    ] = None,
    name: Annotated[list[str] | None, typer.Option(
        help="A name for the run at the same position (default: its file name); repeat per run.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the page's data as JSON here.")
                        ] = None,
    k: KOpt = "1,5,10,20,100",
    texts: Annotated[int, typer.Option(
        help="Passages per question and run whose text is embedded (the first answer-bearing one always is).")
    ] = 10,
) -> None:
    """Report: recall@k of each run, a recall curve, and every question's passages with the answers marked."""
    from rich.console import Console
    from rich.table import Table

    from odqa.report import ReportConfig, RunSpec, write_report

    preds, names = pred or [], name or []
    if len(preds) > len(runs) or len(names) > len(runs):
        raise ConfigError(f"got {len(runs)} run(s) but {len(preds)} --pred and {len(names)} --name; give at most "
                          "one of each per run, in the order of the runs")
    specs = tuple(
        RunSpec(str(path), names[i] if i < len(names) else None, str(preds[i]) if i < len(preds) else None)
        for i, path in enumerate(runs)
    )
    config = ReportConfig(specs, str(out), None if gold is None else str(gold),
                          None if json_out is None else str(json_out), _parse_ks(k), texts)
    summary = write_report(config)
    table = Table(title=f"odqa report: {summary.questions:,} questions")
    ks = list(summary.runs[0]["recall"])
    for column in ("run", "answerable", *(f"R@{k}" for k in ks)):
        table.add_column(column, justify="left" if column == "run" else "right")
    has_preds = any("exact" in run for run in summary.runs)
    if has_preds:
        table.add_column("EM %", justify="right")
        table.add_column("F1 %", justify="right")
    for run in summary.runs:
        cells = [run["name"], str(run["answerable"]), *(f"{run['recall'][k]:.3f}" for k in ks)]
        if has_preds:
            cells += ["–" if run.get(key) is None else f"{run[key]:.1f}" for key in ("exact", "f1")]
        table.add_row(*cells)
    Console().print(table)
    console.print(f"wrote {summary.out} ({summary.bytes / 1e6:.1f} MB)", highlight=False)
    if summary.json_out is not None:
        console.print(f"wrote {summary.json_out}", highlight=False)
