"""HybridQA retrieval over tables and linked passages: answer recall@1/5/10 of every table scorer, for the
questions answered from a cell (``table``) and from a linked passage (``passage``) apart.

Data (bench/data/hybridqa, MIT, see its SOURCE.md): HybridQA dev questions drawn at random (seed 13) with their
WikiTables-WithLinks tables; ``dev.tune.json`` is the slice the table-hybrid weights were looked at on,
``dev.heldout.json`` the rest, reported apart. Floors in ``bench/floors.json`` (key ``hybridqa``) gate the
held-out figures of the default, which must also reach BM25's and the refine hybrid's R@1 and R@5.

    python bench/bench_hybridqa.py [--model minilm] [--json bench/results/hybridqa.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from odqa.config import EmbedConfig, RefineConfig
from odqa.evaluate.run import EvalConfig, run_eval
from odqa.io import atomic_write
from odqa.tables import TableHybridWeights, refine_tables_to_file

HERE = Path(__file__).parent
DATA = HERE / "data" / "hybridqa"
TABLES = DATA / "WikiTables-WithLinks"
SPLITS = {"tune": DATA / "dev.tune.json", "heldout": DATA / "dev.heldout.json"}
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


def run(
    splits: Mapping[str, Path] = SPLITS,
    tables: Path = TABLES,
    scorers: Mapping[str, tuple[str, TableHybridWeights | None]] = SCORERS,
    model: str = "minilm",
    ks: Sequence[int] = KS,
) -> dict[str, dict[str, dict[str, float]]]:
    """``{split: {scorer: {"recall@k[ group]": value, "answerable[ group]": n}}}`` for every split and scorer."""
    from odqa.embed import Encoder

    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        embed = EmbedConfig(model=model, cache_dir=str(Path(tmp) / "cache"))  # each text encoded once
        with Encoder(embed) as encoder:
            for split, questions in splits.items():
                results[split] = {}
                for name, (scorer, weights) in scorers.items():
                    out = Path(tmp) / f"{split}.{name}.jsonl"
                    config = RefineConfig(scorer=scorer, k=max(ks), embed=embed)  # type: ignore[arg-type]
                    refine_tables_to_file(questions, tables, out, config, encoder, weights=weights)
                    metrics = run_eval(EvalConfig(dataset="fid", predictions=str(out), ks=tuple(ks)))
                    results[split][name] = {key: float(value) for key, value in metrics.items()  # type: ignore[arg-type]
                                            if key.startswith(("recall@", "answerable"))}
    return results


def table(results: Mapping[str, Mapping[str, Mapping[str, float]]], ks: Sequence[int] = KS) -> str:
    """A plain-text table: one line per split and scorer; all, cell-answered and passage-answered recall@k."""
    lines = []
    for split, by_scorer in results.items():
        first = next(iter(by_scorer.values()))
        sizes = f"n={first['answerable']:.0f}: table {first.get('answerable table', 0):.0f}, " \
                f"passage {first.get('answerable passage', 0):.0f}"
        lines.append(f"{split} ({sizes})")
        head = " | ".join(f"{group} R@{','.join(map(str, ks))}" for group in ("all", "table", "passage"))
        lines.append(f"  {'scorer':<24} {head}")
        for scorer, m in by_scorer.items():
            cells = []
            for suffix in ("", " table", " passage"):
                cells.append(" ".join(f"{m.get(f'recall@{k}{suffix}', float('nan')):.2f}" for k in ks))
            lines.append(f"  {scorer:<24} " + " | ".join(cells))
    return "\n".join(lines)


def check_floors(results: Mapping[str, Mapping[str, Mapping[str, float]]], path: Path) -> list[str]:
    """Failures: a held-out figure of the default below its floor, or the default below BM25 or the refine
    hybrid at R@1 or R@5 on all held-out questions."""
    floors = json.loads(path.read_text())["hybridqa"]
    held = results["heldout"]
    failures = [f"{key}: {held[DEFAULT][key]:.3f} < floor {floor}" for key, floor in floors.items()
                if not key.startswith("_") and held[DEFAULT][key] < floor]
    for rival in ("bm25", "hybrid"):
        for k in (1, 5):
            if held[DEFAULT][f"recall@{k}"] < held[rival][f"recall@{k}"]:
                failures.append(f"{DEFAULT} recall@{k} {held[DEFAULT][f'recall@{k}']:.3f} < {rival} "
                                f"{held[rival][f'recall@{k}']:.3f}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="minilm", help="embedding preset for dense, hybrid, table-hybrid")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "hybridqa.json")
    parser.add_argument("--floors", type=Path, default=HERE / "floors.json")
    args = parser.parse_args()
    results = run(model=args.model)
    print(table(results))
    with atomic_write(args.json) as fh:
        json.dump(results, fh, indent=1)
    if args.model != "minilm":
        return 0
    failures = check_floors(results, args.floors)
    print("floors: " + ("all met" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
