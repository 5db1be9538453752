"""HybridQA retrieval over tables and linked passages: answer recall@1/5/10 of every table scorer, for the
questions answered from a cell (``table``) and from a linked passage (``passage``) apart.

Data (``bench/data/hybridqa``, MIT, see its SOURCE.md): HybridQA dev questions drawn at random (seed 13) with their
WikiTables-WithLinks tables; ``dev.tune.json`` is the slice the table-hybrid weights were chosen on,
``dev.heldout.json`` the rest, reported apart. The ``hybridqa`` floors gate the held-out figures of the default,
which must also reach BM25's and the refine hybrid's R@1 and R@5.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from odqa.bench._common import BENCH, say
from odqa.config import EmbedConfig, RefineConfig
from odqa.tables import TableHybridWeights

__all__ = ["DATA", "DEFAULT", "SCORERS", "check", "run", "table"]

DATA = BENCH / "data" / "hybridqa"
KS = (1, 5, 10)
#: name -> (RefineConfig.scorer, table-hybrid weights): refine's scorers, the linker, the default, and the default
#: with BM25 and dense given full weight (what the default's zero weights for them were measured against).
SCORERS: dict[str, tuple[str, TableHybridWeights | None]] = {
    "bm25": ("bm25", None),
    "dense": ("dense", None),
    "hybrid": ("hybrid", None),
    "table": ("table", None),
    "table-hybrid": ("table-hybrid", None),
    "table-hybrid+bm25+dense": ("table-hybrid", TableHybridWeights(bm25=1.0, dense=1.0)),
}
DEFAULT = "table-hybrid"
_QUICK = ("bm25", "table", "table-hybrid")  # a quick run: the default and BM25, which need no dense encoding


def _recall(questions: Path, scorer: str, weights: TableHybridWeights | None, encoder: Any, tmp: Path
            ) -> dict[str, float]:
    from odqa.evaluate.run import EvalConfig, run_eval
    from odqa.tables import refine_tables_to_file

    out = tmp / f"{questions.stem}.{scorer}.jsonl"
    embed = encoder.config if encoder is not None else EmbedConfig()
    config = RefineConfig(scorer=scorer, k=max(KS), embed=embed)  # type: ignore[arg-type]
    refine_tables_to_file(questions, DATA / "WikiTables-WithLinks", out, config, encoder, weights=weights)
    metrics = run_eval(EvalConfig(dataset="fid", predictions=str(out), ks=KS))
    return {key: float(value) for key, value in metrics.items()  # type: ignore[arg-type]
            if key.startswith(("recall@", "answerable"))}


def run(quick: bool = False) -> dict[str, Any]:
    """``{"results": {split: {scorer: {"recall@k[ group]": value, "answerable[ group]": n}}}}`` for both splits
    (``quick``: the held-out split, the default, the linker and BM25)."""
    from odqa.embed import Encoder
    from odqa.tables import tables_need_encoder

    splits = {"heldout": DATA / "dev.heldout.json"} if quick else {"tune": DATA / "dev.tune.json",
                                                                   "heldout": DATA / "dev.heldout.json"}
    scorers = {name: how for name, how in SCORERS.items() if not quick or name in _QUICK}
    # The model loads only when a scorer run needs it (dense, hybrid, table-hybrid with a dense weight).
    dense = any(tables_need_encoder(RefineConfig(scorer=scorer), weights)  # type: ignore[arg-type]
                for scorer, weights in scorers.values())
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        encoder = stack.enter_context(Encoder(EmbedConfig(cache_dir=str(Path(tmp) / "cache")))) if dense else None
        for split, questions in splits.items():
            results[split] = {}
            for name, (scorer, weights) in scorers.items():
                row = results[split][name] = _recall(questions, scorer, weights, encoder, Path(tmp))
                say(f"  {split:8s} {name:24s} " + " ".join(f"R@{k}={row[f'recall@{k}']:.3f}" for k in KS))
    return {"ks": list(KS), "results": results}


def table(results: Mapping[str, Mapping[str, Mapping[str, float]]], ks: Sequence[int] = KS) -> str:
    """A plain-text table: one line per split and scorer; all, cell-answered and passage-answered recall@k."""
    lines = []
    for split, by_scorer in results.items():
        first = next(iter(by_scorer.values()))
        lines.append(f"{split} (n={first['answerable']:.0f}: table {first.get('answerable table', 0):.0f}, "
                     f"passage {first.get('answerable passage', 0):.0f})")
        head = " | ".join(f"{group} R@{','.join(map(str, ks))}" for group in ("all", "table", "passage"))
        lines.append(f"  {'scorer':<24} {head}")
        for scorer, m in by_scorer.items():
            cells = [" ".join(f"{m.get(f'recall@{k}{suffix}', float('nan')):.2f}" for k in ks)
                     for suffix in ("", " table", " passage")]
            lines.append(f"  {scorer:<24} " + " | ".join(cells))
    return "\n".join(lines)


def check(results: dict[str, Any], floors: dict[str, float]) -> list[str]:
    """Failures: a held-out figure of the default below its floor, or the default below BM25 or the refine
    hybrid (when measured: not in a quick run) at R@1 or R@5 on all held-out questions."""
    held = results["results"]["heldout"]
    failures = [f"hybridqa {key}: {held[DEFAULT][key]:.3f} < floor {floor}" for key, floor in floors.items()
                if not key.startswith("_") and held[DEFAULT][key] < floor]
    for rival in ("bm25", "hybrid"):
        for k in (1, 5) if rival in held else ():
            ours, theirs = held[DEFAULT][f"recall@{k}"], held[rival][f"recall@{k}"]
            if ours < theirs:
                failures.append(f"hybridqa {DEFAULT} recall@{k} {ours:.3f} < {rival} {theirs:.3f}")
    return failures
