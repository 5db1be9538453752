"""Retrievers a user loads and composes: an index folder, a precomputed FiD file, several fused into one.

``load_retriever("indexes/wiki-minilm").search(questions, k)``; ``Fused(dense, bm25)`` fuses any retrievers'
hit lists; ``StaticRetriever`` serves the passages a FiD file already holds for each of its questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from odqa.errors import ConfigError, InputError
from odqa.index.manifest import read_manifest
from odqa.io import read_fid
from odqa.records import Example, Hit, Passage
from odqa.retrieve.fusion import Fusion, check_fusion, fuse_rrf, fuse_weighted
from odqa.retrieve.protocol import Retriever

__all__ = ["Fused", "Fusion", "StaticRetriever", "index_kind", "load_retriever"]

class Fused:
    """Fuses the hit lists of several retrievers; each is asked for ``depth`` hits (default: ``k``)."""

    def __init__(
        self,
        *retrievers: Retriever,
        fusion: Fusion = "rrf",
        weights: Sequence[float] | None = None,
        rrf_k: float = 60.0,
        depth: int | None = None,
    ) -> None:
        if len(retrievers) < 2:
            raise ConfigError(f"Fused needs at least two retrievers, got {len(retrievers)}")
        check_fusion(fusion, weights or (), len(retrievers))
        self.weights = tuple(weights) if weights else (1.0,) * len(retrievers)
        self.retrievers = retrievers
        self.fusion = fusion
        self.rrf_k = rrf_k
        self.depth = depth

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        depth = max(k, self.depth or 0)
        per_retriever = [r.search(queries, depth) for r in self.retrievers]
        fused = []
        for lists in zip(*per_retriever, strict=True):
            if self.fusion == "rrf":
                fused.append(fuse_rrf(lists, k, self.rrf_k))
            else:
                fused.append(fuse_weighted(lists, self.weights, k))
        return fused


class StaticRetriever:
    """Serves precomputed results (a FiD file, or examples with their ctxs) by question id or question text."""

    def __init__(self, examples: Iterable[Example], source: str = "the given examples") -> None:
        self.source = source
        self.by_id: dict[str, list[Hit]] = {}
        self.by_question: dict[str, list[Hit]] = {}
        for example in examples:
            hits = [_hit(doc.id, doc.title, doc.text, doc.meta.get("score"), rank)
                    for rank, doc in enumerate(example.ctxs or ())]
            self.by_id.setdefault(example.id, hits)
            self.by_question.setdefault(example.question, hits)

    @classmethod
    def from_fid(cls, path: str | Path) -> StaticRetriever:
        """The questions and passages of a FiD / Atlas file (JSON Lines or a JSON array)."""
        return cls(read_fid(path), str(path))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """The stored hits of each question text (the first record's, when a text repeats)."""
        return [self._lookup(self.by_question, q, "question", k) for q in queries]

    def lookup(self, ids: Sequence[str], k: int) -> list[list[Hit]]:
        """The stored hits of each question id."""
        return [self._lookup(self.by_id, i, "question id", k) for i in ids]

    def _lookup(self, table: dict[str, list[Hit]], key: str, what: str, k: int) -> list[Hit]:
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        try:
            return table[key][:k]
        except KeyError:
            raise InputError(f"{what} {key[:80]!r} is not in {self.source}; a static retriever serves only the "
                             "questions it was given") from None


def _hit(pid: str, title: str, text: str, score: object, rank: int) -> Hit:
    value = float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else -float(rank)
    return Hit(Passage(id=pid, doc_id=pid, title=title, text=text), value)


def index_kind(path: str | Path) -> str:
    """What ``path`` is to :func:`load_retriever`: ``"fid"`` (a file), else its index manifest's kind."""
    path = Path(path)
    return "fid" if path.is_file() else read_manifest(path).kind  # read_manifest: "not an odqa index" with the fix


def load_retriever(
    path: str | Path,
    *,
    model: str | None = None,
    device: str | None = None,
    search_params: str | None = None,
) -> Retriever:
    """A retriever for an index folder (dense or BM25, from its manifest) or a FiD file (static).

    ``model`` may only name the model the index was built with (the default); ``search_params`` are FAISS
    search-time parameters such as ``"nprobe=32"`` (IVF) or ``"efSearch=128"`` (HNSW). All three are for dense
    indexes: given for another kind, they are refused rather than ignored.
    """
    path = Path(path)
    kind = index_kind(path)
    if kind == "dense":
        from odqa.retrieve.dense import DenseRetriever

        return DenseRetriever(path, model=model, device=device, search_params=search_params)
    what = "FiD file" if kind == "fid" else "BM25 index"
    for flag, value in (("--model (an embedding model)", model), ("--search-params (FAISS)", search_params),
                        ("--device (the query encoder's)", device)):
        if value is not None:
            raise ConfigError(f"{path} is a {what}: {flag} does not apply to it; drop {flag.split()[0]} {value}")
    if kind == "fid":
        return StaticRetriever.from_fid(path)
    from odqa.retrieve.sparse import BM25Retriever

    return BM25Retriever(path)
