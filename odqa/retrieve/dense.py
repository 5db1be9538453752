"""Search a dense index: questions encoded with the model the index was built with, FAISS top-k in batches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from odqa.config import EmbedConfig
from odqa.errors import ConfigError, IndexFormatError, IndexMismatchError
from odqa.index.dense import load_faiss, shard_vectors
from odqa.index.manifest import open_manifest
from odqa.index.store import PassageStore
from odqa.records import Hit

if TYPE_CHECKING:
    from odqa.embed import Encoder

__all__ = ["DenseRetriever", "query_config"]

def query_config(settings: dict[str, Any], model: str | None = None, **options: Any) -> EmbedConfig:
    """The encoder settings for querying an index built with ``settings``; ``model``, when given, must be its."""
    from odqa.embed import PRESETS, VectorSpec, query_precision

    built, recorded = settings["preset"], VectorSpec.from_json(settings)
    if model is not None and model not in (built, settings["model"]):
        hub = f" ({settings['model']})" if settings["model"] != built else ""
        raise IndexMismatchError(
            f"this index was built with {built!r}{hub}, not {model!r}: query it with the model it was built with "
            f"(leave --model out), or build an index with {model!r}")
    explicit: dict[str, Any] = {} if built in PRESETS else {"pooling": recorded.pooling,
                                                            "normalize": recorded.normalize}
    chosen = {key: value for key, value in options.items() if value is not None}
    return EmbedConfig(model=built, precision=query_precision(recorded.precision, chosen.get("device")),
                       query_prompt=recorded.query_prefix, passage_prompt=recorded.passage_prefix, cache_dir="",
                       **explicit, **chosen)


def _check_encoder(folder: Path, settings: dict[str, Any], encoder: Encoder) -> None:
    """The query encoder makes the index's vectors: same model, pooling, normalisation, passage prefix and length,
    then same dimension, then (for a local model folder) the same files as at build time."""
    from odqa.embed import VectorSpec
    from odqa.embed.spec import INDEX_FIELDS

    recorded, spec = VectorSpec.from_json(settings), encoder.spec
    differ = recorded.differing(spec, [name for name in INDEX_FIELDS if name != "model_digest"])
    if differ:
        key = differ[0]
        raise IndexMismatchError(
            f"{folder} was built with {key}={getattr(recorded, key)!r} but the query encoder has "
            f"{getattr(spec, key)!r}: query with the model the index was built with ({settings['preset']!r})")
    if encoder.dimension != settings["dimension"]:
        raise IndexMismatchError(f"{folder} holds {settings['dimension']}-dimensional vectors but the query model "
                                 f"makes {encoder.dimension}-dimensional ones; rebuild the index with this model")
    if recorded.model_digest is not None and recorded.differing(spec, ["model_digest"]):
        raise IndexMismatchError(
            f"the model folder {recorded.model} changed since {folder} was built (its files differ from the digest "
            "the manifest records): rebuild the index with it (odqa index build ... --overwrite), or query with the "
            "model the index was built from")


class DenseRetriever:
    """Top-k passages by inner product between question and passage vectors (cosine for normalised presets)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        encoder: Encoder | None = None,
        model: str | None = None,
        device: str | None = None,
        batch_size: int = 1024,
        search_params: str | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.manifest = open_manifest(self.folder, "dense")
        settings = self.manifest.settings
        dimension = settings["dimension"]
        for shard in self.manifest.shards:
            shape = shard_vectors(self.folder, shard).shape
            if shape != (shard.count, dimension):
                raise IndexMismatchError(f"{self.folder}: shard {shard.index} holds vectors of shape {shape}, the "
                                         f"manifest says ({shard.count}, {dimension}); rebuild the index")
        self.index = load_faiss(self.folder, search_params, settings["faiss"])
        if self.index.d != dimension or self.index.ntotal != self.manifest.count:
            raise IndexFormatError(f"{self.folder}: the FAISS index holds {self.index.ntotal:,} vectors of dimension "
                                   f"{self.index.d}, the manifest {self.manifest.count:,} of {dimension}; rebuild it")
        if encoder is None:
            from odqa.embed import Encoder

            encoder = Encoder(query_config(settings, model, device=device))
        _check_encoder(self.folder, settings, encoder)
        self.encoder = encoder
        self.batch_size = batch_size
        self.store = PassageStore(self.folder, self.manifest.shards)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """``len(queries)`` lists of at most ``k`` hits, best first."""
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        results: list[list[Hit]] = []
        depth = min(k, self.index.ntotal)
        for start in range(0, len(queries), self.batch_size):
            vectors = self.encoder.encode_queries(queries[start : start + self.batch_size])
            scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), depth)
            for score_row, id_row in zip(scores, rows, strict=True):
                results.append([Hit(self.store[int(r)], float(s)) for s, r in zip(score_row, id_row, strict=True)
                                if r >= 0])
        return results

    def close(self) -> None:
        self.store.close()
        self.encoder.close()
