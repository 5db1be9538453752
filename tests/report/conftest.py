"""Two runs over the shipped TimeQA slice, made without a model: BM25 and the original passage order."""

from __future__ import annotations

from pathlib import Path

import pytest

from odqa.config import RefineConfig
from odqa.datasets import load_timeqa
from odqa.demo import demo_data
from odqa.pipeline import refine_to_file


@pytest.fixture(scope="session")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"bm25": path, "original": path}``: FiD JSON Lines of the demo slice, top 20 passages per question."""
    folder = tmp_path_factory.mktemp("report-runs")
    examples = list(load_timeqa(demo_data()))
    return {scorer: refine_to_file(examples, folder / f"{scorer}.jsonl", RefineConfig(k=20, scorer=scorer)).output
            for scorer in ("bm25", "original")}
