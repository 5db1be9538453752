"""Refinement quality on TimeQA (hard): answer recall@k of every scorer, in two settings.

- ``own``: each question's candidates are its own article's 100-word passages (Complex-TR's setting, one source);
- ``distractors``: the same plus the passages of 20 other articles drawn at random (seeded) for each question.

Answerable questions only. Also reports each half of the articles (split by a hash of the article id): the
hybrid weights were chosen on half 0, so half 1 is held out. Floors in ``bench/floors.json`` gate the result:
the run exits non-zero when a figure drops below its floor.

    python bench/bench_refine_quality.py [--model minilm] [--limit N] [--json bench/results/refine_quality.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

from odqa.chunk import chunk_document
from odqa.config import EmbedConfig, HybridConfig, RefineConfig
from odqa.datasets import load_timeqa
from odqa.embed import Encoder
from odqa.evaluate import has_answer, recall_at_k
from odqa.io import atomic_write
from odqa.records import Document, Example
from odqa.refine import refine

HERE = Path(__file__).parent
DATA = HERE / "data" / "timeqa" / "human_train.hard.json.gzip"
KS = (1, 5, 10, 20)
SCORERS: dict[str, RefineConfig] = {
    "original": RefineConfig(scorer="original"),
    "bm25": RefineConfig(scorer="bm25"),
    "dense": RefineConfig(scorer="dense"),
    "rrf": RefineConfig(scorer="hybrid", hybrid=HybridConfig(fusion="rrf")),
    "weighted (no temporal)": RefineConfig(scorer="hybrid", hybrid=HybridConfig(temporal_weight=0.0)),
    "hybrid (default)": RefineConfig(scorer="hybrid"),
}


def half(doc_id: str) -> int:
    return int(hashlib.md5(doc_id.encode()).hexdigest(), 16) % 2


def articles(examples: list[Example]) -> dict[str, Document]:
    """Every distinct article of ``examples``, by id."""
    docs: dict[str, Document] = {}
    for ex in examples:
        for doc in ex.ctxs or ():
            docs.setdefault(doc.id, doc)
    return docs


def with_distractors(examples: list[Example], docs: dict[str, Document], n: int, seed: int) -> list[Example]:
    """Each example's own candidates plus ``n`` other articles of ``docs``, drawn with a seeded RNG."""
    ids = sorted(docs)
    rng = random.Random(seed)
    out = []
    for ex in examples:
        own = {d.id for d in ex.ctxs or ()}
        others = [docs[i] for i in rng.sample(ids, n + len(own)) if i not in own][:n]
        out.append(replace(ex, ctxs=(*(ex.ctxs or ()), *others)))
    return out


def evaluate(examples: list[Example], config: RefineConfig, encoder: Encoder) -> dict[str, dict[int, float]]:
    flags: dict[str, list[list[bool]]] = {"all": [], "half0": [], "half1": []}
    for item in refine(examples, replace(config, embed=encoder.config), encoder):
        marks = [has_answer(h.passage.text, item.example.answers) for h in item.hits]
        flags["all"].append(marks)
        flags[f"half{half((item.example.ctxs or ())[0].id)}"].append(marks)
    return {name: recall_at_k(rows, KS) for name, rows in flags.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--limit", type=int, default=None, help="first N answerable questions only")
    parser.add_argument("--distractors", type=int, default=20)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "refine_quality.json")
    parser.add_argument("--floors", type=Path, default=HERE / "floors.json")
    args = parser.parse_args()

    answerable = [ex for ex in load_timeqa(DATA) if ex.answers]
    examples = answerable[: args.limit]
    distracted = with_distractors(examples, articles(answerable), args.distractors, args.seed)
    settings = {"own": examples, "distractors": distracted}
    encoder = Encoder(EmbedConfig(model=args.model))
    passages = {p.id for ex in settings["distractors"] for d in ex.ctxs or () for p in chunk_document(d)}
    print(f"{len(examples)} answerable questions, {len(passages)} distinct passages, model {args.model}")

    results: dict[str, dict[str, dict[str, dict[int, float]]]] = {}
    for setting, items in settings.items():
        results[setting] = {}
        for name, base in SCORERS.items():
            started = time.perf_counter()
            config = replace(base, k=max(KS), embed=encoder.config)
            results[setting][name] = evaluate(items, config, encoder)
            row = results[setting][name]
            print(f"{setting:12s} {name:24s} " + " ".join(f"R@{k}={row['all'][k]:.3f}" for k in KS)
                  + f"   R@5 half0={row['half0'][5]:.3f} half1={row['half1'][5]:.3f}"
                  + f"   ({time.perf_counter() - started:.1f}s)", flush=True)

    with atomic_write(args.json) as fh:
        json.dump({"model": args.model, "questions": len(examples), "results": results}, fh, indent=2)
    return check_floors(results, args.floors) if args.limit is None and args.model == "minilm" else 0


def check_floors(results: dict[str, dict[str, dict[str, dict[int, float]]]], path: Path) -> int:
    """Exit status 1 when any figure is below its pinned floor (floors are raised, never lowered silently)."""
    floors = json.loads(path.read_text())["refine_quality"]
    failures = []
    for key, floor in floors.items():
        setting, scorer, split, k = key.split("|")
        value = results[setting][scorer][split][int(k)]
        if value < floor:
            failures.append(f"{key}: {value:.3f} < floor {floor:.3f}")
    for setting in results:
        hybrid = results[setting]["hybrid (default)"]["all"][5]
        best_single = max(results[setting]["bm25"]["all"][5], results[setting]["dense"]["all"][5])
        if hybrid <= best_single:
            failures.append(f"{setting}: hybrid R@5 {hybrid:.3f} does not beat the best single scorer "
                            f"{best_single:.3f}")
    print("floors: " + ("all met" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
