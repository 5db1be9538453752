"""The scripts under examples/ run as users run them."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parents[1] / "examples"


def test_train_with_retriever_runs_a_real_loop() -> None:
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_with_retriever.py"), "--steps", "2"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    steps = re.findall(r"^step (\d+): loss ([-\d.naif]+), input \((\d+), (\d+), (\d+)\)", done.stdout, re.MULTILINE)
    assert [int(s[0]) for s in steps] == [1, 2]
    assert all(math.isfinite(float(s[1])) and float(s[1]) > 0 for s in steps)
    assert all((int(s[2]), int(s[3])) == (4, 5) and 0 < int(s[4]) <= 256 for s in steps)
    assert done.stdout.strip().splitlines()[-1] == "trained 2 steps on 32 questions"
