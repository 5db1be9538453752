"""``odqa bench`` outside a source checkout: its help says it runs from a clone, and a missing bench/ is one typed
line, before any suite starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from odqa.bench import _common, run_bench
from odqa.cli import app
from odqa.errors import InputError


def test_help_says_bench_runs_from_a_clone() -> None:
    result = CliRunner().invoke(app, ["bench", "--help"], terminal_width=400)
    assert result.exit_code == 0
    assert "source checkout" in " ".join(result.output.replace("│", " ").split())


def test_missing_bench_folder_is_one_typed_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    installed = tmp_path / "site-packages" / "bench"  # where parents[2] / "bench" points in an installed wheel
    monkeypatch.setattr(_common, "BENCH", installed)
    monkeypatch.setattr(_common, "TIMEQA", installed / "data" / "timeqa" / "human_train.hard.json.gzip")
    with pytest.raises(InputError, match="source checkout"):
        run_bench(["refine"], tmp_path / "out")
    result = CliRunner().invoke(app, ["bench", "refine", "--quick", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("InputError: ") and "git clone" in lines[0]
    assert not (tmp_path / "out" / "bench-quick.json").exists()
