"""CI runs exactly the README's test command, and that command runs the tests, ruff and mypy; then the benchmark
gate."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_ci_runs_the_readme_test_command_then_the_benchmark_gate() -> None:
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert "make test " in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "set -euo pipefail" in commands  # a failing step fails CI
    gate = "HF_HUB_OFFLINE=1 .venv/bin/odqa bench all --quick --check --out bench/results"
    assert commands[-2:] == ["make test", gate]


def test_make_test_runs_the_tests_then_ruff_and_mypy() -> None:
    make = shutil.which("make")
    assert make is not None
    dry = subprocess.run([make, "-n", "-C", str(ROOT), "--no-print-directory", "test"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert dry[:2] == ["bash scripts/setup.sh", "HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q"]
    ruff, mypy = dry[2:]
    assert ruff.startswith(".venv/bin/ruff check odqa tests bench") and mypy == ".venv/bin/mypy odqa"
    lint = subprocess.run([make, "-n", "-C", str(ROOT), "--no-print-directory", "lint"], capture_output=True,
                          text=True, check=True).stdout.splitlines()
    assert lint[1:] == dry[2:]  # `make lint` alone runs the same checks
