"""The string similarity of JEMHopQA's official ``evaluate.py`` (paper 002 section 3.3): a normalised
Levenshtein similarity over SudachiPy tokens, with synonym matching through chikkarpy when it is installed.

Tokens (split mode C) skip whitespace, symbols, particles and auxiliary verbs; a numeral followed by a counter
becomes one token (a leading zero dropped: "05月" -> "5月"); any other token matches another when their sets
{surface, normalised form, synonyms} intersect. Gold tokens are paired greedily with the first unpaired
matching predicted token; the similarity is Levenshtein's ratio, ``2 * LCS / (len(gold) + len(pred))``, over
the two token sequences with paired tokens made equal (rapidfuzz's ``Indel.normalized_similarity``: the function
behind python-Levenshtein's ``ratio``, which the official script calls).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from odqa._optional import require
from odqa.errors import InputError

__all__ = ["TokenSimilarity", "normalize_ja_answer"]

_SKIPPED_POS = frozenset({"空白", "補助記号", "助詞", "助動詞"})
_BRACKETED = re.compile(r"\s*[\(（].+?[\)）]\s*")
_QUOTES = re.compile(r"[『』「」]")
_LEADING_ZERO = re.compile(r"^0")
_YES_NO = {"はい": "YES", "いいえ": "NO"}


def normalize_ja_answer(text: str) -> str:
    """はい/いいえ as YES/NO, bracketed asides and 『』「」 removed, whitespace collapsed."""
    text = _YES_NO.get(text, text)
    return " ".join(_QUOTES.sub("", _BRACKETED.sub("", text)).split())


def _load_dictionary(sudachipy: Any, requested: str | None) -> tuple[str, Any]:
    """``(name, dictionary)``: the requested one, else ``full`` when it loads (its PyPI package may be an empty
    placeholder), else ``core``."""
    if requested is not None:
        names = [requested]
    else:
        names = (["full"] if importlib.util.find_spec("sudachidict_full") is not None else []) + ["core"]
    *fallbacks, last = names
    for name in fallbacks:
        try:
            return name, sudachipy.Dictionary(dict=name)
        except Exception:  # a placeholder sudachidict_full without data: fall back to core
            continue
    try:
        return last, sudachipy.Dictionary(dict=last)
    except Exception as exc:  # SudachiPy raises its own error types for a missing dictionary package
        raise InputError(
            f"SudachiPy dictionary {last!r} cannot be loaded ({exc}); install sudachidict_{last}, "
            "or use 'core' (pip install 'odqa[ja]')"
        ) from exc


def _synonym_finder(user_dic: Path | None) -> Any:
    if user_dic is not None and not user_dic.is_file():  # a wrong path is an error with or without chikkarpy
        raise InputError(f"{user_dic}: no such synonym dictionary (the JEMHopQA repository's user.dic)")
    if importlib.util.find_spec("chikkarpy") is None:
        return None
    chikkarpy = require("chikkarpy", "ja")
    dictionarylib = require("chikkarpy.dictionarylib", "ja")
    finder = chikkarpy.Chikkar()
    finder.add_dictionary(dictionarylib.Dictionary())
    if user_dic is not None:
        try:
            finder.add_dictionary(dictionarylib.Dictionary(str(user_dic)))
        except Exception as exc:  # chikkarpy raises its own (and plain struct/OS) errors for a bad dictionary
            raise InputError(f"{user_dic}: not a chikkarpy synonym dictionary ({exc}); give the JEMHopQA "
                             "repository's user.dic") from exc
    finder.enable_verb()
    return finder


class TokenSimilarity:
    """The official similarity between two answer or derivation strings, in [0, 1]; results are memoised."""

    def __init__(self, *, dictionary: str | None = None, user_dic: str | Path | None = None) -> None:
        sudachipy = require("sudachipy", "ja")
        # python-Levenshtein's ratio, which the official script calls, is this function of rapidfuzz
        self._ratio: Callable[[Sequence[int], Sequence[int]], float] = require(
            "rapidfuzz.distance", "ja").Indel.normalized_similarity
        self.dictionary, loaded = _load_dictionary(sudachipy, dictionary)
        # Dictionary.tokenizer (SudachiPy 0.7) replaces create (0.6, what the official script calls): same tokenizer
        make = getattr(loaded, "tokenizer", None) or loaded.create
        self._tokenizer = make(mode=sudachipy.SplitMode.C)
        self.user_dic = None if user_dic is None else Path(user_dic)
        self._synonyms = _synonym_finder(self.user_dic)
        self._tokens: dict[str, list[frozenset[str]]] = {}
        self._scores: dict[tuple[str, str], float] = {}

    @property
    def synonyms(self) -> bool:
        """Whether synonym matching is on (chikkarpy importable)."""
        return self._synonyms is not None

    def tokens(self, text: str) -> list[frozenset[str]]:
        """Each content token as the set of strings it matches."""
        if text not in self._tokens:
            self._tokens[text] = self._tokenize(text)
        return self._tokens[text]

    def _tokenize(self, text: str) -> list[frozenset[str]]:
        morphemes = list(self._tokenizer.tokenize(text))
        out: list[frozenset[str]] = []
        skip_next = False
        for i, m in enumerate(morphemes):
            if skip_next:
                skip_next = False
                continue
            pos = m.part_of_speech()
            if pos[0] in _SKIPPED_POS:
                continue
            numeral = pos[1] == "数詞"
            if numeral and i + 1 < len(morphemes) and "助数詞" in morphemes[i + 1].part_of_speech()[2]:
                out.append(frozenset({_LEADING_ZERO.sub("", m.surface()) + morphemes[i + 1].surface()}))
                skip_next = True
            elif numeral and m.surface().startswith("0"):
                out.append(frozenset({_LEADING_ZERO.sub("", m.surface())}))
            else:
                forms = {m.surface(), m.normalized_form()}
                if self._synonyms is not None:
                    forms.update(self._synonyms.find(m.surface()))
                out.append(frozenset(forms))
        return out

    def __call__(self, prediction: str, gold: str) -> float:
        key = (prediction, gold)
        if key not in self._scores:
            self._scores[key] = self._score(prediction, gold)
        return self._scores[key]

    def _score(self, prediction: str, gold: str) -> float:
        pred, ref = normalize_ja_answer(prediction), normalize_ja_answer(gold)
        if pred in ("Yes", "No") and pred != ref:  # as the official script: only these spellings short-cut
            return 0.0
        pred_tokens, gold_tokens = self.tokens(pred), self.tokens(ref)
        pred_ids: list[int | None] = [None] * len(pred_tokens)
        gold_ids: list[int | None] = [None] * len(gold_tokens)
        next_id = 0
        for i, g in enumerate(gold_tokens):
            for j, p in enumerate(pred_tokens):
                if pred_ids[j] is None and g & p:
                    gold_ids[i] = pred_ids[j] = next_id
                    next_id += 1
                    break
        gold_seq = [x if x is not None else -1 - i for i, x in enumerate(gold_ids)]
        pred_seq = [x if x is not None else -1 - len(gold_ids) - j for j, x in enumerate(pred_ids)]
        return self._ratio(gold_seq, pred_seq)
