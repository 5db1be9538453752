"""``odqa eval``: a dataset's metrics as its paper and official script define them, as a table and as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from odqa.cli._app import app, console, guarded
from odqa.config import write_resolved
from odqa.errors import ConfigError
from odqa.evaluate.report import notes, to_table, write_json
from odqa.evaluate.retrieval import DEFAULT_KS
from odqa.evaluate.run import DATASETS, EvalConfig, run_eval

__all__ = ["eval_command"]


PredArg = Annotated[Path, typer.Argument(
    help="Predictions: odqa JSON Lines {id, prediction}, {id: answer}, FiD id<TAB>answer lines, Atlas JSON Lines "
         "(generation), or the dataset's official format; "
         "for --dataset fid without GOLD, a FiD file whose passages are scored.")]
GoldArg = Annotated[Path | None, typer.Argument(help="The dataset's gold file (none for fid recall@k).")]
DatasetOpt = Annotated[str, typer.Option("--dataset", "-d", help=f"One of: {', '.join(DATASETS)}.")]
JsonOpt = Annotated[Path | None, typer.Option("--json", help="Also write the metrics as JSON here.")]
OfficialOpt = Annotated[bool, typer.Option(
    "--official-split", help="Complex-TR: split and lowercase answers as the official script does.")]
KOpt = Annotated[str, typer.Option("--k", help="Cut-offs for retrieval recall@k: comma-separated positive integers.")]
FlagsOpt = Annotated[bool, typer.Option(
    "--use-file-flags", help="Retrieval: take the file's has_answer flags instead of recomputing them.")]
MissingOpt = Annotated[bool, typer.Option(
    "--ignore-missing", help="Score only the questions that have a prediction.")]
SudachiOpt = Annotated[str | None, typer.Option(
    "--sudachi-dict", help="JEMHopQA: SudachiPy dictionary, full or core (default: full if installed).")]
SynonymOpt = Annotated[Path | None, typer.Option(
    "--synonym-dic", help="JEMHopQA: chikkarpy user dictionary (the dataset's user.dic).")]


def _parse_ks(text: str) -> tuple[int, ...]:
    valid = f"--k must be comma-separated positive integers (recall@k cut-offs, e.g. {','.join(map(str, DEFAULT_KS))})"
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise ConfigError(f"{valid}, got {text!r}") from exc
    if not ks or any(k < 1 for k in ks):
        raise ConfigError(f"{valid}, got {text!r}")
    return ks


@app.command("eval")
@guarded
def eval_command(
    pred: PredArg,
    gold: GoldArg = None,
    dataset: DatasetOpt = "fid",
    json_out: JsonOpt = None,
    official_split: OfficialOpt = False,
    k: KOpt = "1,5,10,20,100",
    use_file_flags: FlagsOpt = False,
    ignore_missing: MissingOpt = False,
    sudachi_dict: SudachiOpt = None,
    synonym_dic: SynonymOpt = None,
) -> None:
    """Score predictions against a gold file (or a FiD file's passages) with the dataset's own metrics."""
    config = EvalConfig(
        dataset=dataset,  # type: ignore[arg-type]  # validated by EvalConfig
        predictions=str(pred),
        gold=None if gold is None else str(gold),
        ks=_parse_ks(k),
        official_split=official_split,
        use_file_flags=use_file_flags,
        ignore_missing=ignore_missing,
        sudachi_dict=sudachi_dict,
        synonym_dic=None if synonym_dic is None else str(synonym_dic),
    )
    result = run_eval(config)
    what = "retrieval" if gold is None else dataset
    digits = 4 if dataset == "jemhopqa" or gold is None else 2  # fractions; the others are percentages
    out = Console()
    out.print(to_table(result, title=f"odqa eval: {what}", digits=digits))
    for line in notes(result):
        out.print(f"note: {line}", highlight=False, soft_wrap=True)
    if json_out is not None:
        write_json(json_out, result)
        write_resolved(config, json_out)
        console.print(f"wrote {json_out}", highlight=False)
