"""A sentence-transformers model whose transformer runs under OpenVINO, the fastest CPU backend measured here.

Only the transformer changes hands: sentence-transformers still tokenises (same truncation), and its own pooling
and normalisation modules turn the token states into vectors, so a preset is honoured exactly as under torch.
On a Zen 4 CPU with AVX-512 BF16, OpenVINO's bf16 ran MiniLM at 2.4x the naive fp32 loop, against 1.7x for torch's
bf16 autocast (docs/refine.md, "--backend"). The converted model (OpenVINO IR) is saved once per model
and reused; converting takes a few seconds, compiling a fraction of one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from odqa.config import Precision

__all__ = ["IR_FILE", "OpenVinoModel", "import_openvino", "supports"]

IR_FILE = "model.xml"  # with model.bin beside it
MODELS_DIR = "openvino"  # in the cache folder: one converted model (IR) per model setting
_HINTS: dict[str, str] = {"fp32": "f32", "bf16": "bf16"}  # fp16 on CPU is not offered: few CPUs compute it


def import_openvino() -> ModuleType | None:
    """The ``openvino`` module, or None where it is not installed (or fails to import)."""
    try:
        return importlib.import_module("openvino")
    except ImportError:
        return None


def supports(openvino: ModuleType, precision: str) -> bool:
    """Whether this CPU runs ``precision`` natively under OpenVINO (bf16 elsewhere would silently run as f32)."""
    if precision not in _HINTS:
        return False
    capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return precision == "fp32" or "BF16" in capabilities


def _example_input(model: Any) -> dict[str, Any]:
    """Two texts of different lengths, so the traced graph includes padding under the attention mask."""
    features = _features(model, ["an example input", "a longer example input, padded to its length in a batch"])
    return {name: value for name, value in features.items() if name in ("input_ids", "attention_mask",
                                                                          "token_type_ids")}


def _features(model: Any, texts: list[str]) -> dict[str, Any]:
    """sentence-transformers' own tokenisation (its truncation and max_seq_length), across 5.x and 6.x."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize
    return dict(preprocess(texts))


def _convert(openvino: ModuleType, model: Any) -> Any:
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


def _load_or_convert(openvino: ModuleType, model: Any, ir_dir: Path | None) -> Any:
    """The converted transformer: read from ``ir_dir`` when saved there before, else converted (and saved there,
    atomically: a folder renamed into place, so a reader never sees half an IR)."""
    if ir_dir is not None and (ir_dir / IR_FILE).is_file():
        return openvino.Core().read_model(ir_dir / IR_FILE)
    network = _convert(openvino, model)
    if ir_dir is not None:
        ir_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{ir_dir.name}-", dir=ir_dir.parent))
        try:
            openvino.save_model(network, staging / IR_FILE, compress_to_fp16=False)  # weights stay fp32
            with contextlib.suppress(OSError):  # another run saved the same IR first: keep theirs
                os.replace(staging, ir_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return network


class OpenVinoModel:
    """Encodes texts as ``model.encode`` would, with ``model``'s transformer compiled by OpenVINO for the CPU.

    ``ir_dir`` is where the converted transformer is kept between runs (None: convert in memory every time).
    Any failure to convert or compile propagates: the caller falls back to torch.
    """

    def __init__(self, model: Any, precision: Precision, threads: int, ir_dir: Path | None = None) -> None:
        openvino = import_openvino()
        if openvino is None or precision not in _HINTS:
            raise ValueError(f"OpenVINO cannot run precision {precision!r} here")
        self.model = model
        network = _load_or_convert(openvino, model, ir_dir)
        # THROUGHPUT: one stream per core, each batch on one of them; 2 streams of 1 thread encoded MiniLM 13-23 %
        # faster than LATENCY's one stream of 2 threads (bf16, batch 8 and 16, 2 cores at load 2-3).
        self.compiled = openvino.Core().compile_model(network, "CPU", {
            "INFERENCE_PRECISION_HINT": _HINTS[precision],
            "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "THROUGHPUT",
        })
        self.inputs = [port.get_any_name() for port in self.compiled.inputs]
        self.jobs = int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS"))

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Vectors of ``texts`` in order: longest first in batches of ``batch_size`` (as sentence-transformers
        sorts), then its pooling and normalisation modules. One batch runs on each stream while the next is
        tokenised; several threads may call this at once (each call has its own requests)."""
        order = np.argsort([-len(text) for text in texts], kind="stable")
        batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
        pooled: list[np.ndarray] = []
        requests = [self.compiled.create_infer_request() for _ in range(min(self.jobs, len(batches)))]
        waiting: list[dict[str, Any]] = []  # the features of the batches in flight, oldest first
        for number, chosen in enumerate(batches):
            request = requests[number % len(requests)]
            if len(waiting) == len(requests):  # this request's previous batch: wait for it and pool it
                request.wait()
                pooled.append(self._pool(waiting.pop(0), request))
            features = _features(self.model, [texts[i] for i in chosen])
            request.start_async({name: features[name].numpy() for name in self.inputs})
            waiting.append(features)
        for number in range(len(batches) - len(waiting), len(batches)):
            request = requests[number % len(requests)]
            request.wait()
            pooled.append(self._pool(waiting.pop(0), request))
        vectors = np.concatenate(pooled)
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _pool(self, features: dict[str, Any], request: Any) -> np.ndarray:
        """The model's own modules after the transformer (pooling, normalisation) over a finished request's token
        states."""
        import torch

        features["token_embeddings"] = torch.from_numpy(np.array(request.get_output_tensor(0).data, np.float32))
        with torch.no_grad():
            for module in list(self.model)[1:]:
                features = module(features)
        vectors: np.ndarray = features["sentence_embedding"].numpy()
        return vectors
