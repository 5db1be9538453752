"""Answer metrics shared by every dataset: SQuAD normalisation, exact match, token F1, and DPR/FiD
"has_answer" with answer recall@k.

has_answer follows DPR's ``has_answer`` (``match_type="string"``, which FiD and Atlas reuse): text and answer are
Unicode NFD-normalised, split into tokens that are runs of letters, digits and combining marks or single other
visible characters (DrQA's ``SimpleTokenizer``: punctuation is a token of its own, nothing is dropped) and
lowercased; the answer matches where its tokens occur as a contiguous run of the text's tokens. One deliberate
extension: a character of a script written without spaces (Han, kana, Thai, Lao, Khmer, Myanmar) is a token of
its own, so a Japanese answer matches as a character span instead of almost never (DPR leaves a whole unspaced
sentence as one token). Text without such characters is tokenised exactly as DPR does.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

from odqa.text import is_unspaced_char

__all__ = [
    "answer_spans", "answer_tokens", "exact_match", "has_answer", "normalize_answer", "recall_at_k", "token_f1",
    "token_prf",
]

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


def token_prf(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> tuple[float, float, float]:
    """``(f1, precision, recall)`` of the tokens two answers share, counted with multiplicity; all 0 when they
    share none (so two empty answers score 0, as HotpotQA-style scripts have it; :func:`token_f1` adds SQuAD's
    empty-answer rule)."""
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall), precision, recall


def _f1(pred_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    if not pred_tokens or not gold_tokens:  # SQuAD 2.0: an empty side scores 1 only against another empty side
        return float(pred_tokens == gold_tokens)
    return token_prf(pred_tokens, gold_tokens)[0]


def token_f1(prediction: str, golds: Iterable[str]) -> float:
    """SQuAD token F1, the maximum over gold answers (0.0 when there is no gold answer)."""
    pred = normalize_answer(prediction).split()
    return max((_f1(pred, normalize_answer(g).split()) for g in golds), default=0.0)


def answer_tokens(text: str) -> list[str]:
    """The lowercased tokens has_answer compares (DPR's SimpleTokenizer over NFD text, see the module doc)."""
    return [token for token, _, _ in _token_spans(unicodedata.normalize("NFD", text))]


def _token_spans(nfd: str) -> list[tuple[str, int, int]]:
    """``(token, start, end)`` of each has_answer token of NFD text, offsets into ``nfd``."""
    tokens: list[tuple[str, int, int]] = []
    start = -1  # where the current run of letters, digits and marks began; -1: no run
    after_unspaced = False  # a combining mark right after an unspaced character (NFD kana) belongs to it
    for i, ch in enumerate(nfd):
        kind = unicodedata.category(ch)[0]
        if kind == "M" and start < 0 and after_unspaced:
            token, begin, _ = tokens[-1]
            tokens[-1] = (token + ch.lower(), begin, i + 1)
            continue
        if kind in "LNM" and not is_unspaced_char(ch):
            if start < 0:
                start = i
            after_unspaced = False
            continue
        if start >= 0:
            tokens.append((nfd[start:i].lower(), start, i))
            start = -1
        after_unspaced = kind in "LN"  # an unspaced letter (the only L/N that reaches here)
        if kind not in "ZC":  # separators and control/format characters only split
            tokens.append((ch.lower(), i, i + 1))
    if start >= 0:
        tokens.append((nfd[start:].lower(), start, len(nfd)))
    return tokens


def has_answer(text: str, golds: Iterable[str]) -> bool:
    """True when a gold answer's tokens occur as a contiguous run of ``text``'s tokens (DPR/FiD has_answer).

    An answer with no token (empty or blank) never matches (DPR would match it everywhere).
    """
    return bool(answer_spans(text, golds))


def answer_spans(text: str, golds: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of ``text`` where a gold answer matches as has_answer matches it,
    sorted and merged where they overlap: ``has_answer(text, golds) == bool(answer_spans(text, golds))``.

    Offsets index the original ``text`` (not its NFD form), so ``text[start:end]`` is the matched answer.
    """
    needles = [needle for needle in map(answer_tokens, golds) if needle]
    nfd = unicodedata.normalize("NFD", text)
    # A token is the lowercased text of a piece of nfd, so a matching answer's first token occurs in nfd.lower()
    # (lowercasing is per character but for the final sigma, hence ς -> σ): most passages end here, cheaply.
    lowered = nfd.lower().replace("ς", "σ")
    needles = [needle for needle in needles if needle[0].replace("ς", "σ") in lowered]
    if not needles:
        return []
    if nfd == text:
        origin: Sequence[int] = range(len(text))
    else:  # NFD position -> position in text (NFD keeps each character's pieces in place)
        origin = [i for i, ch in enumerate(text) for _ in unicodedata.normalize("NFD", ch)]
    spans = _token_spans(nfd)
    words = [token for token, _, _ in spans]
    found: list[tuple[int, int]] = []
    for needle in needles:
        n = len(needle)
        for i in range(len(words) - n + 1):
            if words[i] == needle[0] and words[i : i + n] == needle:
                found.append((origin[spans[i][1]], origin[spans[i + n - 1][2] - 1] + 1))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def recall_at_k(flags: Iterable[Sequence[bool]], ks: Sequence[int]) -> dict[int, float]:
    """Share of questions with at least one answer-bearing passage in the top k, for each k.

    ``flags`` holds one has_answer list per *answerable* question, best passage first.
    """
    rows = list(flags)
    if not rows:
        return {k: 0.0 for k in ks}
    return {k: sum(any(row[:k]) for row in rows) / len(rows) for k in ks}
