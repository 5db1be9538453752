"""``odqa --help`` names every stage: each registered command by its name."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from odqa.cli import app


def _names() -> list[str]:
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def test_help_names_every_registered_command() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=400)
    assert result.exit_code == 0
    help_text = " ".join(result.output.split("Commands")[0].replace("│", " ").split())
    missing = [name for name in _names() if name not in help_text]
    assert missing == []


def test_help_lists_the_pipeline_stages_in_order() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=400)
    help_text = " ".join(result.output.split("Commands")[0].replace("│", " ").split())
    stages = ["crawl", "refine", "index", "retrieve", "rerank", "read", "train-reader", "eval", "report", "bench"]
    positions = [help_text.find(stage) for stage in stages]
    assert -1 not in positions and positions == sorted(positions), help_text
