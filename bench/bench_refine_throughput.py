"""Refinement throughput: odqa against the baseline a researcher writes today, side by side in one run.

Baseline (as Complex-TR's released reranker does it): one question at a time, ``model.encode`` over that
question's passages, cosine top-k. odqa: ``refine(scorer="dense")`` — questions in blocks, each distinct passage
encoded once, through the persistent cache. Same model object, same texts, same k; the top-k lists are compared.

Reported: passages/s and questions/s for the baseline, odqa with a cold cache, and odqa rerun on a warm cache;
and the encoder's achieved FLOP/s as a share of this machine's measured fp32 matrix-multiply peak.

    python bench/bench_refine_throughput.py [--questions 200] [--distractors 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from bench_refine_quality import DATA, articles, with_distractors

from odqa.chunk import chunk
from odqa.config import EmbedConfig, RefineConfig
from odqa.datasets import load_timeqa
from odqa.embed import Encoder, passage_text, query_text
from odqa.io import atomic_write
from odqa.records import Example
from odqa.refine import refine

K = 20


def baseline(examples: list[Example], encoder: Encoder, config: RefineConfig) -> tuple[list[list[str]], int]:
    """One question at a time: encode its passages, score, sort. Returns top-k ids and passages encoded."""
    model, preset = encoder.model, encoder.preset
    tops, encoded = [], 0
    for ex in examples:
        passages = list(chunk(ex.ctxs or (), config.chunk))
        vectors = model.encode([passage_text(p, preset.passage_prefix) for p in passages],
                               batch_size=encoder.batch_size, convert_to_numpy=True)
        query = model.encode([query_text(ex.question, preset.query_prefix)], convert_to_numpy=True)[0]
        order = np.argsort(-(vectors @ query), kind="stable")[:K]
        tops.append([passages[i].id for i in order])
        encoded += len(passages)
    return tops, encoded


def odqa_run(examples: list[Example], encoder: Encoder, config: RefineConfig) -> list[list[str]]:
    return [[h.passage.id for h in item.hits] for item in refine(examples, config, encoder)]


def matmul_peak(size: int = 2048, repeats: int = 5) -> float:
    """Best-of-N fp32 FLOP/s of a square matrix multiply: the machine's practical peak."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def encoder_flops(encoder: Encoder, texts: list[str]) -> float:
    """Forward FLOPs for ``texts``: 2 x non-embedding parameters per token plus attention scores and mixing."""
    transformer = encoder.model[0].auto_model
    config = transformer.config
    params = sum(p.numel() for n, p in transformer.named_parameters() if "embeddings" not in n)
    tokenizer = encoder.model.tokenizer
    limit = encoder.model.max_seq_length
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=limit)["input_ids"]]
    dense = 2 * params * sum(lengths)
    attention = sum(4 * config.num_hidden_layers * n * n * config.hidden_size for n in lengths)
    return float(dense + attention)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--distractors", type=int, default=0)
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "refine_throughput.json")
    parser.add_argument("--floors", type=Path, default=Path(__file__).parent / "floors.json")
    args = parser.parse_args()

    answerable = [ex for ex in load_timeqa(DATA) if ex.answers]
    examples = answerable[: args.questions]
    if args.distractors:  # drawn from all 309 articles, not only those of the selected questions
        examples = with_distractors(examples, articles(answerable), args.distractors, seed=13)
    with tempfile.TemporaryDirectory() as cache:
        encoder = Encoder(EmbedConfig(model=args.model, cache_dir=cache))
        config = RefineConfig(scorer="dense", k=K, embed=encoder.config)
        total = sum(len(list(chunk(ex.ctxs or (), config.chunk))) for ex in examples)
        distinct = len({passage_text(p) for ex in examples for p in chunk(ex.ctxs or (), config.chunk)})

        started = time.perf_counter()
        base_top, encoded = baseline(examples, encoder, config)
        base_s = time.perf_counter() - started

        started = time.perf_counter()
        cold_top = odqa_run(examples, encoder, config)
        cold_s = time.perf_counter() - started
        cold_encoded = encoder.encoded

        started = time.perf_counter()
        warm_top = odqa_run(examples, encoder, replace(config))
        warm_s = time.perf_counter() - started

        sample = [passage_text(p) for ex in examples[:50] for p in chunk(ex.ctxs or (), config.chunk)][:1000]
        started = time.perf_counter()
        encoder.model.encode(sample, batch_size=encoder.batch_size)
        run_s = time.perf_counter() - started
        achieved = encoder_flops(encoder, sample) / run_s
        peak = matmul_peak()

    agree = np.mean([a == b for a, b in zip(base_top, cold_top, strict=True)])
    agree_warm = np.mean([a == b for a, b in zip(cold_top, warm_top, strict=True)])
    rows = {
        "baseline (per question)": (base_s, encoded),
        "odqa, cold cache": (cold_s, cold_encoded),
        "odqa, warm cache": (warm_s, encoder.encoded - cold_encoded),
    }
    print(f"{len(examples)} questions, {total} passages scored ({distinct} distinct texts), k={K}, model {args.model}")
    print(f"{'run':26s} {'seconds':>8s} {'encoded':>8s} {'passages/s':>11s} {'questions/s':>12s} {'speed-up':>9s}")
    for name, (seconds, n_encoded) in rows.items():
        print(f"{name:26s} {seconds:8.1f} {n_encoded:8d} {total / seconds:11.1f} {len(examples) / seconds:12.2f} "
              f"{base_s / seconds:8.1f}x")
    print(f"identical top-{K} lists: baseline vs odqa {agree:.3f}, cold vs warm {agree_warm:.3f}")
    print(f"encoder: {achieved / 1e9:.1f} GFLOP/s achieved, fp32 matmul peak {peak / 1e9:.1f} GFLOP/s "
          f"({achieved / peak:.0%} of peak)")
    figures = {"cold_speedup": base_s / cold_s, "agreement": float(agree), "share_of_peak": achieved / peak}
    with atomic_write(args.json) as fh:
        json.dump({
            "questions": len(examples), "passages": total, "distinct": distinct,
            "runs": {name: {"seconds": s, "encoded": n} for name, (s, n) in rows.items()},
            "gflops": achieved / 1e9, "peak_gflops": peak / 1e9, **figures,
        }, fh, indent=2)
    default_run = (args.questions, args.distractors, args.model) == (200, 0, "minilm")
    return check_floors(figures, args.floors) if default_run else int(agree < 0.99)


def check_floors(figures: dict[str, float], path: Path) -> int:
    """Exit status 1 when a ratio is below its pinned floor (same-run ratios, so the machine cancels out)."""
    floors = json.loads(path.read_text())["refine_throughput"]
    failures = [f"{key}: {figures[key]:.3f} < floor {floor}" for key, floor in floors.items()
                if not key.startswith("_") and figures[key] < floor]
    print("floors: " + ("all met" if not failures else "FAILED\n  " + "\n  ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
