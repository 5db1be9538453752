"""``odqa bench``: throughput and quality benchmarks, measured as ratios in one run on one machine.

Each suite is a module with ``run(quick) -> dict`` and ``check(results, floors) -> failures``; :func:`run_bench`
runs the chosen suites, writes their JSON results and PNG plots, and compares them with the floors pinned in
``bench/floors.json`` (floors are raised when a change earns it, never lowered silently).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from odqa.bench._common import bench_dir, machine, say, write_json

__all__ = ["SUITES", "BenchRun", "Suite", "run_bench"]

Suite = Literal["refine", "index", "scale", "crawl", "hybridqa", "reader", "report", "train"]
SUITES: tuple[Suite, ...] = ("refine", "index", "scale", "crawl", "hybridqa", "reader", "report", "train")


@dataclass
class BenchRun:
    """What :func:`run_bench` measured and wrote, and the floors it missed (empty when all are met)."""

    results: dict[str, Any]
    files: list[Path] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: An embedding cache the suites of a quick run share (the refine quality and index suites encode the same
    #: TimeQA passages); None in a full run, where each suite encodes into a throwaway cache of its own.
    cache: str | None = None
    #: The reader suite's model shape, device and precision (``size``, ``device``, ``precision``) when given.
    reader: dict[str, str] = field(default_factory=dict)


def _refine(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import plots, quality, refine

    say("refine: throughput")
    throughput = refine.run(quick)
    say("refine: quality (answer recall@k per scorer)")
    recall = quality.run(quick, cache=run.cache)
    run.results["refine"] = {"throughput": throughput, "quality": recall}
    run.failures += refine.check(throughput, floors["refine_throughput"])
    run.failures += quality.check(recall, floors["refine_quality"])
    run.files.append(plots.throughput_by_batch(throughput, out / "refine_throughput.png"))
    run.files.append(plots.recall_curves(recall, out / "refine_recall.png"))


def _crawl(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import crawl, plots

    say("crawl: fetch against the bound, extraction")
    results = run.results["crawl"] = crawl.run(quick)
    run.failures += crawl.check(results, floors["crawl"])
    run.files.append(plots.crawl_against_bound(results, out / "crawl.png"))


def _index(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import index

    say("index: corpus indexes (dense FAISS, BM25): speed, recall, peak memory")
    results = run.results["index"] = index.run(quick, cache=run.cache)
    run.failures += index.check(results, floors["index"])


def _scale(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import plots, scale

    say("scale: BM25 and dense indexes at 100K+ synthetic passages, each build and search in a fresh process")
    results = run.results["scale"] = scale.run(quick)
    run.failures += scale.check(results, floors["scale"])
    run.files.append(plots.scale_curves(results, out / ("scale-quick.png" if quick else "scale.png")))


def _hybridqa(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import hybridqa

    say("hybridqa: answer recall@k of the table scorers (cell- and passage-answered questions apart)")
    results = run.results["hybridqa"] = hybridqa.run(quick)
    say(hybridqa.table(results["results"]))
    run.failures += hybridqa.check(results, floors["hybridqa"])


def _reader(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import reader

    say("reader: questions/s and peak memory by n-context")
    run.results["reader"] = reader.run((10, 50) if quick else reader.N_CONTEXTS, questions=4 if quick else 16,
                                       **run.reader)  # type: ignore[arg-type]


def _report(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import report

    say("report: page size, build time, time to a usable page in headless Chromium")
    run.results["report"] = report.run(quick)


def _train(quick: bool, out: Path, floors: dict[str, Any], run: BenchRun) -> None:
    from odqa.bench import train

    say("train: a retriever and a reranker trained on TimeQA half 0 (and HybridQA tuning tables), measured held out")
    results = run.results["train"] = train.run(quick)
    say(train.table(results))
    run.failures += train.check(results, floors["train_quick" if quick else "train"])


_RUNNERS = {"refine": _refine, "index": _index, "scale": _scale, "crawl": _crawl, "hybridqa": _hybridqa,
            "reader": _reader, "report": _report, "train": _train}


def run_bench(suites: Sequence[Suite], out: str | Path, *, quick: bool = False,
              reader: dict[str, str] | None = None) -> BenchRun:
    """Run ``suites`` (in the order of :data:`SUITES`), write ``<out>/bench.json`` and the plots, check floors.

    ``reader``: the reader suite's model shape, device and precision (``size``, ``device``, ``precision``)."""
    floors = json.loads((bench_dir() / "floors.json").read_text(encoding="utf-8"))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run = BenchRun({"machine": machine(), "quick": quick}, reader=reader or {})
    with tempfile.TemporaryDirectory() as shared:
        run.cache = shared if quick else None
        for name in SUITES:
            if name in suites:
                started = time.perf_counter()
                _RUNNERS[name](quick, out, floors, run)
                run.results.setdefault("seconds", {})[name] = time.perf_counter() - started
        run.cache = None
    target = out / ("bench-quick.json" if quick else "bench.json")
    write_json(target, run.results | {"failures": run.failures})
    run.files.insert(0, target)
    return run
