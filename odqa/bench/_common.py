"""What every benchmark shares: where the data and floors live, the machine's matmul peak, model FLOPs, memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from odqa.errors import InputError

__all__ = ["BENCH", "TIMEQA", "bench_dir", "encoder_flops", "machine", "matmul_peak", "peak_memory_mb", "say",
           "write_json"]

BENCH = Path(__file__).resolve().parents[2] / "bench"  # the source checkout's bench/: data and floors
TIMEQA = BENCH / "data" / "timeqa" / "human_train.hard.json.gzip"


def bench_dir() -> Path:
    """``bench/`` of the source checkout; benchmarks read its data and floors."""
    if not TIMEQA.is_file():
        raise InputError(f"benchmark data {TIMEQA} is missing: `odqa bench` runs from a source checkout of odqa "
                         "(git clone, then pip install -e .)")
    return BENCH


def say(message: str) -> None:
    """One progress line on stderr (figures go to the JSON results and the final table)."""
    print(message, file=sys.stderr, flush=True)


def proc_status(*keys: str) -> dict[str, float]:
    """Fields of this process's /proc/self/status in MiB (VmHWM: peak resident memory, which ``ru_maxrss`` would
    carry over from a forking parent; RssAnon: anonymous memory)."""
    fields = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in keys:
                fields[key] = int(value.split()[0]) / 1024
    return fields


def machine() -> dict[str, Any]:
    import torch

    from odqa.embed.openvino import cpu_bf16

    return {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
            "platform": platform.platform(), "torch": torch.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu_bf16": cpu_bf16(),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def matmul_peak(dtype: str, size: int = 2048, repeats: int = 5) -> float:
    """Best-of-N FLOP/s of a square matrix multiply in ``dtype`` (fp32 or bf16): this machine's practical peak."""
    import torch

    kind = torch.float32 if dtype == "fp32" else torch.bfloat16
    a, b = torch.randn(size, size, dtype=kind), torch.randn(size, size, dtype=kind)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def encoder_flops(model: Any, texts: Sequence[str]) -> float:
    """Forward FLOPs for ``texts``: 2 x non-embedding parameters per token, plus attention scores and mixing."""
    transformer = model[0].auto_model
    config = transformer.config
    params = sum(p.numel() for n, p in transformer.named_parameters() if "embeddings" not in n)
    lengths = [len(ids) for ids in model.tokenizer(list(texts), truncation=True,
                                                    max_length=model.max_seq_length)["input_ids"]]
    attention = sum(4 * config.num_hidden_layers * n * n * config.hidden_size for n in lengths)
    return float(2 * params * sum(lengths) + attention)


def peak_memory_mb(children: bool = False) -> float:
    """Peak resident memory (MiB) of this process, or of its largest finished child process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF)
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return usage.ru_maxrss * scale / 2**20


def write_json(path: Path, data: Any) -> None:
    from odqa.io import atomic_write

    with atomic_write(path) as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
