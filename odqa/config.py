"""One small config dataclass per stage, built once at the CLI boundary from flags or a YAML file.

``load_config(RefineConfig, "configs/refine.yaml", k=50)`` reads the file, rejects unknown keys, applies the
overrides that are not ``None``, and validates the result: types by pydantic against the dataclass annotations
(strict: ``k: true`` or ``words: "5"`` is an error), ranges by each dataclass's ``__post_init__``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from odqa._version import __version__
from odqa.errors import ConfigError

__all__ = [
    "ChunkConfig",
    "EmbedBackend",
    "EmbedConfig",
    "EmbedPrecision",
    "HybridConfig",
    "RefineConfig",
    "RerankConfig",
    "load_config",
    "to_dict",
    "write_resolved",
]

Scorer = Literal["dense", "bm25", "hybrid", "original", "table", "table-hybrid"]
#: Scorers that read a HybridQA table's structure (``odqa refine --tables``; odqa.tables): not for plain passages.
TABLE_SCORERS: tuple[str, ...] = ("table", "table-hybrid")
Pooling = Literal["cls", "mean"]
Precision = Literal["fp32", "fp16", "bf16"]
EmbedPrecision = Literal["auto", "fp32", "fp16", "bf16"]  # auto: the fastest measured on the device (odqa.embed)
Backend = Literal["torch", "openvino"]
EmbedBackend = Literal["auto", "torch", "openvino"]  # auto: openvino on a CPU where it is installed (odqa.embed)
C = TypeVar("C")


@dataclass(frozen=True)
class ChunkConfig:
    """How documents become passages: DPR words, or a character budget for unspaced scripts."""

    words: int = 100
    stride: int | None = None  # None = words (no overlap)
    chars: int = 200  # budget for text without spaces between words (Japanese, Chinese, Thai, ...: odqa.text)

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
    batch_size: int | None = None  # None = 8 (OpenVINO) or 16 (torch) on CPU, 128 on GPU
    device: str | None = None  # None = sentence-transformers' choice (cuda if present)
    precision: EmbedPrecision = "auto"  # resolved when the encoder is built; the resolved value is written out
    backend: EmbedBackend = "auto"  # what runs the model; resolved (and written out) like precision
    cache_dir: str | None = None  # persistent embedding cache; None = default user cache, "" = off
    cache_limit_gb: float = 2.0  # past this size the least recently used vectors are evicted
    converted_dir: str | None = None  # converted (OpenVINO) models, with or without a cache; None = default, "" = none

    def __post_init__(self) -> None:
        if self.batch_size is not None and self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        _check_choice("precision", self.precision, get_args(EmbedPrecision))
        _check_choice("backend", self.backend, get_args(EmbedBackend))
        if not self.cache_limit_gb > 0:
            raise ConfigError(f"cache_limit_gb must be > 0, got {self.cache_limit_gb}")
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
    precision: Precision = "fp32"  # bf16 suits CPUs with AMX, fp16 and bf16 GPUs

    def __post_init__(self) -> None:
        if self.model is not None and not self.model.strip():
            raise ConfigError("rerank model must be a hub id or a local path, got an empty string")
        for name in ("top_n", "batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"rerank {name} must be >= 1, got {getattr(self, name)}")
        if self.max_length is not None and self.max_length < 1:
            raise ConfigError(f"rerank max_length must be >= 1 (or null: the model's own), got {self.max_length}")
        _check_choice("rerank precision", self.precision, get_args(Precision))


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
    rerank: RerankConfig = field(default_factory=RerankConfig)  # a cross-encoder over the top rerank.top_n

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


def _unknown_keys(cls: type, data: Mapping[str, Any], where: str) -> None:
    """Reject keys that are not fields, naming the valid ones (nested configs are checked too)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields), key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; valid keys: {sorted(fields)}")
    for name, value in data.items():
        sub = fields[name].default_factory  # nested config dataclasses use default_factory
        if isinstance(value, Mapping) and isinstance(sub, type) and dataclasses.is_dataclass(sub):
            _unknown_keys(sub, value, f"{where}: {name}")


# pydantic's words for these speak of JSON; a config file is YAML.
_EXPECTED = {"dataclass_type": "a mapping of keys to values", "tuple_type": "a list", "list_type": "a list"}


def _build(cls: type[C], data: Mapping[str, Any], where: str) -> C:
    """Validate ``data`` against the dataclass's annotations (strictly: no ``"5"`` for an int, no ``1`` for a
    bool), then construct it, so ``__post_init__`` checks the ranges.

    pydantic validates the JSON form of the data: strict JSON mode still takes a YAML list for a tuple and an int
    for a float; a YAML scalar JSON cannot hold (a date) is passed as its text.
    """
    from pydantic import TypeAdapter, ValidationError

    _unknown_keys(cls, data, where)
    try:
        return TypeAdapter(cls).validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(map(str, error["loc"]))
        valid = _EXPECTED.get(error["type"]) or error["msg"].removeprefix("Input should be ")
        raise ConfigError(f"{where}: {name} must be {valid}, got {error['input']!r}") from exc


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
    from odqa.io import atomic_write

    output = Path(output)
    target = output.parent / f"{output.name}.config.json"
    with atomic_write(target) as fh:
        json.dump({"odqa_version": __version__, "stage": type(config).__name__, **to_dict(config)}, fh, indent=2)
        fh.write("\n")
    return target
