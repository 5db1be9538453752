"""``odqa generate``: data from the papers' recipes (HieraDate probes, Complex-TR pseudo-instruction data)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from odqa.cli._app import app, console, guarded
from odqa.config import write_resolved
from odqa.generate.hieradate import HieraDateConfig, hieradate_probes, read_date_pairs
from odqa.generate.pseudo import PseudoConfig, pseudo_instruction_data, read_temporal_facts
from odqa.io import write_jsonl

__all__ = ["generate_app"]

generate_app = typer.Typer(help="Generate probing and training data from the papers' recipes.",
                           no_args_is_help=True)
app.add_typer(generate_app, name="generate")

FactsArg = Annotated[Path, typer.Argument(help="Input facts, JSON Lines (schema in docs/datasets.md).")]
OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Output JSON Lines file.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed: the same seed gives the same output.")]


@generate_app.command("hieradate")
@guarded
def hieradate(
    facts: FactsArg,
    out: OutOpt,
    year_only: Annotated[bool, typer.Option("--year-only", help="Reasoning with years only.")] = False,
    seed: SeedOpt = 0,
) -> None:
    """HieraDate probing questions (paper 000, Table 1) from two people's dates of birth and death."""
    config = HieraDateConfig(year_only=year_only, seed=seed)
    counts: Counter[str] = Counter()
    records = hieradate_probes(read_date_pairs(facts), config)
    written = write_jsonl(out, _counting(records, counts, lambda r: str(r["type"])))
    write_resolved(config, out)
    _summary("hieradate", out, written, counts, "question type")


@generate_app.command("pseudo")
@guarded
def pseudo(
    facts: FactsArg,
    out: OutOpt,
    seed: SeedOpt = 0,
    n: Annotated[int | None, typer.Option("--n", help="Examples to keep (default: one pass).")] = None,
    resample: Annotated[bool, typer.Option(help="Temporal resampling, P_i = 1 - n_i / max n.")] = True,
) -> None:
    """Complex-TR pseudo-instruction data (paper 004, section 3.1) from temporal facts."""
    config = PseudoConfig(seed=seed, n=n, resample=resample)
    counts: Counter[str] = Counter()
    records = pseudo_instruction_data(read_temporal_facts(facts), config)
    written = write_jsonl(out, _counting(records, counts, lambda r: str(r["id"]).split("_", 1)[0]))
    write_resolved(config, out)
    _summary("pseudo", out, written, counts, "level")


def _counting(
    records: Iterable[dict[str, Any]], counts: Counter[str], key: Callable[[dict[str, Any]], str]
) -> Iterator[dict[str, Any]]:
    """Pass ``records`` through, counting them by ``key`` for the summary table."""
    for record in records:
        counts[key(record)] += 1
        yield record


def _summary(name: str, out: Path, written: int, counts: Counter[str], label: str) -> None:
    """Print the closing summary table on stderr."""
    table = Table(title=f"odqa generate {name}")
    table.add_column(label)
    table.add_column("records", justify="right")
    for value, count in sorted(counts.items()):
        table.add_row(value, str(count))
    table.add_row("total", str(written), style="bold")
    console.print(table)
    console.print(f"wrote {out} and {out.name}.config.json", highlight=False)
