"""HieraDate metrics (paper 000; ``hieradate_evaluate.py`` of Alab-NII/HieraDate), as percentages under the
official keys:

- main question (``em, f1, prec, recall``) and robustness (``ro_em, ro_f1, ro_prec, ro_recall``), and
  extraction (``ex_*``, averaged over all extraction probes): HotpotQA-style EM and token F1 on
  SQuAD-normalised text, where a yes/no/noanswer prediction or gold that differs from the other side scores 0,
  and no shared token scores 0 (so two empty answers give F1 0, unlike SQuAD);
- numerical reasoning (``em_math, f1_math, prec_math, recall_math``): an age ``{"year", "month", "day"}``,
  each part compared as a number; F1 over the three parts;
- comparison reasoning (``em_compare``): EM of the yes/no answers.

Predictions per question: one object with the gold keys (``answer``, ``ans_extract_k``, ``ans_reason_k``,
``ans_robust``), as the official script reads them, or, for answers produced per probe, the main answer under
the question id and each probe under ``"<id>#<key>"`` (see :func:`odqa.datasets.hieradate.probe_examples`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from odqa.datasets.hieradate import PROBE_SEPARATOR, is_lived_longer, probe_keys
from odqa.errors import InputError
from odqa.evaluate._common import answer_string, check_missing, mean
from odqa.evaluate.answers import exact_match, normalize_answer, token_prf
from odqa.records import Example

__all__ = ["age_scores", "answer_scores", "evaluate_hieradate"]

_SPECIAL = frozenset({"yes", "no", "noanswer"})
_AGE_PARTS = ("year", "month", "day")
Scores = tuple[float, float, float, float]  # em, f1, precision, recall


def answer_scores(prediction: str, gold: str) -> Scores:
    """``(em, f1, precision, recall)`` of a text answer, as the official script computes them."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    em = float(pred == ref)
    if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
        return em, 0.0, 0.0, 0.0
    return (em, *token_prf(pred.split(), ref.split()))


def _number(value: object) -> str:
    if isinstance(value, (int, float, str)):
        try:
            return str(float(value))
        except ValueError:
            pass
    return str(value)


def _age_tokens(value: object, what: str) -> list[str]:
    if not isinstance(value, Mapping):
        raise InputError(f'{what} must be an age {{"year", "month", "day"}}, got {type(value).__name__} '
                         f"{str(value)[:40]!r}")
    missing = [p for p in _AGE_PARTS if p not in value]
    if missing:
        raise InputError(f"{what} must have the keys year, month, day; missing {', '.join(missing)}")
    return [_number(value[p]) for p in _AGE_PARTS]


def age_scores(prediction: object, gold: Mapping[str, Any], what: str = "age", *, year_only: bool = False) -> Scores:
    """``(em, f1, precision, recall)`` of an age; a prediction that is not a year/month/day object gets 0.

    In the year-only version an age is its whole years alone, so EM and F1 are equal (paper 000, footnote 5);
    its month and day, written as 0, are not compared.
    """
    ref = _age_tokens(gold, f"gold {what}")
    if not isinstance(prediction, Mapping):
        return 0.0, 0.0, 0.0, 0.0
    pred = _age_tokens(prediction, f"predicted {what}")
    if year_only:
        pred, ref = pred[:1], ref[:1]
    return (float(pred == ref), *token_prf(pred, ref))


def _block(rows: list[Scores], keys: tuple[str, str, str, str]) -> dict[str, float | None]:
    return {key: mean([row[i] for row in rows], 100.0) for i, key in enumerate(keys)}


def _prediction_record(
    qid: str, probes: Mapping[str, Any], predictions: Mapping[str, object]
) -> Mapping[str, Any]:
    value = predictions[qid]
    if isinstance(value, Mapping):
        record: Mapping[str, Any] = value
    else:
        record = {"answer": value} | {
            key: predictions[f"{qid}{PROBE_SEPARATOR}{key}"]
            for key in probe_keys(probes) if f"{qid}{PROBE_SEPARATOR}{key}" in predictions
        }
    missing = [k for k in ["answer", *probe_keys(probes)] if k not in record]
    if missing:
        raise InputError(f"prediction for {qid!r} lacks {', '.join(missing)}; give every probe an answer "
                         f"(an object with these keys, or ids like '{qid}{PROBE_SEPARATOR}{missing[-1]}')")
    return record


def evaluate_hieradate(
    examples: Iterable[Example], predictions: Mapping[str, object], *, ignore_missing: bool = False
) -> dict[str, object]:
    """All official HieraDate metrics over the questions of ``examples`` (from :func:`load_hieradate`)."""
    golds = list(examples)
    kept = check_missing([e.id for e in golds], predictions, ignore_missing=ignore_missing)
    main: list[Scores] = []
    robust: list[Scores] = []
    extract: list[Scores] = []
    numeric: list[Scores] = []
    compare: list[float] = []
    for example in golds:
        if example.id not in kept:
            continue
        probes = example.meta["probes"]
        pred = _prediction_record(example.id, probes, predictions)
        ages = ("ans_reason_1", "ans_reason_2") if is_lived_longer(probes) else ()
        text = {key: answer_string(f"{example.id}{PROBE_SEPARATOR}{key}", pred[key])
                for key in ["answer", *probe_keys(probes)] if key not in ages}
        main.append(answer_scores(text["answer"], example.answers[0]))
        robust.append(answer_scores(text["ans_robust"], str(probes["ans_robust"])))
        extract.extend(answer_scores(text[k], str(probes[k])) for k in text if k.startswith("ans_extract_"))
        year_only = example.meta.get("version") == "year-only"
        numeric.extend(age_scores(pred[k], probes[k], f"{example.id}{PROBE_SEPARATOR}{k}", year_only=year_only)
                       for k in ages)
        comparisons = ["ans_reason_3"] if ages else ["ans_reason_1", "ans_reason_2"]
        compare.extend(exact_match(text[k], [str(probes[k])]) for k in comparisons)

    out: dict[str, object] = {}
    out |= _block(main, ("em", "f1", "prec", "recall"))
    out |= _block(extract, ("ex_em", "ex_f1", "ex_prec", "ex_recall"))
    out |= _block(numeric, ("em_math", "f1_math", "prec_math", "recall_math"))
    out["em_compare"] = mean(compare, 100.0)
    out |= _block(robust, ("ro_em", "ro_f1", "ro_prec", "ro_recall"))
    out["counts"] = {"questions": len(main), "extraction": len(extract),
                     "reasoning_numerical": len(numeric), "reasoning_comparison": len(compare)}
    if len(kept) < len(golds):
        out["missing"] = len(golds) - len(kept)
    return out
