"""Answer metrics shared by every dataset: SQuAD normalisation, exact match, token F1, and DPR/FiD
"has_answer" with answer recall@k."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

__all__ = ["exact_match", "has_answer", "normalize_answer", "recall_at_k", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation, drop articles a/an/the, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Iterable[str]) -> float:
    """1.0 when the normalised prediction equals any normalised gold answer."""
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def _f1(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """SQuAD token F1, the maximum over gold answers (0.0 when there is no gold answer)."""
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in golds), default=0.0)


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    first = needle[0]
    return any(haystack[i] == first and list(haystack[i : i + n]) == list(needle)
               for i in range(len(haystack) - n + 1))


def has_answer(text: str, golds: Iterable[str]) -> bool:
    """True when a normalised gold answer occurs in ``text`` as a whole-token span (DPR/FiD semantics)."""
    tokens = normalize_answer(text).split()
    for gold in golds:
        needle = normalize_answer(gold).split()
        if needle and _contains(tokens, needle):
            return True
    return False


def recall_at_k(flags: Iterable[Sequence[bool]], ks: Sequence[int]) -> dict[int, float]:
    """Share of questions with at least one answer-bearing passage in the top k, for each k.

    ``flags`` holds one has_answer list per *answerable* question, best passage first.
    """
    rows = list(flags)
    if not rows:
        return {k: 0.0 for k in ks}
    return {k: sum(any(row[:k]) for row in rows) / len(rows) for k in ks}
