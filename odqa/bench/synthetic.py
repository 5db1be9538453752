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
LATENT = 32  # intrinsic dimension of the synthetic vectors (real sentence embeddings' is a few tens)
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


_BLOCK = 10_000  # vectors drawn at a time: row r depends only on the seed and r, not on the shard size


def _basis(seed: int, dim: int, latent: int, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """A fixed random orthonormal map from the latent space into ``dim`` dimensions, and the latent centres."""
    rng = np.random.default_rng([seed, 1])
    basis, _ = np.linalg.qr(rng.standard_normal((dim, latent)))
    return basis.T.astype(np.float32), rng.standard_normal((clusters, latent)).astype(np.float32)


def _block(seed: int, number: int, dim: int, latent: int, clusters: int, spread: float,
           noise: float) -> np.ndarray:
    """Rows ``number * _BLOCK`` to ``(number + 1) * _BLOCK`` of the corpus vectors, unit length."""
    basis, centres = _basis(seed, dim, latent, clusters)
    rng = np.random.default_rng([seed, 2, number])
    points = centres[rng.integers(0, clusters, _BLOCK)]
    points += np.float32(spread) * rng.standard_normal((_BLOCK, latent), dtype=np.float32)
    rows = points @ basis
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows += np.float32(noise / math.sqrt(dim)) * rng.standard_normal((_BLOCK, dim), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    block: np.ndarray = rows
    return block


def clustered_vectors(folder: Path, count: int, dim: int, clusters: int = 1024, seed: int = 0,
                      queries_of: int | None = None, shard: int = 100_000, latent: int = LATENT,
                      spread: float = 0.5, noise: float = 0.3, nudge: float = 0.3) -> list[Path]:
    """``count`` float32 unit vectors with the neighbourhood structure of real embeddings, written as ``.npy`` shards
    of ``shard`` rows in ``folder``; the same for the same ``seed``, and a shorter corpus a longer one's prefix.

    A vector is a point of a Gaussian mixture in a ``latent``-dimensional space (``clusters`` centres drawn from
    ``seed``, each point ``spread`` from its centre in every latent coordinate) mapped into ``dim`` dimensions by a
    fixed random orthonormal projection, normalised, plus isotropic noise of norm about ``noise``, normalised again:
    a low intrinsic dimension, so a vector has nearer and farther neighbours inside its cluster, as embeddings do
    (isotropic noise around centres would make every cluster-mate equally near). ``queries_of``: ``count`` queries
    instead, each one of the first ``queries_of`` corpus vectors (chosen from ``seed``) moved ``nudge`` per latent
    coordinate and given fresh noise, so every query has true near neighbours.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shape = (dim, latent, clusters, spread, noise)
    if queries_of is not None:
        rng = np.random.default_rng([seed, 3])
        chosen = rng.choice(queries_of, count, replace=False)
        basis, _ = _basis(seed, dim, latent, clusters)
        blocks = {int(b): _block(seed, int(b), *shape) for b in np.unique(chosen // _BLOCK)}
        rows = np.stack([blocks[int(r) // _BLOCK][int(r) % _BLOCK] for r in chosen])
        rows += np.float32(nudge) * rng.standard_normal((count, latent), dtype=np.float32) @ basis
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        rows += np.float32(noise / math.sqrt(dim)) * rng.standard_normal((count, dim), dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        path = folder / "00000.npy"
        np.save(path, rows)
        return [path]
    paths = []
    for first in range(0, count, shard):
        last = min(first + shard, count)
        path = folder / f"{first // shard:05d}.npy"
        with path.open("wb") as fh:  # written, not memory-mapped: the pages never count in this process' memory
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False,
                                                      "shape": (last - first, dim)})
            for number in range(first // _BLOCK, (last - 1) // _BLOCK + 1):
                lo = max(first, number * _BLOCK) - number * _BLOCK
                hi = min(last, (number + 1) * _BLOCK) - number * _BLOCK
                fh.write(_block(seed, number, *shape)[lo:hi].tobytes())
        paths.append(path)
    return paths
