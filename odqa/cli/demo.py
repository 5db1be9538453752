"""``odqa demo``: the whole refine path, offline, on shipped TimeQA questions with the bundled model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from odqa.cli._app import app, console, guarded


@app.command("demo")
@guarded
def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the refined FiD JSON Lines.")] = Path(
        "demo-out"),
) -> None:
    """Refine a shipped TimeQA slice with original order, BM25, dense and hybrid scoring; compare recall."""
    from rich.table import Table

    from odqa.demo import DEMO_KS, demo_data, run_demo

    console.print(f"demo data: {demo_data().name} (TimeQA hard, 32 articles); model: bundled all-MiniLM-L6-v2")
    with console.status("loading the embedding model") as status:
        rows = run_demo(out, on_scorer=lambda s: status.update(f"refining with the {s} scorer"))
    table = Table(title="Answer recall@k on the demo questions (answerable only)")
    table.add_column("scorer")
    for k in DEMO_KS:
        table.add_column(f"R@{k}", justify="right")
    table.add_column("output")
    for row in rows:
        table.add_row(row.scorer, *(f"{row.recall[k]:.3f}" for k in DEMO_KS), str(row.output))
    typer.echo("")
    console.print(table)
