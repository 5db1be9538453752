"""TimeQA metrics (Chen et al., 2021; its ``utils.get_raw_scores``): SQuAD EM and token F1, max over gold
answers, as percentages, with the answerable / unanswerable breakdown.

An unanswerable question (no gold answer) has the single gold answer ``""``: only an empty prediction scores.
The same scorer serves any FiD-style question file (``odqa eval --dataset fid PRED GOLD``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from odqa.evaluate._common import answer_string, check_missing, mean
from odqa.evaluate.answers import exact_match, token_f1
from odqa.records import Example

__all__ = ["evaluate_answers"]


def _block(em: list[float], f1: list[float]) -> dict[str, float | int | None]:
    return {"exact": mean(em, 100.0), "f1": mean(f1, 100.0), "total": len(em)}


def evaluate_answers(
    examples: Iterable[Example], predictions: Mapping[str, object], *, ignore_missing: bool = False
) -> dict[str, object]:
    """``exact``, ``f1``, ``total`` over all questions, then the same for answerable and unanswerable ones."""
    golds = list(examples)
    kept = check_missing([e.id for e in golds], predictions, ignore_missing=ignore_missing)
    rows: dict[bool, tuple[list[float], list[float]]] = {True: ([], []), False: ([], [])}
    for example in golds:
        if example.id not in kept:
            continue
        pred = answer_string(example.id, predictions[example.id])
        gold = list(example.answers) or [""]
        em, f1 = rows[bool(example.answers)]
        em.append(exact_match(pred, gold))
        f1.append(token_f1(pred, gold))
    all_em = rows[True][0] + rows[False][0]
    all_f1 = rows[True][1] + rows[False][1]
    out: dict[str, object] = dict(_block(all_em, all_f1))
    out["answerable"] = _block(*rows[True])
    out["unanswerable"] = _block(*rows[False])
    if len(kept) < len(golds):
        out["missing"] = len(golds) - len(kept)
    return out

