"""Vectors from a transformer compiled by OpenVINO, the fastest CPU backend measured here.

A model is converted once from its sentence-transformers form into a folder of its own (:mod:`odqa.embed.folders`,
used with or without a vector cache): the transformer as an
OpenVINO IR (``model.xml`` + ``model.bin``) and its tokenizer as a ``tokenizer.json`` set to truncate and pad as
sentence-transformers does. Every later run reads that folder and encodes without importing torch, transformers or
sentence-transformers, whose import alone took 6 s of a 9 s warm ``odqa refine`` (docs/refine.md, "--backend").
Pooling and normalisation are the preset's, computed in numpy. On a Zen 4 CPU with AVX-512 BF16, OpenVINO's bf16
ran MiniLM at 2.5x the naive fp32 loop, against 2.0x for torch's bf16 autocast.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from odqa.config import Pooling, Precision

__all__ = ["IR_FILE", "TOKENIZER_FILE", "Converted", "OpenVinoModel", "convert", "cpu_bf16",
           "import_openvino", "is_converted", "read_converted", "supports"]

IR_FILE = "model.xml"  # with model.bin beside it
TOKENIZER_FILE = "tokenizer.json"
log = logging.getLogger(__name__)
_HINTS: dict[str, str] = {"fp32": "f32", "bf16": "bf16"}  # fp16 on CPU is not offered: few CPUs compute it


def import_openvino() -> ModuleType | None:
    """The ``openvino`` module, or None where it is not installed (or fails to import)."""
    try:
        return importlib.import_module("openvino")
    except ImportError:
        return None


def cpu_bf16() -> bool:
    """Whether this CPU computes bf16 natively (AVX-512 BF16, AMX), as OpenVINO's CPU plugin reports it: the one
    place odqa asks. Where OpenVINO is not installed the answer is no (``auto`` picks fp32, ``bf16`` is refused):
    no other source covers every platform (torch's CPU capability never names BF16 or AMX; /proc/cpuinfo is Linux's
    only, with other flag names on Arm)."""
    openvino = import_openvino()
    return openvino is not None and "BF16" in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def supports(precision: str) -> bool:
    """Whether OpenVINO runs ``precision`` natively on this CPU (bf16 elsewhere would silently run as f32)."""
    return import_openvino() is not None and (precision == "fp32" or (precision == "bf16" and cpu_bf16()))


@dataclass(frozen=True)
class Converted:
    """A model as OpenVINO runs it: the transformer's graph and the tokenizer that feeds it."""

    network: Any  # openvino.Model: token ids (and masks) in, token states out
    tokenizer: Any  # tokenizers.Tokenizer, truncating and padding as sentence-transformers does


def _tokenizer(model: Any) -> Any:
    """A copy of the model's fast tokenizer set to what sentence-transformers' ``preprocess`` asks of it: special
    tokens added, truncation to the model's ``max_seq_length`` (which 5.x keeps apart from the tokenizer's own
    ``model_max_length``), padding to the longest text of a batch."""
    from tokenizers import Tokenizer

    hf = model[0].tokenizer
    if not getattr(hf, "is_fast", False):
        raise ValueError(f"{type(hf).__name__} is not a fast tokenizer, which OpenVINO runs need")
    tokenizer = Tokenizer.from_str(hf.backend_tokenizer.to_str())
    tokenizer.enable_truncation(int(model.max_seq_length), strategy="longest_first", direction=hf.truncation_side)
    tokenizer.enable_padding(direction=hf.padding_side, pad_id=hf.pad_token_id, pad_type_id=hf.pad_token_type_id,
                             pad_token=hf.pad_token)
    return tokenizer


def _example_input(model: Any) -> dict[str, Any]:
    """Two texts of different lengths, so the traced graph includes padding under the attention mask."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers 6.x, 5.x
    features = preprocess(["an example input", "a longer example input, padded to its length in a batch"])
    return {name: value for name, value in features.items() if name in ("input_ids", "attention_mask",
                                                                          "token_type_ids")}


def _trace(openvino: ModuleType, model: Any) -> Any:
    """Trace the transformer into an OpenVINO model with dynamic batch and sequence dimensions."""
    import torch
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    # The trace's config notices (loss_type, ...) are not the user's concern.
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # tracing warns of Python branches on shapes; the graph stays dynamic
            return openvino.convert_model(model[0].auto_model, example_input=_example_input(model))
    finally:
        hf_logging.set_verbosity(verbosity)


def is_converted(folder: Path) -> bool:
    """Whether a model was converted into ``folder`` (which :func:`convert` fills whole or not at all)."""
    return (folder / IR_FILE).is_file() and (folder / TOKENIZER_FILE).is_file()


def read_converted(openvino: ModuleType, folder: Path) -> Converted:
    """The model converted into ``folder`` before."""
    from tokenizers import Tokenizer

    return Converted(openvino.Core().read_model(folder / IR_FILE), Tokenizer.from_file(str(folder / TOKENIZER_FILE)))


def convert(openvino: ModuleType, model: Any, folder: Path | None) -> Converted:
    """Convert a sentence-transformers ``model`` and save it in ``folder`` (None: keep it in memory only).

    The folder is written whole and renamed into place, so a reader never sees half of it; when another run saved
    the same model first, theirs is kept.
    """
    converted = Converted(_trace(openvino, model), _tokenizer(model))
    if folder is not None:
        try:
            _save(openvino, converted, folder)
        except OSError as exc:  # a folder this process cannot write: the model still runs, converted in memory
            log.warning("cannot keep the converted model in %s (%s); it is converted again on the next run",
                        folder, exc.strerror or exc)
    return converted


def _save(openvino: ModuleType, converted: Converted, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        openvino.save_model(converted.network, staging / IR_FILE, compress_to_fp16=False)  # weights stay fp32
        converted.tokenizer.save(str(staging / TOKENIZER_FILE))
        with contextlib.suppress(OSError):
            if folder.exists() and not is_converted(folder):  # half of one, left by an older odqa
                shutil.rmtree(folder)
            os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _threads() -> int | None:
    """The threads to compute with: ``OMP_NUM_THREADS`` where set (as torch honours it), else OpenVINO's choice,
    one per physical core."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


class OpenVinoModel:
    """Encodes texts as sentence-transformers would, with the transformer compiled by OpenVINO for the CPU.

    ``pooling`` and ``normalize`` are the preset's (a converted model serves every preset of its weights). Any
    failure to compile propagates: the caller falls back to torch.
    """

    def __init__(self, converted: Converted, pooling: Pooling, normalize: bool, precision: Precision) -> None:
        openvino = import_openvino()
        if openvino is None or precision not in _HINTS:
            raise ValueError(f"OpenVINO cannot run precision {precision!r} here")
        self.tokenizer = converted.tokenizer
        self.pooling = pooling
        self.normalize = normalize
        # THROUGHPUT: one stream per core, each batch on one of them; 2 streams of 1 thread encoded MiniLM 13-23 %
        # faster than LATENCY's one stream of 2 threads (bf16, batch 8 and 16, 2 cores at load 2-3).
        settings: dict[str, Any] = {"INFERENCE_PRECISION_HINT": _HINTS[precision], "PERFORMANCE_HINT": "THROUGHPUT"}
        if (threads := _threads()) is not None:
            settings["INFERENCE_NUM_THREADS"] = threads
        self.compiled = openvino.Core().compile_model(converted.network, "CPU", settings)
        self.inputs = {port.get_any_name(): port.get_element_type().to_dtype() for port in self.compiled.inputs}
        self.dimension = int(self.compiled.outputs[0].get_partial_shape()[-1].get_length())
        self.jobs = int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Vectors of ``texts`` in order: longest first in batches of ``batch_size`` (as sentence-transformers
        sorts). One batch runs on each stream while the next is tokenised; several threads may call this at once
        (each call has its own requests)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = np.argsort([-len(text) for text in texts], kind="stable")
        batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
        pooled: list[np.ndarray] = []
        requests = [self.compiled.create_infer_request() for _ in range(min(self.jobs, len(batches)))]
        masks: list[np.ndarray] = []  # the attention masks of the batches in flight, oldest first
        for number, chosen in enumerate(batches):
            request = requests[number % len(requests)]
            if len(masks) == len(requests):  # this request's previous batch: wait for it and pool it
                request.wait()
                pooled.append(self._pool(request, masks.pop(0)))
            features = self._features([texts[i] for i in chosen])
            request.start_async({name: features[name] for name in self.inputs})
            masks.append(features["attention_mask"])
        for number in range(len(batches) - len(masks), len(batches)):
            request = requests[number % len(requests)]
            request.wait()
            pooled.append(self._pool(request, masks.pop(0)))
        vectors = np.concatenate(pooled)
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _features(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        columns = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
        features = {name: np.array([getattr(e, columns[name]) for e in encodings], dtype=dtype)
                    for name, dtype in self.inputs.items()}
        if "attention_mask" not in features:
            features["attention_mask"] = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return features

    def _pool(self, request: Any, mask: np.ndarray) -> np.ndarray:
        """The sentence vectors of a finished request: its token states pooled (the first token's, or the mean
        over the attention mask), then scaled to unit length where the preset normalises."""
        states = np.asarray(request.get_output_tensor(0).data, dtype=np.float32)
        if self.pooling == "cls":
            vectors = states[:, 0].copy()
        else:
            weights = mask.astype(np.float32)[:, :, None]
            vectors = (states * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if self.normalize:
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors
