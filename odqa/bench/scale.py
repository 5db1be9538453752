"""``odqa bench scale``: BM25 and dense indexes at DPR scale, on a synthetic corpus, each step in a fresh process.

The corpus is :mod:`odqa.bench.synthetic`'s (100-word passages with TimeQA's word frequencies and a vocabulary
that keeps growing), written once as DPR TSV; a corpus of N passages is its first N. Every build and every
search runs in a fresh Python process that reports its own peak resident memory (VmHWM: file pages it mapped
count too) and its anonymous memory at the end. Rows per N:

- BM25 (``odqa index build --kind bm25`` on the TSV): build passages/s, peak RSS, bytes on disk per passage
  (passage text, per-shard term counts, the bm25s index), vocabulary size; search questions/s at k=100 and its
  peak RSS;
- dense from imported vectors (:func:`odqa.bench.synthetic.clustered_vectors`: unit vectors of low intrinsic
  dimension, so encoding cost does not hide the index's), per FAISS factory: build passages/s,
  peak RSS, bytes on disk per passage, search questions/s at k=100, recall@10 against exact search.

The questions are the shipped TimeQA hard questions (the corpus' words come from the same text), the query
vectors perturbed corpus vectors. ``--quick`` (the CI gate) runs N = 100K and 400K and builds IVF256,PQ32 only
(trained on 16,384 vectors); the full run adds 1M and 5M, IVF1024,PQ64, Flat and HNSW-SQ8.
Memory is projected to DPR's 21,015,324 passages on the straight line through the two largest N, build time
at the largest N's rate per passage (the costs are linear in N). Floors
(``bench/floors.json``, ``scale``): the peak RSS of the BM25 and IVF-PQ builds may grow at most 1.3x from 100K to
400K.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from odqa.bench._common import proc_status, say

__all__ = ["QUICK_SIZES", "SIZES", "WIKIPEDIA", "check", "project", "run"]

QUICK_SIZES = (100_000, 400_000)
SIZES = (100_000, 400_000, 1_000_000, 5_000_000)
WIKIPEDIA = 21_015_324  # passages in DPR's psgs_w100.tsv
QUESTIONS = 100
K = 100
DIMENSION = 768  # DPR's and BGE-base's vectors
MODEL = "bge-base"  # recorded in the manifest as the model that computed the vectors (it would encode queries)
VECTOR_SHARD = 100_000  # rows per .npy file of the imported vectors; every N is a whole number of them
# FAISS factory, search parameters, the largest N each is built at in a full run, and the vectors it trains on:
# Flat holds every vector in memory (3 GB per million), HNSW's build is about 30 minutes per million vectors on 2 cores.
Factories = dict[str, tuple[str, str | None, int, int]]
DENSE: Factories = {"IVF-PQ": ("IVF1024,PQ64", "nprobe=16", SIZES[-1], 100_000), "Flat": ("Flat", None, 1_000_000, 0),
                    "HNSW-SQ8": ("HNSW32_SQ8", "efSearch=128", 400_000, 0)}
# --quick (the CI gate) builds what the floors read, with fewer lists and codes and 64 training vectors a list: the
# PQ and k-means training dominate its time on 2 cores, and the floors are about memory growth with N
QUICK_DENSE: Factories = {"IVF-PQ": ("IVF256,PQ32", "nprobe=16", QUICK_SIZES[-1], 256 * 64)}


class _AnonPeak:
    """Samples this process' anonymous memory every 20 ms: the peak of what page cache cannot stand in for
    (VmHWM also counts the pages of memory-mapped files, which the kernel can drop)."""

    def __init__(self) -> None:
        import threading

        self.peak = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, proc_status("RssAnon")["RssAnon"])

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        return max(self.peak, proc_status("RssAnon")["RssAnon"])


def _memory(anon: _AnonPeak) -> dict[str, float]:
    """This process's peak resident memory, its peak and final anonymous memory (MiB)."""
    peak_anon = anon.stop()
    fields = proc_status("VmHWM", "RssAnon")
    return {"peak_mb": fields["VmHWM"], "anon_mb": fields["RssAnon"], "peak_anon_mb": max(peak_anon, fields["RssAnon"])}


def _folder_bytes(folder: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in folder.glob(pattern) if p.is_file())


def _bm25_build(task: dict[str, Any]) -> dict[str, Any]:
    from odqa.index import IndexConfig, build_index, read_passages

    out = Path(task["out"])
    started = time.perf_counter()
    manifest = build_index(islice(read_passages(task["corpus"]), task["n"]), out, IndexConfig(kind="bm25"))
    seconds = time.perf_counter() - started
    with (out / "bm25" / "vocab.index.json").open(encoding="utf-8") as fh:
        vocabulary = len(json.load(fh)) - 1  # less bm25s' empty token
    return {"seconds": seconds, "passages": manifest.count, "vocabulary": vocabulary,
            "text_bytes": _folder_bytes(out, "shards/*.passages.jsonl") + _folder_bytes(out, "shards/*.offsets.npy"),
            "terms_bytes": _folder_bytes(out, "shards/*.bm25-*"), "index_bytes": _folder_bytes(out / "bm25"),
            "total_bytes": _folder_bytes(out)}


def _bm25_search(task: dict[str, Any]) -> dict[str, Any]:
    from odqa.bench.synthetic import questions
    from odqa.retrieve.sparse import BM25Retriever

    started = time.perf_counter()
    retriever = BM25Retriever(task["out"])
    load_s = time.perf_counter() - started
    asked = questions(QUESTIONS)
    retriever.search(asked[:1], K)  # first touch of the vocabulary and the matrix headers
    started = time.perf_counter()
    hits = retriever.search(asked, K)
    seconds = time.perf_counter() - started
    return {"load_s": load_s, "seconds": seconds, "qps": len(asked) / seconds,
            "hits": sum(len(row) for row in hits) / len(hits)}


def _dense_build(task: dict[str, Any]) -> dict[str, Any]:
    from odqa.config import EmbedConfig
    from odqa.index import IndexConfig, build_index, read_passages

    out = Path(task["out"])
    config = IndexConfig(kind="dense", faiss=task["factory"], embed=EmbedConfig(model=MODEL),
                         train_size=task["train_size"] or IndexConfig().train_size)
    started = time.perf_counter()
    manifest = build_index(islice(read_passages(task["corpus"]), task["n"]), out, config, vectors=task["vectors"])
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "passages": manifest.count, "index_bytes": _folder_bytes(out, "faiss.*"),
            "vectors_bytes": _folder_bytes(out, "shards/*.vectors.npy"), "total_bytes": _folder_bytes(out)}


def _dense_search(task: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from odqa.index.dense import load_faiss

    queries = np.load(task["queries"])
    exact = np.load(task["exact"])
    started = time.perf_counter()
    index = load_faiss(Path(task["out"]), task["params"])
    load_s = time.perf_counter() - started
    index.search(queries[:1], K)
    started = time.perf_counter()
    _, rows = index.search(queries, K)
    seconds = time.perf_counter() - started
    recall = float(np.mean([len(set(a[:10].tolist()) & set(b.tolist())) / 10 for a, b in zip(rows, exact,
                                                                                                 strict=True)]))
    return {"load_s": load_s, "seconds": seconds, "qps": len(queries) / seconds, "recall10": recall}


_TASKS = {"bm25-build": _bm25_build, "bm25-search": _bm25_search, "dense-build": _dense_build,
          "dense-search": _dense_search}


def _fresh(task: dict[str, Any]) -> dict[str, Any]:
    """Run ``task`` in a fresh Python process (niced like its parent); its figures and its own memory."""
    command = [sys.executable, "-m", "odqa.bench.scale", json.dumps(task)]
    # passive OpenMP threads: spinning ones cost FAISS minutes on a busy 2-core machine
    env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode:
        raise RuntimeError(f"bench scale step {task['task']} at {task['n']:,} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def bm25_rows(corpus: Path, sizes: Sequence[int], work: Path) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        out = work / f"bm25-{n}"
        build = _fresh({"task": "bm25-build", "corpus": str(corpus), "n": n, "out": str(out)})
        search = _fresh({"task": "bm25-search", "n": n, "out": str(out)})
        row = {"n": n, "build_pps": n / build["seconds"], "build_us_per_passage": build["seconds"] / n * 1e6,
               "build_peak_mb": build["peak_mb"], "build_peak_anon_mb": build["peak_anon_mb"],
               "build_s": build["seconds"], "vocabulary": build["vocabulary"],
               "disk_bytes_per_passage": build["total_bytes"] / n,
               "index_bytes_per_passage": build["index_bytes"] / n, "terms_bytes_per_passage": build["terms_bytes"] / n,
               "text_bytes_per_passage": build["text_bytes"] / n,
               "search_qps": search["qps"], "search_peak_mb": search["peak_mb"], "search_anon_mb": search["anon_mb"],
               "search_peak_anon_mb": search["peak_anon_mb"], "search_load_s": search["load_s"]}
        rows.append(row)
        say(f"BM25 {n:>9,}: build {row['build_pps']:,.0f} passages/s, peak RSS {row['build_peak_mb']:,.0f} MB "
            f"({row['build_peak_anon_mb']:,.0f} MB anonymous), "
            f"{row['disk_bytes_per_passage']:,.0f} B/passage on disk (index {row['index_bytes_per_passage']:,.0f}), "
            f"vocabulary {row['vocabulary']:,}; search k={K} {row['search_qps']:,.1f} q/s, peak RSS "
            f"{row['search_peak_mb']:,.0f} MB ({row['search_peak_anon_mb']:,.0f} MB anonymous)")
        _remove(out)
    return rows


def _exact_top10(shards: Sequence[Path], queries: Any) -> Any:
    """The exact top-10 rows of each query by inner product over the vector shards (read one at a time)."""
    import numpy as np

    best_scores = np.full((len(queries), 10), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), 10), dtype=np.int64)
    start = 0
    for path in shards:
        vectors = np.load(path, mmap_mode="r")
        scores = np.concatenate([best_scores, queries @ np.asarray(vectors).T], axis=1)
        rows = np.concatenate([best_rows, np.broadcast_to(np.arange(start, start + len(vectors)),
                                                          (len(queries), len(vectors)))], axis=1)
        top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
        best_scores, best_rows = np.take_along_axis(scores, top, 1), np.take_along_axis(rows, top, 1)
        start += len(vectors)
        del vectors
    return best_rows


def dense_rows(corpus: Path, sizes: Sequence[int], work: Path,
               factories: Factories) -> dict[str, list[dict[str, Any]]]:
    """Per factory (name: factory, search parameters, largest N, training vectors), a row per N: the dense index
    built from imported vectors, searched with queries near vectors of the smallest N's corpus."""
    import numpy as np

    from odqa.bench.synthetic import clustered_vectors

    shards = clustered_vectors(work / "vectors", sizes[-1], DIMENSION, shard=VECTOR_SHARD)
    (queries_file,) = clustered_vectors(work / "queries", QUESTIONS, DIMENSION, queries_of=sizes[0])
    queries = np.load(queries_file)
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in factories}
    for n in sizes:
        vectors = work / f"vectors-{n}"  # the first n rows, as a folder of shards
        vectors.mkdir()
        for path in shards[:n // VECTOR_SHARD]:
            (vectors / path.name).symlink_to(path)
        exact = work / f"exact-{n}.npy"
        np.save(exact, _exact_top10(shards[:n // VECTOR_SHARD], queries))
        for name, (factory, params, largest, train_size) in factories.items():
            if n > largest:
                continue
            out = work / f"dense-{name}-{n}"
            build = _fresh({"task": "dense-build", "corpus": str(corpus), "n": n, "out": str(out),
                            "factory": factory, "vectors": str(vectors), "train_size": train_size})
            search = _fresh({"task": "dense-search", "n": n, "out": str(out), "params": params,
                             "queries": str(queries_file), "exact": str(exact)})
            row = {"n": n, "factory": factory, "search_params": params or "", "build_pps": n / build["seconds"],
                   "build_us_per_passage": build["seconds"] / n * 1e6, "build_peak_mb": build["peak_mb"],
                   "build_peak_anon_mb": build["peak_anon_mb"], "build_s": build["seconds"],
                   "disk_bytes_per_passage": build["total_bytes"] / n,
                   "index_bytes_per_passage": build["index_bytes"] / n,
                   "vectors_bytes_per_passage": build["vectors_bytes"] / n, "search_qps": search["qps"],
                   "search_peak_mb": search["peak_mb"], "search_anon_mb": search["anon_mb"],
                   "search_peak_anon_mb": search["peak_anon_mb"], "recall10": search["recall10"]}
            rows[name].append(row)
            say(f"dense {name} ({factory}) {n:>9,}: build {row['build_pps']:,.0f} passages/s, peak RSS "
                f"{row['build_peak_mb']:,.0f} MB ({row['build_peak_anon_mb']:,.0f} MB anonymous), "
                f"{row['disk_bytes_per_passage']:,.0f} B/passage on disk (index "
                f"{row['index_bytes_per_passage']:,.0f}); "
                f"search k={K} {row['search_qps']:,.0f} q/s, peak RSS {row['search_peak_mb']:,.0f} MB "
                f"({row['search_peak_anon_mb']:,.0f} MB anonymous), recall@10 {row['recall10']:.3f}")
            _remove(out)
        _remove(vectors)
    return rows


def _remove(folder: Path) -> None:
    """Remove a measured output (the largest are many GB)."""
    for path in sorted(folder.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    folder.rmdir()


def project(rows: Sequence[dict[str, Any]], key: str, n: int = WIKIPEDIA) -> float:
    """``key`` at ``n`` passages on the straight line through the two largest measured N."""
    a, b = rows[-2], rows[-1]
    slope = (b[key] - a[key]) / (b["n"] - a["n"])
    return float(b[key] + slope * (n - b["n"]))


def _part(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A row set with its projection to DPR's Wikipedia and its build memory's growth from the first to second N."""
    keys = ("build_peak_mb", "build_peak_anon_mb", "search_peak_mb", "search_peak_anon_mb")
    projection: dict[str, float] = {key: project(rows, key) for key in keys}
    projection["build_us_per_passage"] = rows[-1]["build_us_per_passage"]  # linear cost: the largest N's rate
    projection["build_hours"] = projection["build_us_per_passage"] * WIKIPEDIA / 1e6 / 3600
    projection["disk_gb"] = rows[-1]["disk_bytes_per_passage"] * WIKIPEDIA / 1e9
    return {"rows": rows, "projection": projection,
            "build_rss_ratio": rows[1]["build_peak_mb"] / rows[0]["build_peak_mb"],
            "build_anon_ratio": rows[1]["build_peak_anon_mb"] / rows[0]["build_peak_anon_mb"]}


def run(quick: bool = False, work: Path | None = None) -> dict[str, Any]:
    """Every row as one JSON-able dict; ``work`` (default: a temporary folder) holds the corpus and indexes."""
    import tempfile

    from odqa.bench.synthetic import write_tsv

    sizes = QUICK_SIZES if quick else SIZES
    parts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        corpus = write_tsv(folder / "corpus.tsv", sizes[-1])
        say(f"synthetic corpus: {sizes[-1]:,} passages in {time.perf_counter() - started:.0f} s "
            f"({corpus.stat().st_size / 1e9:.2f} GB of DPR TSV)")
        parts["BM25"] = _part(bm25_rows(corpus, sizes, folder))
        dense = dense_rows(corpus, sizes, folder, QUICK_DENSE if quick else DENSE)
        parts.update((name, _part(rows)) for name, rows in dense.items())
    for name, part in parts.items():
        projection = part["projection"]
        say(f"{name}: build peak RSS {sizes[1]:,} / {sizes[0]:,} passages {part['build_rss_ratio']:.2f}; projected at "
            f"{WIKIPEDIA:,}: build {projection['build_peak_mb']:,.0f} MB, {projection['build_hours']:.1f} h, "
            f"{projection['disk_gb']:.0f} GB on disk")
    return {"sizes": list(sizes), "questions": QUESTIONS, "k": K, "projection_n": WIKIPEDIA,
            "load_average": os.getloadavg()[0], "rows": parts}


def check(results: dict[str, Any], floors: dict[str, Any]) -> list[str]:
    """Failures: a build whose peak RSS (or peak anonymous memory) grew more than its pinned ratio from the first
    N to the second (100K to 400K passages)."""
    failures = []
    for floor, what in (("build_rss_ratio", "peak RSS"), ("build_anon_ratio", "peak anonymous memory")):
        for name, limit in floors.get(f"{floor}_max", {}).items():
            ratio = results["rows"][name][floor]
            if ratio > limit:
                failures.append(f"scale {name} build {what} {results['sizes'][1]:,} / {results['sizes'][0]:,} "
                                f"passages {ratio:.2f} > {limit}")
    return failures


if __name__ == "__main__":  # one step in a fresh process: TASK-JSON; prints its figures and memory as JSON
    task = json.loads(sys.argv[1])
    sampler = _AnonPeak()
    figures = _TASKS[task["task"]](task)
    print(json.dumps(figures | _memory(sampler)))
