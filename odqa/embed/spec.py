"""What makes a vector, defined once: the embedding cache's key, refine's check of an encoder against its config, a
dense index's manifest and the check of a query encoder against that index all read :class:`VectorSpec`.

Torch-free (stdlib only), so an index or a config can be checked without loading a model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odqa.config import Backend, Pooling, Precision

if TYPE_CHECKING:
    from odqa.embed.presets import Preset

__all__ = ["INDEX_FIELDS", "PASSAGE_FIELDS", "VectorSpec", "folder_digest"]

_HASHED_BYTES = 64 << 20  # files up to this size are hashed by content; larger ones (weights) by size and mtime


def folder_digest(root: Path) -> str:
    """Identifies the contents of a local model folder, so a re-trained checkpoint never passes for the old one.

    Config and tokenizer files are hashed by content; large weight files by size and modification time, which a
    checkpoint written in place always changes (a copied folder may differ, never a changed one match).
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if stat.st_size <= _HASHED_BYTES:
            digest.update(path.read_bytes())
        else:
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class VectorSpec:
    """Everything that decides the vectors an encoder makes.

    ``model`` is the hub id or folder; ``model_digest`` the :func:`folder_digest` of a local folder that is not a
    preset (None for presets and hub ids, whose name fixes their weights). ``precision`` and ``backend`` are the
    resolved ones (never ``auto``): torch and OpenVINO vectors differ in their last bits.
    """

    model: str
    pooling: Pooling
    normalize: bool
    query_prefix: str
    passage_prefix: str
    max_seq_length: int | None
    precision: Precision
    backend: Backend
    model_digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> VectorSpec:
        """The spec recorded in ``raw`` (a manifest's settings; keys it lacks, from an older odqa, are None)."""
        values: dict[str, Any] = {f.name: raw.get(f.name) for f in fields(cls)}
        return cls(**values)

    def passage_key(self) -> dict[str, Any]:
        """What changes a passage vector (everything but the query prefix): the embedding cache's key."""
        return {name: getattr(self, name) for name in PASSAGE_FIELDS}

    def fingerprint(self) -> str:
        """A short hash of :meth:`passage_key`, naming this setting's vectors in the embedding cache."""
        return hashlib.sha256(json.dumps(self.passage_key(), sort_keys=True).encode()).hexdigest()[:24]

    def differing(self, other: VectorSpec, names: Iterable[str] | None = None) -> list[str]:
        """The fields (of ``names``, default all) in which ``self`` and ``other`` differ, in order."""
        chosen = [f.name for f in fields(self)] if names is None else list(names)
        return [name for name in chosen if getattr(self, name) != getattr(other, name)]

    @classmethod
    def of(cls, preset: Preset, precision: Precision, backend: Backend, model_digest: str | None = None
           ) -> VectorSpec:
        """The spec of ``preset`` run at ``precision`` by ``backend``."""
        return cls(preset.model, preset.pooling, preset.normalize, preset.query_prefix, preset.passage_prefix,
                   preset.max_seq_length, precision, backend, model_digest)


PASSAGE_FIELDS = tuple(f.name for f in fields(VectorSpec) if f.name != "query_prefix")
# What a query encoder must share with the index it searches: the passages' model and how it pools, normalises,
# prompts and cuts them. The query prefix may be overridden, and precision and backend are this machine's.
INDEX_FIELDS = ("model", "pooling", "normalize", "passage_prefix", "max_seq_length", "model_digest")
