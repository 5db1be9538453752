"""Refinement quality on TimeQA (hard): answer recall@k of every scorer, in two settings.

- ``own``: each question's candidates are its own article's 100-word passages (Complex-TR's setting, one source);
- ``distractors``: the same plus the passages of 20 other articles drawn at random (seeded) for each question.

Answerable questions only. Each figure is also given per half of the articles (split by a hash of the article
id): the hybrid weights were chosen on half 0, so half 1 is held out. The ``refine_quality`` floors gate it.
"""

from __future__ import annotations

import hashlib
import random
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from odqa.bench._common import TIMEQA, say
from odqa.config import EmbedConfig, HybridConfig, RefineConfig
from odqa.records import Document, Example

__all__ = ["KS", "SCORERS", "articles", "check", "run", "with_distractors"]

KS = (1, 2, 3, 5, 10, 20)
SCORERS: dict[str, RefineConfig] = {
    "original": RefineConfig(scorer="original"),
    "bm25": RefineConfig(scorer="bm25"),
    "dense": RefineConfig(scorer="dense"),
    "rrf": RefineConfig(scorer="hybrid", hybrid=HybridConfig(fusion="rrf")),
    "weighted (no temporal)": RefineConfig(scorer="hybrid", hybrid=HybridConfig(temporal_weight=0.0)),
    "hybrid (default)": RefineConfig(scorer="hybrid"),
}
GATED = ("bm25", "dense", "hybrid (default)")  # what the floors need; a quick run scores only these


def half(doc_id: str) -> int:
    return int(hashlib.md5(doc_id.encode()).hexdigest(), 16) % 2


def articles(examples: Sequence[Example]) -> dict[str, Document]:
    """Every distinct article of ``examples``, by id."""
    docs: dict[str, Document] = {}
    for ex in examples:
        for doc in ex.ctxs or ():
            docs.setdefault(doc.id, doc)
    return docs


def with_distractors(examples: Sequence[Example], docs: dict[str, Document], n: int, seed: int) -> list[Example]:
    """Each example's own candidates plus ``n`` other articles of ``docs``, drawn with a seeded RNG."""
    ids = sorted(docs)
    rng = random.Random(seed)
    out = []
    for ex in examples:
        own = {d.id for d in ex.ctxs or ()}
        others = [docs[i] for i in rng.sample(ids, n + len(own)) if i not in own][:n]
        out.append(replace(ex, ctxs=(*(ex.ctxs or ()), *others)))
    return out


def _evaluate(examples: Sequence[Example], config: RefineConfig, encoder: Any) -> dict[str, dict[int, float]]:
    from odqa.evaluate import has_answer, recall_at_k
    from odqa.refine import refine

    flags: dict[str, list[list[bool]]] = {"all": [], "half0": [], "half1": []}
    for item in refine(examples, config, encoder):
        marks = [has_answer(h.passage.text, item.example.answers) for h in item.hits]
        flags["all"].append(marks)
        flags[f"half{half((item.example.ctxs or ())[0].id)}"].append(marks)
    return {name: recall_at_k(rows, KS) for name, rows in flags.items()}


def run(quick: bool = False, cache: str | None = None) -> dict[str, Any]:
    """Recall@k per setting, scorer and half (``quick``: only the gated scorers, still every question).

    ``cache``: an embedding cache folder to use (shared with other suites of a quick run) instead of a throwaway one.
    """
    from odqa.datasets import load_timeqa
    from odqa.embed import Encoder

    answerable = [ex for ex in load_timeqa(TIMEQA) if ex.answers]
    settings = {"own": answerable, "distractors": with_distractors(answerable, articles(answerable), 20, 13)}
    results: dict[str, dict[str, dict[str, dict[int, float]]]] = {}
    # A throwaway cache: each passage is encoded once for every scorer and setting, never read from an old run.
    with tempfile.TemporaryDirectory() as throwaway, Encoder(EmbedConfig(cache_dir=cache or throwaway)) as encoder:
        for setting, items in settings.items():
            results[setting] = {}
            for name, base in SCORERS.items():
                if quick and name not in GATED:
                    continue
                config = replace(base, k=max(KS), embed=encoder.config)
                row = results[setting][name] = _evaluate(items, config, encoder)
                say(f"  {setting:12s} {name:24s} " + " ".join(f"R@{k}={row['all'][k]:.3f}" for k in (1, 5, 20)))
        precision = encoder.precision
    return {"questions": len(answerable), "precision": precision, "ks": list(KS), "results": results}


def check(results: dict[str, Any], floors: dict[str, float]) -> list[str]:
    """Failures: a figure below its floor, or hybrid not beating the best single scorer at R@5."""
    failures = []
    table = results["results"]
    for key, floor in floors.items():
        if key.startswith("_"):
            continue
        setting, scorer, split, k = key.split("|")
        value = table[setting][scorer][split][int(k)]
        if value < floor:
            failures.append(f"refine quality {key}: {value:.3f} < floor {floor:.3f}")
    for setting, rows in table.items():
        hybrid = rows["hybrid (default)"]["all"][5]
        best_single = max(rows["bm25"]["all"][5], rows["dense"]["all"][5])
        if hybrid <= best_single:
            failures.append(f"refine quality {setting}: hybrid R@5 {hybrid:.3f} does not beat the best single "
                            f"scorer {best_single:.3f}")
    return failures
