"""``odqa bench``: the workloads are what they claim, the floors gate, ``--check`` fails on a regression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from odqa.bench import SUITES, BenchRun, crawl, hybridqa, quality, refine
from odqa.chunk import chunk
from odqa.records import Document, Example

runner = CliRunner()


def _examples(articles: int, per_article: int) -> list[Example]:
    docs = [Document(f"a{i}", f"Article {i}", " ".join(f"w{i}x{j}" for j in range(250))) for i in range(articles)]
    return [Example(id=f"q{i}-{j}", question=f"question {j} on {i}", answers=("x",), ctxs=(doc,))
            for i, doc in enumerate(docs) for j in range(per_article)]


def test_the_unique_workload_never_repeats_a_passage() -> None:
    examples = _examples(12, 3)
    chosen = refine.unique_workload(examples, 10)
    texts = [p.text for ex in chosen for p in chunk(ex.ctxs or ())]
    assert len(chosen) == 10 and len(texts) == len(set(texts)) == 30


def test_the_timeqa_workload_gives_each_question_its_article_and_ten_of_the_same_forty() -> None:
    examples = _examples(60, 2)
    workload = refine.timeqa_workload(examples)
    articles = {d.id for ex in workload for d in ex.ctxs or ()}
    assert len(workload) == 80 and len(articles) == 40
    for ex in workload:
        ids = [d.id for d in ex.ctxs or ()]
        assert len(ids) == len(set(ids)) == 11 and ids[0] == ex.id.split("-")[0].replace("q", "a")
    assert workload == refine.timeqa_workload(examples)  # seeded


def test_overlap_of_top_k_sets() -> None:
    assert refine.overlap([["a", "b"], ["c", "d"]], [["b", "a"], ["c", "e"]]) == pytest.approx(0.75)


def _throughput(unique: float, timeqa: float, agree: float, warm: float = 200.0) -> dict[str, Any]:
    return {"unique": {"speedup": unique, "top10_overlap": agree},
            "timeqa": {"speedup": timeqa, "converted_speedup": timeqa * 1.5, "warm_speedup": warm,
                       "top10_overlap": 1},
            "share_of_peak": {"fp32": 0.5, "bf16": 0.4}}


def test_throughput_floors_fail_below_and_pass_at_or_above() -> None:
    floors = {"_note": "x", "unique_speedup": 3.0, "timeqa_speedup": 50.0, "timeqa_converted_speedup": 75.0,
              "timeqa_warm_speedup": 150.0, "top10_overlap": 0.99, "share_of_peak": 0.3}
    assert refine.check(_throughput(3.0, 50.0, 0.99), floors) == []
    failures = refine.check(_throughput(2.9, 60.0, 0.98, warm=80.0), floors)
    assert [f.split(":")[0] for f in failures] == ["refine throughput unique_speedup",
                                                  "refine throughput timeqa_warm_speedup",
                                                  "refine throughput top10_overlap"]


def test_a_cpu_without_bf16_is_held_to_its_own_floors_where_they_are_given() -> None:
    floors = {"unique_speedup": 1.2, "timeqa_speedup": 20.0, "timeqa_warm_speedup": 150.0,
              "without_bf16": {"unique_speedup": 1.0, "timeqa_speedup": 10.0}}
    fp32_run = {**_throughput(1.1, 12.0, 1.0, warm=140.0), "cpu_bf16": False}
    assert [f.split(":")[0] for f in refine.check(fp32_run, floors)] == ["refine throughput timeqa_warm_speedup"]
    bf16_run = {**fp32_run, "cpu_bf16": True}
    assert [f.split(":")[0] for f in refine.check(bf16_run, floors)] == [
        "refine throughput unique_speedup", "refine throughput timeqa_speedup", "refine throughput timeqa_warm_speedup"]


def test_quality_floors_and_hybrid_must_beat_both_parts() -> None:
    row = {"all": {5: 0.9}, "half1": {5: 0.9}}
    results = {"results": {"own": {"bm25": {"all": {5: 0.8}}, "dense": {"all": {5: 0.91}}, "hybrid (default)": row}}}
    failures = quality.check(results, {"own|hybrid (default)|half1|5": 0.95})
    assert len(failures) == 2 and "0.900 < floor 0.950" in failures[0] and "does not beat" in failures[1]


def test_crawl_floor_applies_to_the_politeness_limited_rows() -> None:
    rows = [{"concurrency": 32, "per_host": 8, "hosts": 4, "delay_s": 0.0, "share_of_bound": 0.2},  # machine-bound
            {"concurrency": 32, "per_host": 2, "hosts": 4, "delay_s": 0.0, "share_of_bound": 0.9}]
    assert crawl.check({"fetch": rows}, {"politeness_share_of_bound": 0.8}) == []
    assert crawl.check({"fetch": rows}, {"politeness_share_of_bound": 0.95})


@pytest.mark.parametrize(("failures", "code"), [([], 0), (["refine throughput unique_speedup: 1 < floor 3"], 1)])
def test_check_exits_non_zero_on_a_regression(failures: list[str], code: int, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.bench
    from odqa.cli import app

    def fake(suites: Any, out: Any, *, quick: bool, reader: Any = None) -> BenchRun:
        assert list(suites) == ["crawl"] and quick
        return BenchRun({"seconds": {"crawl": 1.0}}, [tmp_path / "bench-quick.json"], list(failures))

    monkeypatch.setattr(odqa.bench, "run_bench", fake)
    result = runner.invoke(app, ["bench", "crawl", "--quick", "--check", "--out", str(tmp_path)])
    assert result.exit_code == code, result.output
    assert ("FAILED" in result.output) == bool(failures)


def test_hybridqa_floors_and_the_default_must_reach_bm25_and_hybrid() -> None:
    def row(r1: float, r5: float) -> dict[str, float]:
        return {"recall@1": r1, "recall@5": r5, "recall@10": 1.0}

    held = {"table-hybrid": row(0.5, 0.8), "bm25": row(0.4, 0.7), "hybrid": row(0.45, 0.75)}
    assert hybridqa.check({"results": {"heldout": {"table-hybrid": row(0.5, 0.8), "bm25": row(0.4, 0.7)}}}, {}) == []
    assert hybridqa.check({"results": {"heldout": held}}, {"recall@1": 0.5}) == []
    failures = hybridqa.check({"results": {"heldout": held | {"bm25": row(0.6, 0.7)}}}, {"recall@5": 0.9})
    assert len(failures) == 2 and "0.800 < floor 0.9" in failures[0] and "recall@1 0.500 < bm25 0.600" in failures[1]


@pytest.mark.parametrize("browser", [None, "chromium not found"])
def test_all_runs_every_suite_and_the_report_only_with_a_browser(browser: str | None, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.bench
    import odqa.bench.browser
    from odqa.cli import app

    ran: list[str] = []

    def fake(suites: Any, out: Any, *, quick: bool, reader: Any = None) -> BenchRun:
        ran.extend(suites)
        return BenchRun({}, [], [])

    monkeypatch.setattr(odqa.bench, "run_bench", fake)
    monkeypatch.setattr(odqa.bench.browser, "missing", lambda: browser)
    result = runner.invoke(app, ["bench", "all", "--quick", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert ran == [s for s in SUITES if s != "report" or browser is None]
    assert ("skipping the report suite" in result.output) == (browser is not None)


def test_no_benchmark_is_a_loose_script() -> None:
    bench = Path(__file__).resolve().parents[1] / "bench"
    assert not list(bench.glob("*.py")), "benchmarks live in odqa/bench and run as `odqa bench SUITE`"
