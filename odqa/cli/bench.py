"""``odqa bench refine|index|scale|crawl|hybridqa|reader|report|all``: throughput and quality benchmarks, JSON
results, PNG plots, floors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from odqa.cli._app import app, console, guarded

if TYPE_CHECKING:
    from odqa.bench import Suite

__all__ = ["bench_app"]

bench_app = typer.Typer(
    help="Benchmarks as ratios in one run on one machine: the naive loop against odqa, share of the matmul peak, "
         "recall@k, crawl against its bound, reader by n-context. JSON and PNG under --out; --check gates on "
         "bench/floors.json. Runs from a source checkout (git clone, pip install -e .): it reads the clone's bench/ "
         "(data, floors) and tests/data, which the installed package does not carry.",
    no_args_is_help=True)
app.add_typer(bench_app, name="bench")

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for bench.json and the PNG plots.")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="Smaller workloads (a few minutes on 2 cores), for CI.")]
CheckOpt = Annotated[bool, typer.Option("--check", help="Exit 1 when a figure is below its floor in "
                                                        "bench/floors.json.")]
DEFAULT_OUT = Path("bench/results")


def _run(suites: list[Suite], out: Path, quick: bool, check: bool, reader: dict[str, str] | None = None) -> None:
    from rich.table import Table

    from odqa.bench import run_bench

    run = run_bench(suites, out, quick=quick, reader=reader)
    table = Table(title=f"odqa bench {' '.join(suites)}{' (quick)' if quick else ''}")
    table.add_column("figure")
    table.add_column("value", justify="right")
    refine = run.results.get("refine")
    if refine is not None:
        throughput = refine["throughput"]
        for name in ("unique", "timeqa"):
            row = throughput[name]
            table.add_row(f"{name}: speed-up over the naive loop ({row['passages']:,} passages, "
                          f"{row['distinct']:,} distinct)", f"{row['speedup']:.1f}x")
            table.add_row(f"{name}: top-10 overlap with fp32 naive", f"{row['top10_overlap']:.4f}")
        timeqa = throughput["timeqa"]
        table.add_row("timeqa: warm cache / cold embeddings with the model converted before",
                      f"{timeqa['warm_speedup']:.1f}x / {timeqa['converted_speedup']:.1f}x")
        for fmt, share in throughput["share_of_peak"].items():
            table.add_row(f"encoder share of the {fmt} matmul peak", f"{share:.0%}")
    for name, seconds in run.results.get("seconds", {}).items():
        table.add_row(f"{name} time", f"{seconds:.0f} s")
    for path in run.files:
        table.add_row("wrote", str(path))
    console.print(table)
    for failure in run.failures:
        console.print(f"[red]below floor[/]: {failure}", highlight=False)
    if check:
        console.print("floors: " + ("all met" if not run.failures else f"{len(run.failures)} FAILED"))
        if run.failures:
            raise typer.Exit(1)


@bench_app.command("refine")
@guarded
def refine_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Refinement: naive loop vs odqa cold and warm (unique and TimeQA-shaped work), formats, recall@k curves."""
    _run(["refine"], out, quick, check)


@bench_app.command("index")
@guarded
def index_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Corpus indexes: FAISS and BM25 build and search speed, recall, peak memory as the corpus grows."""
    _run(["index"], out, quick, check)


@bench_app.command("scale")
@guarded
def scale_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Wikipedia scale: BM25 and dense (from vectors) build and search on a synthetic corpus of 100K and 400K
    passages (--quick) or up to 5M, peak memory of each step in a fresh process, projected to 21M."""
    _run(["scale"], out, quick, check)


@bench_app.command("crawl")
@guarded
def crawl_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Crawling: fetch pages/s against the concurrency / latency bound, extraction pages/s."""
    _run(["crawl"], out, quick, check)


@bench_app.command("hybridqa")
@guarded
def hybridqa_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """HybridQA: answer recall@1/5/10 of every table scorer on the shipped dev questions, cell and passage apart."""
    _run(["hybridqa"], out, quick, check)


@bench_app.command("reader")
@guarded
def reader_command(
    out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False,
    size: Annotated[str, typer.Option(help="Random-weight T5 shape: tiny, small (t5-small's) or base.")] = "tiny",
    device: Annotated[str, typer.Option(help="cpu, cuda, ...")] = "cpu",
    precision: Annotated[str, typer.Option(help="fp32, bf16 or fp16.")] = "fp32",
) -> None:
    """The FiD reader: questions/s and peak memory by n-context, each in a fresh process (no floors)."""
    _run(["reader"], out, quick, check, reader={"size": size, "device": device, "precision": precision})


@bench_app.command("report")
@guarded
def report_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """odqa report at scale: page size, build time, time to a usable page in headless Chromium (no floors)."""
    _run(["report"], out, quick, check)


@bench_app.command("train")
@guarded
def train_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Training: recall@1/5/20 held out by article, MiniLM against the trained retriever and reranker, with the
    training time (full: TimeQA and HybridQA; --quick: a short TimeQA run)."""
    _run(["train"], out, quick, check)


@bench_app.command("all")
@guarded
def all_command(out: OutOpt = DEFAULT_OUT, quick: QuickOpt = False, check: CheckOpt = False) -> None:
    """Every suite in one run (report only where headless Chromium is installed)."""
    from odqa.bench import SUITES
    from odqa.bench.browser import missing

    reason = missing()
    if reason:
        console.print(f"skipping the report suite: {reason}", highlight=False)
    _run([name for name in SUITES if name != "report" or not reason], out, quick, check)
