"""One small config dataclass per stage, built once at the CLI boundary from flags or a YAML file.

``load_config(RefineConfig, "configs/refine.yaml", k=50)`` reads the file, rejects unknown keys, applies the
overrides that are not ``None``, and validates the result.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from odqa.errors import ConfigError

__all__ = [
    "ChunkConfig",
    "EmbedConfig",
    "HybridConfig",
    "RefineConfig",
    "RerankConfig",
    "load_config",
    "to_dict",
    "write_resolved",
]

Scorer = Literal["dense", "bm25", "hybrid", "original"]
Pooling = Literal["cls", "mean"]
Precision = Literal["fp32", "fp16", "bf16"]
C = TypeVar("C")


@dataclass(frozen=True)
class ChunkConfig:
    """How documents become passages: DPR words, or a character budget for unspaced scripts."""

    words: int = 100
    stride: int | None = None  # None = words (no overlap)
    chars: int = 200  # budget for text without spaces between words (Japanese, Chinese)

    def __post_init__(self) -> None:
        if self.words < 1:
            raise ConfigError(f"chunk words must be >= 1, got {self.words}")
        if self.stride is not None and not 1 <= self.stride <= self.words:
            raise ConfigError(f"chunk stride must be between 1 and words={self.words}, got {self.stride}")
        if self.chars < 1:
            raise ConfigError(f"chunk chars must be >= 1, got {self.chars}")


@dataclass(frozen=True)
class EmbedConfig:
    """Which embedding model and how to run it: a preset name, a hub id or a local path."""

    model: str = "minilm"
    pooling: Pooling | None = None  # only for a model that is not a preset
    normalize: bool | None = None  # only for a model that is not a preset
    query_prompt: str | None = None  # override the preset's query text prefix
    passage_prompt: str | None = None
    batch_size: int | None = None  # None = 16 on CPU, 128 on GPU (CPU: small batches measured fastest)
    device: str | None = None  # None = sentence-transformers' choice (cuda if present)
    precision: Precision = "fp32"
    cache_dir: str | None = None  # persistent embedding cache; None = default user cache, "" = off

    def __post_init__(self) -> None:
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        _check_choice("precision", self.precision, ("fp32", "fp16", "bf16"))
        if self.pooling is not None:
            _check_choice("pooling", self.pooling, get_args(Pooling))


@dataclass(frozen=True)
class HybridConfig:
    """How the hybrid scorer fuses BM25 and dense scores.

    ``weighted`` (default): a weighted sum of min-max normalised BM25 and dense scores plus the temporal-overlap
    signal; weights chosen on half of the TimeQA hard articles and checked on the other half (see README).
    ``rrf``: plain reciprocal rank fusion of the BM25 and dense rankings (weights and temporal signal unused).
    """

    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: float = 60.0
    bm25_weight: float = 0.5
    dense_weight: float = 0.5
    temporal_weight: float = 0.3  # 0 turns the temporal-overlap signal off

    def __post_init__(self) -> None:
        _check_choice("fusion", self.fusion, ("weighted", "rrf"))
        for name in ("rrf_k", "bm25_weight", "dense_weight", "temporal_weight"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclass(frozen=True)
class RerankConfig:
    """A cross-encoder second stage over the first stage's top ``top_n``; ``model=None`` turns it off.

    ``model`` is a hub id or a local folder that sentence-transformers' ``CrossEncoder`` loads. Passages ranked
    below ``top_n`` keep their first-stage order (and scores) after the reranked ones.
    """

    model: str | None = None
    top_n: int = 100
    batch_size: int = 32  # sentence-transformers' own default for CrossEncoder.predict
    max_length: int | None = None  # tokens per (question, passage) pair; None = the model's own limit
    device: str | None = None  # None = sentence-transformers' choice (cuda if present)

    def __post_init__(self) -> None:
        if self.model is not None and not self.model.strip():
            raise ConfigError("rerank model must be a hub id or a local path, got an empty string")
        for name in ("top_n", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"rerank {name} must be >= 1, got {getattr(self, name)}")
        if self.max_length is not None and self.max_length < 1:
            raise ConfigError(f"rerank max_length must be >= 1 (or null: the model's own), got {self.max_length}")


@dataclass(frozen=True)
class RefineConfig:
    """Per-question context refinement: chunk, score, keep the top k."""

    k: int = 100
    scorer: Scorer = "hybrid"
    chunk: ChunkConfig = field(default_factory=ChunkConfig)
    embed: EmbedConfig = field(default_factory=EmbedConfig)
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    block_size: int = 256  # questions scored together (passages of a block are encoded in one call)
    ctx_key: Literal["ctxs", "passages"] = "ctxs"  # "passages" writes Atlas' field name

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        _check_choice("scorer", self.scorer, get_args(Scorer))
        _check_choice("ctx_key", self.ctx_key, ("ctxs", "passages"))
        if self.block_size < 1:
            raise ConfigError(f"block_size must be >= 1, got {self.block_size}")


def _check_choice(name: str, value: object, valid: tuple[object, ...]) -> None:
    if value not in valid:
        raise ConfigError(f"{name} {value!r} is not valid; choose one of: {', '.join(map(str, valid))}")


def _type_name(hint: Any) -> str:
    if get_origin(hint) is Literal:
        return " | ".join(repr(a) for a in get_args(hint))
    if get_origin(hint) in (Union, UnionType):
        return " | ".join(_type_name(a) for a in get_args(hint))
    return "null" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _matches(value: Any, hint: Any) -> bool:
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        return any(_matches(value, arg) for arg in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


def _check_type(where: str, value: Any, hint: Any) -> None:
    """Reject a value of the wrong type (YAML ``words: 1.5``, ``k: true``) before it reaches a stage."""
    if not _matches(value, hint):
        raise ConfigError(f"{where} must be {_type_name(hint)}, got {value!r}")


def _build(cls: type[C], data: Mapping[str, Any], where: str) -> C:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; valid keys: {sorted(fields)}")
    hints = get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        sub = fields[name].default_factory  # nested config dataclasses use default_factory
        if dataclasses.is_dataclass(sub) and isinstance(sub, type):
            value = _build(sub, value, f"{where}.{name}")
        else:
            _check_type(f"{where}: {name}", value, hints[name])
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def load_config(cls: type[C], path: str | Path | None = None, **overrides: Any) -> C:
    """Build ``cls`` from an optional YAML file plus overrides (``None`` overrides are ignored).

    Nested configs are overridden with dotted names: ``load_config(RefineConfig, None, **{"embed.model": "e5"})``.
    """
    data: dict[str, Any] = {}
    where = cls.__name__
    if path is not None:
        import yaml

        where = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file {path} does not exist") from exc
        except (OSError, UnicodeError) as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
        if loaded is not None:
            if not isinstance(loaded, dict):
                raise ConfigError(f"{path}: expected a mapping of keys to values at the top level, "
                                  f"got {type(loaded).__name__}")
            data = loaded
    for key, value in overrides.items():
        if value is None:
            continue
        target = data
        *parents, leaf = key.split(".")
        for parent in parents:
            target = target.setdefault(parent, {})
            if not isinstance(target, dict):
                raise ConfigError(f"{where}: {parent!r} must be a mapping of keys to values, got {target!r}")
        target[leaf] = value
    return _build(cls, data, where)


def to_dict(config: object) -> dict[str, Any]:
    """A config as plain data (for writing the resolved configuration next to outputs)."""
    return dataclasses.asdict(config)  # type: ignore[call-overload, no-any-return]


def write_resolved(config: object, output: str | Path) -> Path:
    """Write ``config`` as ``<output>.config.json`` beside ``output``; returns the path written."""
    from odqa import __version__
    from odqa.io import atomic_write

    output = Path(output)
    target = output.parent / f"{output.name}.config.json"
    with atomic_write(target) as fh:
        json.dump({"odqa_version": __version__, "stage": type(config).__name__, **to_dict(config)}, fh, indent=2)
        fh.write("\n")
    return target
