"""Checks every dataset evaluator shares: questions without a prediction, predictions of the wrong type."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from odqa.errors import InputError

__all__ = ["answer_string", "check_missing", "mean"]


def check_missing(gold_ids: Sequence[str], predictions: Collection[str], *, ignore_missing: bool) -> set[str]:
    """The gold ids that have a prediction; without ``ignore_missing`` a missing one is an error."""
    present = {qid for qid in gold_ids if qid in predictions}
    if len(present) < len(gold_ids) and not ignore_missing:
        missing = [qid for qid in gold_ids if qid not in predictions]
        shown = ", ".join(repr(m) for m in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise InputError(
            f"{len(missing)} of {len(gold_ids)} gold questions have no prediction ({shown}); "
            "check that the prediction ids match the gold ids, or pass --ignore-missing to score only "
            "the predicted questions"
        )
    return present


def answer_string(qid: str, prediction: object) -> str:
    """A prediction that must be an answer string (``None`` counts as the empty answer)."""
    if prediction is None:
        return ""
    if isinstance(prediction, (int, float)) and not isinstance(prediction, bool):
        return str(prediction)
    if not isinstance(prediction, str):
        raise InputError(
            f"prediction for {qid!r} must be an answer string, got {type(prediction).__name__}: "
            f"{str(prediction)[:80]!r}"
        )
    return prediction


def mean(values: Sequence[float], scale: float = 1.0) -> float | None:
    """The scaled mean, or ``None`` for an empty group (the official scripts divide by zero there)."""
    return scale * sum(values) / len(values) if values else None

