from __future__ import annotations

import json
from pathlib import Path

from odqa.config import EmbedConfig
from odqa.demo import DEMO_KS, run_demo


def test_demo_runs_every_scorer_offline(tmp_path: Path, minilm_path: Path) -> None:
    rows = run_demo(tmp_path, EmbedConfig(cache_dir=str(tmp_path / "cache"), device="cpu"))
    by_scorer = {row.scorer: row for row in rows}
    assert list(by_scorer) == ["original", "bm25", "dense", "hybrid"]
    for row in rows:
        assert all(0.0 <= row.recall[k] <= 1.0 for k in DEMO_KS)
        assert [row.recall[k] for k in DEMO_KS] == sorted(row.recall[k] for k in DEMO_KS)
        lines = row.output.read_text().splitlines()
        assert len(lines) == 108 and len(json.loads(lines[0])["ctxs"]) == max(DEMO_KS)
    # The point of refinement: scoring beats the article's own passage order, and hybrid beats both parts.
    assert by_scorer["bm25"].recall[5] > by_scorer["original"].recall[5]
    assert by_scorer["hybrid"].recall[5] > max(by_scorer["bm25"].recall[5], by_scorer["dense"].recall[5])
