"""The function behind ``odqa eval``: read one dataset's gold and predictions, compute its metrics."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from odqa.errors import ConfigError, InputError
from odqa.evaluate.retrieval import DEFAULT_KS
from odqa.records import Example

__all__ = ["DATASETS", "Dataset", "EvalConfig", "run_eval"]

Dataset = Literal["fid", "complex-tr", "timeqa", "hieradate", "jemhopqa", "hybridqa"]
DATASETS: tuple[str, ...] = get_args(Dataset)


@dataclass(frozen=True)
class EvalConfig:
    """What to evaluate: a dataset's gold file against a prediction file (or one FiD file's retrieval)."""

    dataset: Dataset
    predictions: str
    gold: str | None = None  # None only for --dataset fid: recall@k of the passages in ``predictions``
    ks: tuple[int, ...] = DEFAULT_KS
    official_split: bool = False  # Complex-TR: the official script's answer splitting and lowercasing
    use_file_flags: bool = False  # retrieval: trust the file's has_answer flags instead of recomputing
    ignore_missing: bool = False  # score only the questions that have a prediction
    sudachi_dict: str | None = None  # JEMHopQA: "full" or "core"; None = full when installed
    synonym_dic: str | None = None  # JEMHopQA: chikkarpy user dictionary (the dataset's user.dic)

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ConfigError(f"unknown dataset {self.dataset!r}; choose one of: {', '.join(DATASETS)}")
        if self.gold is None and self.dataset != "fid":
            raise ConfigError(f"--dataset {self.dataset} needs a GOLD file after the PRED file")
        if not self.ks or any(k < 1 for k in self.ks):
            raise ConfigError(f"k values must be positive integers (recall@k cut-offs such as "
                              f"{','.join(map(str, DEFAULT_KS))}), got {list(self.ks)}")
        if self.official_split and self.dataset != "complex-tr":
            raise ConfigError("--official-split applies to --dataset complex-tr only")
        if self.use_file_flags and not (self.dataset == "fid" and self.gold is None):
            raise ConfigError("--use-file-flags applies to retrieval recall (--dataset fid, one file) only")
        if (self.sudachi_dict is not None or self.synonym_dic is not None) and self.dataset != "jemhopqa":
            raise ConfigError("--sudachi-dict and --synonym-dic apply to --dataset jemhopqa only")
        if self.sudachi_dict not in (None, "full", "core"):
            raise ConfigError(f"sudachi dictionary {self.sudachi_dict!r} is not valid; choose full or core")


def _gold_examples(examples: Iterable[Example], path: str, dataset: str) -> list[Example]:
    golds = list(examples)
    if not golds:
        raise InputError(f"{path}: the gold file holds no questions; give the {dataset} gold file")
    return golds


def run_eval(config: EvalConfig) -> dict[str, object]:
    """The dataset's metrics, with the official script's key names and nesting."""
    from odqa.evaluate.predictions import read_predictions
    from odqa.io import read_fid, require_file

    if config.gold is None:
        from odqa.evaluate.retrieval import evaluate_retrieval

        require_file(config.predictions, "the FiD file (JSON Lines with ctxs) whose passages are scored")
        return evaluate_retrieval(read_fid(config.predictions), config.ks, use_flags=config.use_file_flags)
    gold, skip, name = config.gold, config.ignore_missing, config.dataset
    require_file(gold, f"the {name} gold file itself (GOLD, after PRED)")
    predictions = read_predictions(config.predictions)
    if config.dataset == "complex-tr":
        from odqa.datasets.complex_tr import load_complex_tr
        from odqa.evaluate.complex_tr import evaluate_complex_tr

        examples = _gold_examples(load_complex_tr(gold), gold, name)
        return evaluate_complex_tr(examples, predictions, official=config.official_split, ignore_missing=skip)
    if config.dataset == "hieradate":
        from odqa.datasets.hieradate import load_hieradate
        from odqa.evaluate.hieradate import evaluate_hieradate

        return evaluate_hieradate(_gold_examples(load_hieradate(gold), gold, name), predictions,
                                  ignore_missing=skip)
    if config.dataset == "jemhopqa":
        from odqa.datasets.jemhopqa import load_jemhopqa
        from odqa.evaluate.ja_similarity import TokenSimilarity
        from odqa.evaluate.jemhopqa import evaluate_jemhopqa

        examples = _gold_examples(load_jemhopqa(gold), gold, name)
        similarity = TokenSimilarity(dictionary=config.sudachi_dict, user_dic=config.synonym_dic)
        return evaluate_jemhopqa(examples, predictions, similarity=similarity, ignore_missing=skip)
    if config.dataset == "hybridqa":
        from odqa.evaluate.hybridqa import evaluate_hybridqa, read_reference

        reference = read_reference(gold)
        if not reference.answers:
            raise InputError(f"{gold}: the gold file holds no questions; give the hybridqa reference file")
        return evaluate_hybridqa(reference, predictions, ignore_missing=skip)
    from odqa.datasets.timeqa import load_timeqa
    from odqa.evaluate.timeqa import evaluate_answers

    examples = _gold_examples(load_timeqa(gold) if name == "timeqa" else read_fid(gold), gold, name)
    return evaluate_answers(examples, predictions, ignore_missing=skip)
