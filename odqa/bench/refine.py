"""Refinement throughput: the naive loop a researcher writes today against odqa, cold and warm, in one run.

Naive (what Complex-TR's released reranker does): one question at a time, ``model.encode`` over its passages
(fp32, sentence-transformers' defaults), no cache. odqa: ``refine(scorer="dense")``, the default precision
(``auto``). Two workloads from the shipped TimeQA hard data:

- ``unique``: one question per article, its own article's passages: no passage repeats, so only faster unique
  work (precision, batching across questions) can help;
- ``timeqa``: 40 articles; every question of those articles with its own article plus 10 others drawn (seeded)
  from the same 40: most passages repeat across questions, as in real use. odqa runs end to end from the command
  line (``odqa refine`` in a fresh process: start-up, model load, reading, writing), cold cache, then warm.

Top-10 agreement is the overlap of the top-10 passage sets with the fp32 naive loop's. Also measured: passages/s
by batch size and format, achieved FLOP/s as a share of this machine's matmul peak for that format, peak memory.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from odqa.bench._common import TIMEQA, encoder_flops, matmul_peak, peak_memory_mb, say
from odqa.chunk import chunk
from odqa.config import ChunkConfig, EmbedConfig, RefineConfig
from odqa.records import Document, Example

__all__ = ["naive", "overlap", "run", "timeqa_workload", "unique_workload"]

K = 10


def _answerable() -> list[Example]:
    from odqa.datasets import load_timeqa

    return [ex for ex in load_timeqa(TIMEQA) if ex.answers and ex.ctxs]


def unique_workload(examples: Sequence[Example], questions: int) -> list[Example]:
    """One question per article (its own article only), so no passage text repeats across the workload."""
    seen_articles: set[str] = set()
    seen_texts: set[str] = set()
    chosen = []
    for ex in examples:
        article = (ex.ctxs or ())[0]
        texts = {p.text for p in chunk([article])}
        if article.id in seen_articles or texts & seen_texts:
            continue
        seen_articles.add(article.id)
        seen_texts |= texts
        chosen.append(replace(ex, ctxs=(article,)))
        if len(chosen) == questions:
            break
    return chosen


def timeqa_workload(examples: Sequence[Example], articles: int = 40, others: int = 10, seed: int = 13
                    ) -> list[Example]:
    """The questions of ``articles`` articles, each with its own article plus ``others`` of the same articles."""
    by_article: dict[str, Document] = {}
    for ex in examples:
        by_article.setdefault((ex.ctxs or ())[0].id, (ex.ctxs or ())[0])
    rng = random.Random(seed)
    picked = sorted(rng.sample(sorted(by_article), articles))
    pool = [by_article[i] for i in picked]
    out = []
    for ex in examples:
        own = (ex.ctxs or ())[0]
        if own.id in picked:
            rest = [d for d in pool if d.id != own.id]
            out.append(replace(ex, ctxs=(own, *rng.sample(rest, others))))
    return out


def naive(examples: Sequence[Example], model: Any, k: int = K) -> tuple[list[list[str]], int]:
    """The baseline loop: per question, encode its passages and the question, rank by dot product."""
    from odqa.embed import get_preset, passage_text, query_text

    preset = get_preset("minilm")
    tops, encoded = [], 0
    for ex in examples:
        passages = list(chunk(ex.ctxs or ()))
        vectors = model.encode([passage_text(p, preset.passage_prefix) for p in passages], convert_to_numpy=True)
        query = model.encode([query_text(ex.question, preset.query_prefix)], convert_to_numpy=True)[0]
        order = np.argsort(-(vectors @ query), kind="stable")[:k]
        tops.append([passages[i].id for i in order])
        encoded += len(passages)
    return tops, encoded


def overlap(reference: Sequence[Sequence[str]], other: Sequence[Sequence[str]]) -> float:
    """Mean share of each reference top-k set found in the other's top-k set."""
    shares = [len(set(a) & set(b)) / len(a) for a, b in zip(reference, other, strict=True) if a]
    return float(np.mean(shares)) if shares else 1.0


def _passages(examples: Sequence[Example]) -> tuple[int, int]:
    texts = [p.text for ex in examples for p in chunk(ex.ctxs or ())]
    return len(texts), len(set(texts))


def _odqa_in_process(examples: Sequence[Example], precision: str, cache: str, converted: str,
                     backend: str = "auto") -> tuple[list[list[str]], float, str]:
    from odqa.embed import Encoder
    from odqa.refine import refine

    config = EmbedConfig(precision=precision, backend=backend, cache_dir=cache,  # type: ignore[arg-type]
                         converted_dir=converted)
    with Encoder(config) as encoder:
        refine_config = RefineConfig(scorer="dense", k=K, embed=encoder.config)
        started = time.perf_counter()
        tops = [[h.passage.id for h in item.hits] for item in refine(examples, refine_config, encoder)]
        return tops, time.perf_counter() - started, f"{encoder.backend} {encoder.precision}"


#: The odqa runs of the unique workload: (label, backend, precision); "odqa default" is what a user gets.
_UNIQUE_RUNS = (("odqa torch fp32 (batching only)", "torch", "fp32"), ("odqa torch bf16", "torch", "bf16"),
                ("odqa openvino fp32", "openvino", "fp32"), ("odqa default", "auto", "auto"))


def bench_unique(reference_model: Any, examples: Sequence[Example]) -> dict[str, Any]:
    from odqa.embed.openvino import cpu_bf16, import_openvino

    total, distinct = _passages(examples)
    say(f"unique: {len(examples)} questions, {total} passages ({distinct} distinct)")
    started = time.perf_counter()
    naive_top, _ = naive(examples, reference_model)
    naive_s = time.perf_counter() - started
    rows: dict[str, Any] = {"naive (fp32, per question)": {"seconds": naive_s, "top10_overlap": 1.0}}
    for label, backend, precision in _UNIQUE_RUNS:
        if (precision == "bf16" and not cpu_bf16()) or (backend == "openvino" and import_openvino() is None):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            # A first run on one question warms the process, and does the OpenVINO conversion, a one-off per model
            # (kept in the converted-models folder), with another vector cache, so that only encoding is timed
            # here. The TimeQA-shaped runs start from nothing and so include it.
            warm, cache, converted = Path(tmp, "warm"), Path(tmp, "cache"), str(Path(tmp, "converted"))
            _odqa_in_process(examples[:1], precision, str(warm), converted, backend)
            tops, seconds, used = _odqa_in_process(examples, precision, str(cache), converted, backend)
        rows[label] = {"seconds": seconds, "precision": used, "top10_overlap": overlap(naive_top, tops)}
    for row in rows.values():
        row |= {"passages_per_s": total / row["seconds"], "questions_per_s": len(examples) / row["seconds"],
                "speedup": naive_s / row["seconds"]}
        say(f"  {row['seconds']:7.1f} s  {row['passages_per_s']:7.1f} p/s  x{row['speedup']:.2f}  "
            f"top-10 overlap {row['top10_overlap']:.4f}  {row.get('precision', 'fp32')}")
    default = rows["odqa default"]
    return {"questions": len(examples), "passages": total, "distinct": distinct, "runs": rows,
            "speedup": default["speedup"], "top10_overlap": default["top10_overlap"]}


def _odqa_command() -> list[str]:
    script = Path(sys.executable).with_name("odqa")
    return [str(script)] if script.exists() else [sys.executable, "-c", "from odqa.cli import main; main()"]


def bench_timeqa(reference_model: Any, examples: Sequence[Example], naive_questions: int | None
                 ) -> dict[str, Any]:
    from odqa.inputs import load_examples
    from odqa.io import write_jsonl

    total, distinct = _passages(examples)
    say(f"timeqa: {len(examples)} questions, {total} passages ({distinct} distinct)")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "questions.jsonl"
        write_jsonl(source, ({"id": ex.id, "question": ex.question, "answers": list(ex.answers),
                              "ctxs": [{"id": d.id, "title": d.title, "text": d.text} for d in ex.ctxs or ()]}
                             for ex in examples))
        loaded = list(load_examples(source))
        sample = loaded if naive_questions is None else loaded[:naive_questions]
        sample_total, _ = _passages(sample)
        started = time.perf_counter()
        naive_top, _ = naive(sample, reference_model)
        naive_sample_s = time.perf_counter() - started
        naive_s = naive_sample_s * total / sample_total  # each question is independent work: linear in passages
        rows: dict[str, Any] = {"naive (fp32, per question)": {"seconds": naive_s, "timed_questions": len(sample)}}
        env = os.environ | {"HF_HUB_OFFLINE": "1", "ODQA_CONVERTED_DIR": str(Path(tmp) / "converted")}
        # Cold: nothing cached, the OpenVINO conversion included; warm: the same cache again; cold embeddings:
        # a new vector cache, the model converted by the first run, as on a machine that has refined anything before.
        runs = (("odqa refine, cold cache", "cache"), ("odqa refine, warm cache", "cache"),
                ("odqa refine, cold embeddings (model converted before)", "cache2"))
        for label, cache in runs:
            out = Path(tmp) / "out.jsonl"
            command = [*_odqa_command(), "refine", str(source), "--out", str(out), "--scorer", "dense", "--k",
                       str(K), "--cache-dir", str(Path(tmp) / cache)]
            started = time.perf_counter()
            subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds = time.perf_counter() - started
            written = {r["id"]: [c["id"] for c in r["ctxs"]]
                       for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
            precision = json.loads((Path(tmp) / "out.jsonl.config.json").read_text())["embed"]["precision"]
            rows[label] = {"seconds": seconds, "precision": precision,
                           "top10_overlap": overlap(naive_top, [written[ex.id] for ex in sample])}
    for row in rows.values():
        row |= {"passages_per_s": total / row["seconds"], "questions_per_s": len(examples) / row["seconds"],
                "speedup": naive_s / row["seconds"]}
        say(f"  {row['seconds']:7.1f} s  {row['passages_per_s']:8.1f} p/s  x{row['speedup']:.1f}")
    cold = rows["odqa refine, cold cache"]
    return {"questions": len(examples), "passages": total, "distinct": distinct,
            "naive_timed_questions": len(sample), "naive_timed_passages": sample_total, "runs": rows,
            "speedup": cold["speedup"], "warm_speedup": rows["odqa refine, warm cache"]["speedup"],
            "converted_speedup": rows["odqa refine, cold embeddings (model converted before)"]["speedup"],
            "top10_overlap": cold["top10_overlap"], "peak_memory_mb_cli": peak_memory_mb(children=True)}


def _dtype(fmt: str) -> str:
    """The number format of a format row ("openvino bf16" computes in bf16): which matmul peak it is held to."""
    return fmt.split()[-1]


def bench_formats(model: Any, texts: Sequence[str], batch_sizes: Sequence[int], peaks: dict[str, float]
                  ) -> list[dict[str, Any]]:
    """Passages/s and share of the matmul peak by batch size and format: torch fp32, torch bf16 (autocast, as odqa
    runs it), and OpenVINO fp32 and bf16 where it is installed (bf16 only on CPUs that compute it natively)."""
    import torch

    from odqa.embed import get_preset
    from odqa.embed.openvino import OpenVinoModel, convert, cpu_bf16, import_openvino

    flops = encoder_flops(model, texts)
    bf16 = cpu_bf16()
    runners: dict[str, Any] = {}
    for fmt in ("fp32", "bf16") if bf16 else ("fp32",):
        def torch_encode(batch: Sequence[str], size: int, fmt: str = fmt) -> Any:
            with torch.autocast("cpu", dtype=torch.bfloat16) if fmt == "bf16" else nullcontext():
                return model.encode(list(batch), batch_size=size)
        runners[fmt] = torch_encode
    if (openvino := import_openvino()) is not None:
        converted, preset = convert(openvino, model, None), get_preset("minilm")
        for fmt in ("fp32", "bf16") if bf16 else ("fp32",):
            runners[f"openvino {fmt}"] = OpenVinoModel(converted, preset.pooling, preset.normalize,
                                                       fmt).encode  # type: ignore[arg-type]
    rows = []
    for fmt, encode in runners.items():
        for batch in batch_sizes:
            encode(texts[:batch], batch)  # warm-up: kernels, allocator
            started = time.perf_counter()
            encode(texts, batch)
            seconds = time.perf_counter() - started
            peak = peaks[_dtype(fmt)]
            rows.append({"format": fmt, "batch_size": batch, "passages_per_s": len(texts) / seconds,
                         "gflops": flops / seconds / 1e9, "share_of_peak": flops / seconds / peak})
            say(f"  {fmt:13s} batch {batch:3d}: {len(texts) / seconds:7.1f} p/s, {flops / seconds / 1e9:6.1f} "
                f"GFLOP/s, {flops / seconds / peak:.0%} of the {_dtype(fmt)} peak")
    return rows


def run(quick: bool = False) -> dict[str, Any]:
    """The throughput figures as one JSON-able dict (``quick``: smaller workloads, naive loop sampled)."""
    from odqa.embed import Encoder

    examples = _answerable()
    size = 1024 if quick else 2048
    peaks = {fmt: matmul_peak(fmt, size) for fmt in ("fp32", "bf16")}
    say(f"matmul peak: fp32 {peaks['fp32'] / 1e9:.0f} GFLOP/s, bf16 {peaks['bf16'] / 1e9:.0f} GFLOP/s")
    with Encoder(EmbedConfig(precision="fp32", backend="torch", cache_dir="")) as reference:
        model = reference.model
        unique = bench_unique(model, unique_workload(examples, 16 if quick else 60))
        timeqa = bench_timeqa(model, timeqa_workload(examples), 6 if quick else 30)
        texts = [p.text for ex in unique_workload(examples, 8 if quick else 20) for p in chunk(ex.ctxs or ())]
        texts = texts[: 128 if quick else 320]
        say(f"formats: {len(texts)} passages")
        formats = bench_formats(model, texts, (16, 64) if quick else (8, 16, 32, 64, 128), peaks)
        started = time.perf_counter()
        model.preprocess(texts)
        tokenize_s = time.perf_counter() - started
    best = {fmt: max((r for r in formats if r["format"] == fmt), key=lambda r: r["passages_per_s"])
            for fmt in dict.fromkeys(r["format"] for r in formats)}
    # What overlapping tokenisation with the model could save at most: its share of the fastest encoding.
    tokenize_share = tokenize_s / (len(texts) / max(r["passages_per_s"] for r in best.values()))
    from odqa.embed.openvino import cpu_bf16

    return {"k": K, "cpu_bf16": cpu_bf16(), "chunk_words": ChunkConfig().words,
            "peak_gflops": {f: p / 1e9 for f, p in peaks.items()},
            "unique": unique, "timeqa": timeqa, "formats": formats,
            "share_of_peak": {fmt: row["share_of_peak"] for fmt, row in best.items()},
            "tokenize_share": tokenize_share,
            "peak_memory_mb": peak_memory_mb()}


def check(results: dict[str, Any], floors: dict[str, Any]) -> list[str]:
    """Failures: a speed-up, the top-10 agreement or the encoder's share of its peak below its floor.

    On a CPU without native bf16 (AVX2 only) the default computes in fp32, so the floors under ``without_bf16``
    replace those they name: each class of CPU is held to what it can reach.
    """
    if not results.get("cpu_bf16", True):
        floors = {**floors, **floors.get("without_bf16", {})}
    figures = {
        "unique_speedup": results["unique"]["speedup"],
        "timeqa_speedup": results["timeqa"]["speedup"],
        "timeqa_converted_speedup": results["timeqa"]["converted_speedup"],
        "timeqa_warm_speedup": results["timeqa"]["warm_speedup"],
        "top10_overlap": min(results["unique"]["top10_overlap"], results["timeqa"]["top10_overlap"]),
        "share_of_peak": max(results["share_of_peak"].values()),
    }
    return [f"refine throughput {key}: {figures[key]:.3f} < floor {floor}" for key, floor in floors.items()
            if not key.startswith("_") and key != "without_bf16" and figures[key] < floor]
