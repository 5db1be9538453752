"""Answer recall@k over FiD JSON Lines (DPR / FiD semantics): the share of answerable questions with at least
one answer-bearing passage among their first k ``ctxs`` (or ``passages``).

By default a passage's has_answer is recomputed from its title-less text with
:func:`~odqa.evaluate.has_answer` (DPR's token-span match); ``use_flags=True`` takes the
file's own ``has_answer`` flags instead, as DPR's and FiD's evaluation scripts do. Questions without gold
answers are skipped and counted.

Records that say where their answer lies (``answer_from``, as ``odqa refine --tables`` writes for HybridQA:
``table`` or ``passage``) also get recall@k for each group apart (``recall@k table``, ``recall@k passage``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from odqa.errors import FormatError
from odqa.evaluate.answers import has_answer, recall_at_k
from odqa.records import Example

__all__ = ["ANSWER_GROUPS", "DEFAULT_KS", "evaluate_retrieval"]

DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20, 100)
#: Where a HybridQA answer lies (a record's ``answer_from``): recall@k is also given for each group.
ANSWER_GROUPS: tuple[str, ...] = ("table", "passage")


def _flags(example: Example, limit: int, *, use_flags: bool) -> list[bool]:
    """has_answer of the first ``limit`` passages, stopping at the first hit (all recall@k needs)."""
    flags: list[bool] = []
    for i, doc in enumerate((example.ctxs or ())[:limit]):
        if use_flags:
            flag = doc.meta.get("has_answer")
            if not isinstance(flag, bool):
                raise FormatError(
                    f"question {example.id!r}: passage {i} has no boolean 'has_answer' flag (got {flag!r}); "
                    "drop --use-file-flags to recompute has_answer from the passage text"
                )
        else:
            flag = has_answer(doc.text, example.answers)
        flags.append(flag)
        if flag:
            break
    return flags


def evaluate_retrieval(
    examples: Iterable[Example], ks: Sequence[int] = DEFAULT_KS, *, use_flags: bool = False
) -> dict[str, object]:
    """``recall@k`` for each k (fractions), with the numbers of questions scored and skipped."""
    rows: list[list[bool]] = []
    groups: dict[str, list[list[bool]]] = {}
    skipped = no_ctxs = 0
    for example in examples:
        if not example.answers:
            skipped += 1
            continue
        if not example.ctxs:
            no_ctxs += 1
        rows.append(_flags(example, max(ks), use_flags=use_flags))
        group = example.meta.get("answer_from")
        if group in ANSWER_GROUPS:
            groups.setdefault(group, []).append(rows[-1])
    cutoffs = sorted(set(ks))
    out: dict[str, object] = {f"recall@{k}": v for k, v in recall_at_k(rows, cutoffs).items()}
    for group in ANSWER_GROUPS:
        if group in groups:
            out |= {f"recall@{k} {group}": v for k, v in recall_at_k(groups[group], cutoffs).items()}
            out[f"answerable {group}"] = len(groups[group])
    out |= {"answerable": len(rows), "unanswerable_skipped": skipped, "without_passages": no_ctxs}
    out["has_answer"] = "file flags" if use_flags else "recomputed from text"
    return out
