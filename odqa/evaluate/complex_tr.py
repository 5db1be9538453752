"""Complex-TR metrics (paper 004 section 4.2): EM, token F1, set accuracy and answer F1, overall, for
answerable/unanswerable questions, per level (L2/L3) and temporal hop count (1-hop/multi-hop), and for single-
and multi-answer questions (Table 7).

Two modes, both averaged over questions and reported as percentages under the official key names:

- default: a prediction is split on the separator ``$and`` when present, otherwise on the whole word ``and``
  between whitespace; gold answers and predicted parts are SQuAD-normalised before they are compared;
- ``official=True``: the behaviour of ``prompt_experiment/sem_metric/evaluate.py`` (nusnlp/complex-tr): split
  on ``" $and "``, else ``"$and"``, else the bare substring ``"and"`` (so "Scotland" splits), else ``","``;
  gold and parts are only lowercased and stripped (comma parts not even that).

Everything else is shared: EM and token F1 compare the *first* predicted part with each gold answer (max over
gold); set accuracy is ``set(gold) == set(parts)``; answer F1 counts parts found in gold as true positives,
each distinct answer once in the default mode (the official script counts a repeated part again).
See docs/metrics.md for a worked example.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from odqa.evaluate._common import answer_string, check_missing, mean
from odqa.evaluate.answers import exact_match, normalize_answer, token_f1
from odqa.records import Example

__all__ = [
    "QuestionScores", "answer_count", "evaluate_complex_tr", "gold_answers", "score_question", "split_prediction",
]

_SEPARATOR = re.compile(r"\s*\$and\s*")
_AND_WORD = re.compile(r"\s+and\s+")


def split_prediction(prediction: str, *, official: bool = False) -> list[str]:
    """The answers a prediction string lists, as the chosen mode compares them."""
    if official:
        for sep in (" $and ", "$and", "and"):
            if sep in prediction:
                return [part.lower().strip() for part in prediction.split(sep)]
        if "," in prediction:
            return prediction.split(",")
        return [prediction.lower().strip()]
    pattern = _SEPARATOR if "$and" in prediction else _AND_WORD
    return [normalize_answer(part) for part in pattern.split(prediction)]


def gold_answers(answers: Iterable[str], *, official: bool = False) -> list[str]:
    """Gold answers as compared: those with a non-empty SQuAD form, or ``[""]`` when there is none."""
    if official:
        kept = [a.lower().strip() for a in answers if normalize_answer(a)]
    else:
        kept = [n for n in (normalize_answer(a) for a in answers) if n]
    return kept or [""]


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's scores, each in [0, 1]."""

    em: float
    token_f1: float
    set_acc: float
    answer_f1: float


def score_question(prediction: str, answers: Iterable[str], *, official: bool = False) -> QuestionScores:
    """Score one prediction string against a question's gold answers."""
    gold = gold_answers(answers, official=official)
    parts = split_prediction(prediction, official=official)
    # Answer F1 counts each distinct answer once; the official script counts a repeated part (or gold) again.
    counted, reference = (parts, gold) if official else (list(dict.fromkeys(parts)), list(dict.fromkeys(gold)))
    tp = sum(part in reference for part in counted)
    fp = len(counted) - tp
    fn = sum(ref not in counted for ref in reference)
    precision = tp / (tp + fp)
    recall = tp / (tp + fn)
    answer_f1 = 0.0 if precision == recall == 0 else 2 * precision * recall / (precision + recall)
    return QuestionScores(
        em=exact_match(parts[0], gold),
        token_f1=token_f1(parts[0], gold),
        set_acc=float(set(gold) == set(parts)),
        answer_f1=answer_f1,
    )


def _summary(scores: list[QuestionScores], f1_key: str = "Answer_F1") -> dict[str, float | int | None]:
    return {
        "EM": mean([s.em for s in scores], 100.0),
        "Token_F1": mean([s.token_f1 for s in scores], 100.0),
        "Set_Acc": mean([s.set_acc for s in scores], 100.0),
        f1_key: mean([s.answer_f1 for s in scores], 100.0),
        "total": len(scores),
    }


def evaluate_complex_tr(
    examples: Iterable[Example],
    predictions: Mapping[str, object],
    *,
    official: bool = False,
    ignore_missing: bool = False,
) -> dict[str, object]:
    """Scores over all questions, the official ``HasAns_``/``NoAns_`` keys, per level and hop count and per
    number of gold answers.

    ``examples`` come from :func:`odqa.datasets.complex_tr.load_complex_tr` (their ``meta`` carries
    ``level`` and ``hops``); ``predictions`` map question id to the predicted string.
    """
    golds = list(examples)
    kept = check_missing([e.id for e in golds], predictions, ignore_missing=ignore_missing)
    scored: list[tuple[Example, QuestionScores]] = []
    for example in golds:
        if example.id not in kept:
            continue
        pred = answer_string(example.id, predictions[example.id])
        scored.append((example, score_question(pred, example.answers, official=official)))

    out: dict[str, object] = dict(_summary([s for _, s in scored]))
    # The official script names the subset key "Answer_f1"; kept as is so outputs compare key for key.
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        subset = [s for e, s in scored if bool(e.answers) is wanted]
        if subset:
            out |= {f"{prefix}_{k}": v for k, v in _summary(subset, "Answer_f1").items()}
    out["by_level"] = _grouped(scored, lambda e: str(e.meta.get("level", "unknown")))
    out["by_hops"] = _grouped(scored, lambda e: str(e.meta.get("hops", "unknown")))
    out["by_level_hops"] = _grouped(scored, lambda e: f"{e.meta.get('level', '?')} {e.meta.get('hops', '?')}")
    out["by_answers"] = _grouped(scored, lambda e: answer_count(e.answers, official=official))
    out["mode"] = "official" if official else "default"
    if len(kept) < len(golds):
        out["missing"] = len(golds) - len(kept)
    return out


def answer_count(answers: Iterable[str], *, official: bool = False) -> str:
    """``single-answer``, ``multi-answer`` (paper 004 Table 7) or ``no-answer``: distinct gold answers as compared."""
    distinct = set(gold_answers(answers, official=official)) - {""}
    return "no-answer" if not distinct else "single-answer" if len(distinct) == 1 else "multi-answer"


def _grouped(
    scored: list[tuple[Example, QuestionScores]], key: Callable[[Example], str]
) -> dict[str, dict[str, float | int | None]]:
    groups: dict[str, list[QuestionScores]] = {}
    for example, scores in scored:
        groups.setdefault(key(example), []).append(scores)
    return {name: _summary(groups[name]) for name in sorted(groups)}
