"""JEMHopQA metrics (paper 002 section 3.3), computed as the dataset's official ``evaluate.py`` does, as
fractions:

- ``a``: answer exact match (``em``, after :func:`~odqa.evaluate.ja_similarity.normalize_ja_answer`) and
  similarity match (``score``, :class:`~odqa.evaluate.ja_similarity.TokenSimilarity`);
- ``e``, ``r``, ``er``: derivation precision, recall and F1. Derivations ``[subj, rel, [obj, ...]]`` are
  flattened to one triple per object; the alignment score is the best one-to-one assignment between predicted
  and gold triples (scipy's ``linear_sum_assignment``, maximising), each pair scored by the mean similarity of
  subject and object (``e``), of the relation (``r``), or of all three (``er``); precision = score / predicted
  triples, recall = score / gold triples.

Without chikkarpy, synonym matching is off and the result's ``note`` says so; SudachiPy's ``full`` dictionary
is used when installed (as the official script does), ``core`` otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from odqa.errors import InputError
from odqa.evaluate._common import check_missing, mean
from odqa.evaluate.ja_similarity import TokenSimilarity, normalize_ja_answer
from odqa.records import Example

__all__ = ["QuestionScores", "Triple", "alignment_score", "evaluate_jemhopqa", "flatten_derivations", "score_question"]

Triple = tuple[str, str, str]
_DIMS: dict[str, tuple[int, ...]] = {"e": (0, 2), "r": (1,), "er": (0, 2, 1)}


def flatten_derivations(derivations: object, where: str) -> list[Triple]:
    """``[[subj, rel, [obj, ...]], ...]`` as one ``(subj, rel, obj)`` per object (a bare string is one)."""
    if derivations is None:
        return []
    if not isinstance(derivations, list):
        raise InputError(f"{where}: derivations must be a list of [subject, relation, [object, ...]]")
    triples: list[Triple] = []
    for step in derivations:
        if not isinstance(step, (list, tuple)) or len(step) != 3:
            raise InputError(f"{where}: derivation step {step!r} is not [subject, relation, [object, ...]]")
        subj, rel, objs = step
        if not isinstance(objs, (list, tuple, str)):
            raise InputError(f"{where}: the objects of derivation step {step!r} must be a list of strings")
        for obj in [objs] if isinstance(objs, str) else objs:
            triples.append((str(subj), str(rel), str(obj)))
    return triples


def alignment_score(
    pred: Sequence[Triple], gold: Sequence[Triple], similarity: TokenSimilarity, dim: str
) -> float:
    """The best one-to-one alignment's summed pair scores, pairs scored on the parts ``dim`` names."""
    if not pred or not gold:
        return 0.0
    parts = _DIMS[dim]
    scores = np.array([[float(np.mean([similarity(p[k], g[k]) for k in parts])) for g in gold] for p in pred])
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return float(scores[rows, cols].sum())


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's scores, the columns of the official script's per-question ``-o`` file."""

    answer: tuple[float, float] | None  # (em, score); None: not scored (no answer, --ignore-missing)
    derivation: Mapping[str, tuple[float, float, float]] | None  # dim -> (precision, recall, f1); None: not scored


def _answer_scores(example: Example, answer: object, similarity: TokenSimilarity) -> tuple[float, float]:
    gold_answer = example.answers[0] if example.answers else ""
    if not isinstance(answer, str) or not answer:  # as the official script: an empty or non-string answer is 0
        return 0.0, 0.0
    return float(normalize_ja_answer(answer) == normalize_ja_answer(gold_answer)), similarity(answer, gold_answer)


def _derivation_scores(
    example: Example, derivations: object, similarity: TokenSimilarity
) -> dict[str, tuple[float, float, float]]:
    pred_triples = flatten_derivations(derivations, f"prediction for {example.id!r}")
    gold_triples = flatten_derivations(list(example.meta.get("derivations", [])), f"gold {example.id!r}")
    out = {}
    for dim in _DIMS:
        matched = alignment_score(pred_triples, gold_triples, similarity, dim)
        precision = matched / len(pred_triples) if pred_triples else 0.0
        recall = matched / len(gold_triples) if gold_triples else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
        out[dim] = (precision, recall, f1)
    return out


def score_question(
    example: Example, prediction: object, similarity: TokenSimilarity, *, ignore_missing: bool = False
) -> QuestionScores:
    """Score one prediction (an answer string or ``{"answer", "derivations"}``) against its gold example.

    A part missing from the prediction scores 0, or, with ``ignore_missing``, is ``None``: left out of that
    part's averages (the official script's ``-ig`` skips a question per part: answers and derivations apart)."""
    pred = _as_record(example.id, prediction)
    answer = None if ignore_missing and "answer" not in pred else _answer_scores(example, pred.get("answer"),
                                                                                  similarity)
    derivation = None if ignore_missing and "derivations" not in pred else _derivation_scores(
        example, pred.get("derivations"), similarity)
    return QuestionScores(answer=answer, derivation=derivation)


def _summary(rows: Sequence[QuestionScores]) -> dict[str, dict[str, float | None]]:
    answers = [r.answer for r in rows if r.answer is not None]
    out: dict[str, dict[str, float | None]] = {
        "a": {"em": mean([a[0] for a in answers]), "score": mean([a[1] for a in answers])}
    }
    derivations = [r.derivation for r in rows if r.derivation is not None]
    for dim in _DIMS:
        values = [d[dim] for d in derivations]
        out[dim] = {name: mean([v[i] for v in values]) for i, name in enumerate(("prec", "recall", "f1"))}
    return out


def _as_record(qid: str, value: object) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if value is None or isinstance(value, str):
        return {"answer": value}
    raise InputError(f"prediction for {qid!r} must be an answer string or an object with 'answer' and "
                     f"'derivations', got {type(value).__name__}")


def evaluate_jemhopqa(
    examples: Iterable[Example],
    predictions: Mapping[str, object],
    *,
    similarity: TokenSimilarity | None = None,
    ignore_missing: bool = False,
) -> dict[str, object]:
    """The official ``{"a": {em, score}, "e"|"r"|"er": {prec, recall, f1}}``, per question type, a note."""
    golds = list(examples)
    kept = check_missing([e.id for e in golds], predictions, ignore_missing=ignore_missing)
    similarity = similarity or TokenSimilarity()
    rows: list[tuple[str, QuestionScores]] = []
    no_answer = no_derivations = 0
    for example in golds:
        if example.id in kept:
            record = _as_record(example.id, predictions[example.id])
            no_answer += "answer" not in record
            no_derivations += "derivations" not in record
            scores = score_question(example, record, similarity, ignore_missing=ignore_missing)
            rows.append((str(example.meta.get("type", "unknown")), scores))
    out: dict[str, object] = dict(_summary([r for _, r in rows]))
    out["by_type"] = {t: _summary([r for k, r in rows if k == t]) for t in sorted({k for k, _ in rows})}
    out["total"] = len(rows)
    if len(kept) < len(golds):
        out["missing"] = len(golds) - len(kept)
    out["note"] = _note(similarity, no_answer, no_derivations, ignore_missing=ignore_missing)
    return out


def _note(similarity: TokenSimilarity, no_answer: int, no_derivations: int, *, ignore_missing: bool) -> str:
    notes = [f"SudachiPy dictionary: {similarity.dictionary}"
             + ("" if similarity.dictionary == "full" else " (the official script uses full)")]
    user_dic = similarity.user_dic
    if similarity.synonyms:
        notes.append("synonym matching: on (chikkarpy" + (f", with {user_dic.name})" if user_dic else
                                                          ", without the dataset's user.dic: pass --synonym-dic)"))
    else:
        notes.append("synonym matching: off (chikkarpy is not installed, but the official script uses it: "
                     "similarity scores, and so a.score, e, r and er, can be lower than the script's)")
        if user_dic is not None:
            notes.append(f"--synonym-dic {user_dic.name} was not used (it needs chikkarpy)")
    how = "left out of those averages" if ignore_missing else "scored as empty"
    if no_answer:
        notes.append(f"{no_answer} predictions had no answer ({how})")
    if no_derivations:
        notes.append(f"{no_derivations} predictions had no derivations ({how})")
    return "; ".join(notes)  # parts hold no ";": the CLI prints one per line
