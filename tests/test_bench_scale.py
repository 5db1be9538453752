"""``odqa bench scale``: the synthetic corpus is what it claims (DPR-shaped, deterministic, a vocabulary that keeps
growing), each step runs in a fresh process that reports its own memory, projections and floors."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import numpy as np
import pytest

from odqa.bench import scale, synthetic
from odqa.index.source import read_passages
from odqa.retrieve.tokenize import tokenize


def test_passages_are_dpr_shaped_deterministic_and_each_corpus_a_prefix_of_larger_ones() -> None:
    small = list(synthetic.passages(1_200))
    again = list(synthetic.passages(3_000))  # a chunk of 1,000 passages is drawn at a time
    assert again[:1_200] == small and len({p.id for p in again}) == 3_000
    assert all(len(p.text.split()) == synthetic.WORDS for p in again)
    assert len({p.title for p in again}) > 3_000 / synthetic.ARTICLE * 0.9  # a title per made-up article
    assert list(synthetic.passages(50, seed=1)) != small[:50]


def test_the_vocabulary_keeps_growing_as_heaps_law_says() -> None:
    """Distinct BM25 terms after N and 4N passages: a real corpus' grow about 4^0.5-0.7 = 2.0-2.6x; a corpus drawn
    from TimeQA's words alone would level off (TimeQA has 29,396 terms)."""
    seen: set[str] = set()
    counts = []
    for number, passage in enumerate(synthetic.passages(4_000), start=1):
        seen.update(tokenize(f"{passage.title} {passage.text}"))
        if number in (1_000, 4_000):
            counts.append(len(seen))
    growth = counts[1] / counts[0]
    assert 1.8 < growth < 3.0, counts
    assert counts[1] > 29_396  # more than all of TimeQA, from fewer passages


def test_clustered_vectors_have_neighbourhood_structure_below_the_cluster_level(tmp_path: Path) -> None:
    paths = synthetic.clustered_vectors(tmp_path / "v", 3_000, 64, clusters=8, shard=1_000)
    assert [p.name for p in paths] == ["00000.npy", "00001.npy", "00002.npy"]
    vectors = np.concatenate([np.load(p) for p in paths])
    assert vectors.shape == (3_000, 64) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    (shorter,) = synthetic.clustered_vectors(tmp_path / "s", 1_500, 64, clusters=8, shard=2_000)
    np.testing.assert_array_equal(np.load(shorter), vectors[:1_500])  # a prefix, whatever the shard size
    (query,) = synthetic.clustered_vectors(tmp_path / "q", 20, 64, clusters=8, queries_of=1_000)
    similar = np.sort(np.load(query) @ vectors.T, axis=1)[:, ::-1]
    # near neighbours, then ever farther ones within the ~375 cluster-mates (isotropic noise around the centres would
    # make the 1st and the 100th about equally near)
    assert similar[:, 0].min() > 0.35 and (similar[:, 0] - similar[:, 99]).min() > 0.08, similar[:, [0, 9, 99]]


def test_projection_is_the_line_through_the_two_largest_sizes() -> None:
    rows = [{"n": 100, "x": 50.0}, {"n": 200, "x": 60.0}, {"n": 400, "x": 70.0}]
    assert scale.project(rows, "x", 800) == pytest.approx(90.0)


def test_build_memory_floors_fail_above_the_ratio_and_pass_at_it() -> None:
    rows = {"BM25": {"build_rss_ratio": 1.3, "build_anon_ratio": 2.0},
            "IVF-PQ": {"build_rss_ratio": 1.8, "build_anon_ratio": 1.31}}
    results = {"sizes": [100, 400], "rows": rows}
    assert scale.check(results, {"build_rss_ratio_max": {"BM25": 1.3}}) == []
    failures = scale.check(results, {"build_rss_ratio_max": {"BM25": 1.3}, "build_anon_ratio_max": {"IVF-PQ": 1.3}})
    assert failures == ["scale IVF-PQ build peak anonymous memory 400 / 100 passages 1.31 > 1.3"]
    assert scale.check(results, {"build_rss_ratio_max": {"IVF-PQ": 1.3}})[0].endswith("peak RSS 400 / 100 passages "
                                                                                     "1.80 > 1.3")


def test_bm25_rows_build_and_search_in_fresh_processes(tmp_path: Path) -> None:
    corpus = synthetic.write_tsv(tmp_path / "corpus.tsv", 600)
    assert [p.id for p in islice(read_passages(corpus), 3)] == ["syn-0", "syn-1", "syn-2"]
    rows = scale.bm25_rows(corpus, (300,), tmp_path)  # the first 300 passages of the file
    assert [r["n"] for r in rows] == [300]
    for row in rows:
        assert 30 < row["build_peak_mb"] < 2_000 and 30 < row["search_peak_mb"] < 2_000
        assert row["search_anon_mb"] <= row["search_peak_anon_mb"] <= row["search_peak_mb"]
        assert 0 < row["build_peak_anon_mb"] <= row["build_peak_mb"]
        assert row["disk_bytes_per_passage"] > row["index_bytes_per_passage"] > 0
        assert row["search_qps"] > 0 and row["vocabulary"] > 1_000
    assert not list(tmp_path.glob("bm25-*/**/*.npy"))  # measured indexes are removed


def test_plot_draws_measured_and_projected_memory_and_time(tmp_path: Path) -> None:
    from odqa.bench.plots import scale_curves

    rows = [{"n": n, "build_peak_mb": 300.0 + n / 1e5, "build_us_per_passage": 400.0 + n / 1e5,
             "build_peak_anon_mb": 250.0, "search_peak_mb": 200.0, "search_peak_anon_mb": 100.0}
            for n in (100_000, 400_000)]
    part = scale._part([dict(r, disk_bytes_per_passage=1600.0) for r in rows])
    assert part["projection"]["build_peak_mb"] == pytest.approx(300 + 210.15324)
    assert part["projection"]["build_hours"] == pytest.approx(404e-6 * scale.WIKIPEDIA / 3600)  # the last rate
    path = scale_curves({"projection_n": scale.WIKIPEDIA, "rows": {"BM25": part}}, tmp_path / "scale.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_dense_rows_build_from_imported_vectors_and_measure_recall(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale, "VECTOR_SHARD", 500)
    monkeypatch.setattr(scale, "DIMENSION", 32)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # FAISS' OpenMP threads spin for seconds on a busy machine
    corpus = synthetic.write_tsv(tmp_path / "corpus.tsv", 1_000)
    factories = {"Flat": ("Flat", None, 500, 0), "IVF-PQ": ("IVF8,PQ8x4", "nprobe=8", 500, 8 * 64)}
    rows = scale.dense_rows(corpus, (500, 1_000), tmp_path, factories)  # neither is built at 1,000
    assert [r["n"] for r in rows["Flat"]] == [500] and [r["n"] for r in rows["IVF-PQ"]] == [500]
    (flat,), (ivf,) = rows["Flat"], rows["IVF-PQ"]
    assert flat["recall10"] == 1.0  # exact search finds the exact top-10
    assert 0.2 < ivf["recall10"] <= 1.0 and ivf["search_params"] == "nprobe=8"
    assert ivf["index_bytes_per_passage"] < flat["index_bytes_per_passage"]  # 4-byte codes against 128 bytes
    assert all(r["build_peak_mb"] > 30 and r["search_qps"] > 0 for r in (flat, ivf))
    assert not list(tmp_path.glob("dense-*"))
