"""A deterministic synthetic DPR-shaped corpus, and clustered unit vectors, for the scale benchmark.

Passages are 100 whitespace words with a title shared by about eight consecutive passages (an article), as in
DPR's ``psgs_w100.tsv``. Words follow the frequencies of the shipped TimeQA text (every word of its 5,970
passages, punctuation kept); with the chance Good-Turing gives a new word there (the share of words seen once,
4.5 %) a word comes instead from a made-up tail whose rank-frequency curve goes on past TimeQA's last rank as a
power law (exponent :data:`TAIL_EXPONENT`), so new words keep arriving as the corpus grows, as Heaps' law says a
real corpus' vocabulary does (TimeQA's own grows as N^0.62), instead of stopping at TimeQA's.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from itertools import islice
from pathlib import Path

import numpy as np

from odqa.bench._common import TIMEQA
from odqa.records import Passage

__all__ = ["TAIL_EXPONENT", "clustered_vectors", "passages", "questions", "write_tsv"]

WORDS = 100
ARTICLE = 8  # passages per made-up article (one title)
TAIL_EXPONENT = 1.67  # rank-frequency exponent of the made-up tail: Heaps' beta = 1 / 1.67 = 0.6
_CHUNK = 1_000  # passages drawn at a time (a multiple of ARTICLE)
_LETTERS = "bcfhjkmnpqrtvwz"  # no vowels, s or y: the English stemmer leaves made-up words whole


@lru_cache(maxsize=1)
def _head() -> tuple[np.ndarray, np.ndarray, float]:
    """TimeQA's words by rank, the cumulative probability of each, and the share left to the made-up tail."""
    from odqa.index.source import read_passages

    counts = Counter(word for p in read_passages(TIMEQA) for word in p.text.split())
    ranked = counts.most_common()
    freq = np.array([n for _, n in ranked], dtype=np.float64)
    # Good-Turing: the chance that the next word is new is the share of words seen once; that share goes to the tail
    tail = float(np.count_nonzero(freq == 1)) / freq.sum()
    return np.array([w for w, _ in ranked], dtype=object), np.cumsum(freq) / freq.sum() * (1 - tail), tail


def _made_up(rank: int) -> str:
    letters = []
    while rank:
        rank, digit = divmod(rank, len(_LETTERS))
        letters.append(_LETTERS[digit])
    return "x" + "".join(letters)


def _words(rng: np.random.Generator, count: int, cache: dict[int, str]) -> list[str]:
    """``count`` words drawn by frequency: TimeQA's head, or a made-up word of the power-law tail."""
    words, cdf, _ = _head()
    draws = rng.random(count)
    head = np.searchsorted(cdf, draws, side="right")
    out: list[str] = words[np.minimum(head, len(words) - 1)].tolist()
    tail = np.flatnonzero(head >= len(words))
    if len(tail):
        # inverse CDF of the continuous power law above rank V
        u = (draws[tail] - cdf[-1]) / (1 - cdf[-1])
        ranks = (len(words) * (1 - u) ** (-1 / (TAIL_EXPONENT - 1))).astype(np.int64)
        for position, rank in zip(tail.tolist(), np.minimum(ranks, 1 << 40).tolist(), strict=True):
            word = cache.get(rank)
            if word is None:
                word = cache[rank] = _made_up(rank)
            out[position] = word
    return out


def passages(count: int, seed: int = 0) -> Iterator[Passage]:
    """``count`` synthetic passages, the same for the same ``seed`` (ids ``syn-0``, ``syn-1``, ...)."""
    rng = np.random.default_rng(seed)
    cache: dict[int, str] = {}
    for start in range(0, count, _CHUNK):  # whole chunks are drawn, so a smaller corpus is a larger one's prefix
        titles = _words(rng, 2 * _CHUNK // ARTICLE, cache)
        words = _words(rng, WORDS * _CHUNK, cache)
        for i in range(min(_CHUNK, count - start)):
            title = " ".join(titles[2 * (i // ARTICLE):2 * (i // ARTICLE) + 2])
            yield Passage(f"syn-{start + i}", f"art-{(start + i) // ARTICLE}", title,
                          " ".join(words[WORDS * i:WORDS * (i + 1)]))


def write_tsv(path: Path, count: int, seed: int = 0) -> Path:
    """The corpus as DPR TSV (``id, text, title`` with a header row), as psgs_w100.tsv is shipped."""
    with path.open("w", encoding="utf-8") as fh:
        fh.write("id\ttext\ttitle\n")
        for p in passages(count, seed):
            fh.write(f"{p.id}\t{p.text}\t{p.title}\n")
    return path


def questions(count: int) -> list[str]:
    """The first ``count`` shipped TimeQA hard questions: real questions, whose words the corpus draws from."""
    from odqa.datasets import load_timeqa

    return [example.question for example in islice(load_timeqa(TIMEQA), count)]


def clustered_vectors(folder: Path, count: int, dim: int, clusters: int = 1024, seed: int = 0, queries: bool = False,
                      shard: int = 100_000, spread: float = 0.35) -> list[Path]:
    """``count`` unit vectors around ``clusters`` random centres (drawn from ``seed``), float32, written as ``.npy``
    shards of ``shard`` rows in ``folder`` (``queries``: other vectors around the same centres)."""
    centres = np.random.default_rng(seed).standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rng = np.random.default_rng([seed, int(queries)])
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for first in range(0, count, shard):
        rows = min(shard, count - first)
        path = folder / f"{first // shard:05d}.npy"
        with path.open("wb") as fh:  # written, not memory-mapped: the pages never count in this process' memory
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": (rows, dim)})
            for start in range(0, rows, 50_000):
                size = min(50_000, rows - start)
                chunk = centres[rng.integers(0, clusters, size)]
                chunk += np.float32(spread / math.sqrt(dim)) * rng.standard_normal((size, dim), dtype=np.float32)
                chunk /= np.linalg.norm(chunk, axis=1, keepdims=True)
                fh.write(chunk.tobytes())
        paths.append(path)
    return paths
