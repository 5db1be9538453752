"""The data behind ``odqa report``: every run's passages per question with answer spans, the rank of the first
answer-bearing passage, predictions marked right or wrong, and each run's summary, all computed with odqa's own
metrics (:mod:`odqa.evaluate`), so the page shows what ``odqa eval`` reports.

The result is one JSON-ready dict (format ``odqa-report/1``, see docs/report.md): the HTML page embeds it and
``--json`` writes it. Passages are stored once in a table and referred to by index; answer spans are character
offsets (code points) into a passage's text, one list per question and passage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from odqa.errors import ConfigError, FormatError, InputError
from odqa.evaluate.answers import answer_spans, exact_match, recall_at_k, token_f1
from odqa.evaluate.retrieval import DEFAULT_KS
from odqa.records import Example

__all__ = ["REPORT_FORMAT", "RunSpec", "build_report_data"]

REPORT_FORMAT = "odqa-report/1"


@dataclass(frozen=True)
class RunSpec:
    """One run to show: a FiD/Atlas JSON Lines file, its name on the page, and optionally its predictions."""

    path: str
    name: str | None = None  # None: the file name without its extensions
    predictions: str | None = None  # a prediction file `odqa eval` reads (the run file itself for Atlas output)


def _default_name(path: str) -> str:
    name = Path(path).name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name or path


def _names(runs: Sequence[RunSpec]) -> list[str]:
    names = [run.name or _default_name(run.path) for run in runs]
    if len(set(names)) < len(names):
        raise ConfigError(f"two runs share the name {next(n for n in names if names.count(n) > 1)!r}; "
                          "give each run its own name with --name (one per run, in order)")
    return names


def _read_run(path: str) -> dict[str, Example]:
    from odqa.io import read_fid, require_file

    require_file(path, "a refine, retrieve or read output (FiD or Atlas JSON Lines)")
    examples: dict[str, Example] = {}
    for example in read_fid(path):
        if example.id in examples:
            raise FormatError(f"question id {example.id!r} occurs twice; a run holds each question once", path=path)
        examples[example.id] = example
    if not examples:
        raise InputError(f"{path}: the run holds no questions; give a refine, retrieve or read output")
    return examples


def _read_predictions(path: str) -> dict[str, str]:
    from odqa.evaluate._common import answer_string
    from odqa.evaluate.predictions import read_predictions

    return {qid: answer_string(qid, value) for qid, value in read_predictions(path).items()}


def _score(value: object) -> float | None:
    """A passage's score to 5 significant digits; None where it has none, or a non-finite one (NaN, Infinity: no
    JSON parser in a browser reads them)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(f"{value:.5g}")
    return None


class _Passages:
    """The passage table: each distinct passage once as ``[id, title, text, url]``, title and url as indices into
    a string table (they repeat across an article's passages), text kept only where the page shows it."""

    def __init__(self) -> None:
        self.index: dict[tuple[str, str, str, str | None], int] = {}
        self.strings: dict[str, int] = {}
        self.rows: list[list[Any]] = []
        self.shown: set[int] = set()

    def _string(self, value: str) -> int:
        return self.strings.setdefault(value, len(self.strings))

    def add(self, doc_id: str, title: str, text: str, url: str | None) -> int:
        key = (doc_id, title, text, url)
        pid = self.index.get(key)
        if pid is None:
            pid = self.index[key] = len(self.rows)
            self.rows.append([doc_id, self._string(title), text, None if url is None else self._string(url)])
        return pid

    def table(self) -> list[list[Any]]:
        return [row if pid in self.shown else [row[0], row[1], None, row[3]] for pid, row in enumerate(self.rows)]


def build_report_data(
    runs: Sequence[RunSpec], gold: str | None = None, *, ks: Sequence[int] = DEFAULT_KS, texts: int = 10
) -> dict[str, Any]:
    """The report of ``runs`` (format ``odqa-report/1``).

    Questions and gold answers come from ``gold`` (any file ``odqa refine`` reads) when given, else from the runs
    (the first run holding a question gives its answers). has_answer is recomputed from each passage's text
    against the gold answers, as ``odqa eval --dataset fid`` does; a question absent from a run counts as a miss
    there. Passage text is kept for the first ``texts`` passages of each run and question and for the first
    answer-bearing one; the others keep title, score and whether they hold an answer.
    """
    from odqa.evaluate.timeqa import evaluate_answers

    if not runs:
        raise ConfigError("no run given; pass one or more refine, retrieve or read outputs (FiD JSON Lines)")
    if texts < 0:
        raise ConfigError(f"--texts must be 0 or more (passages per question whose text is embedded), got {texts}")
    if not ks or any(k < 1 for k in ks):
        raise ConfigError(f"k values must be positive integers, got {list(ks)}")
    names = _names(runs)
    contents = [_read_run(run.path) for run in runs]
    predictions = [_read_predictions(run.predictions) if run.predictions else None for run in runs]
    questions = _questions(gold, contents)

    passages = _Passages()
    rows: list[dict[str, Any]] = []
    flags: list[list[list[bool]]] = [[] for _ in runs]  # per run, one has_answer list per answerable question
    for example in questions:
        spans: dict[int, list[tuple[int, int]]] = {}
        per_run: list[dict[str, Any] | None] = []
        for r, content in enumerate(contents):
            found = content.get(example.id)
            entry = _run_entry(example, found, passages, spans, texts)
            pred = predictions[r]
            if entry is not None and pred is not None and example.id in pred:
                gold_answers = list(example.answers) or [""]  # unanswerable: only "" is right (evaluate_answers)
                entry["pred"] = pred[example.id]
                entry["em"] = exact_match(pred[example.id], gold_answers)
                entry["f1"] = round(token_f1(pred[example.id], gold_answers), 4)
            per_run.append(entry)
            if example.answers:
                pids = entry["p"] if entry is not None else []
                flags[r].append([bool(spans.get(pid)) for pid in pids])
        rows.append({
            "id": example.id, "question": example.question, "answers": list(example.answers),
            "spans": {str(pid): [list(span) for span in where] for pid, where in spans.items() if where},
            "runs": per_run,
        })

    run_rows = []
    for r, run in enumerate(runs):
        depth = max((len(row["runs"][r]["p"]) for row in rows if row["runs"][r] is not None), default=0)
        summary: dict[str, Any] = {
            "name": names[r], "path": run.path, "predictions": run.predictions,
            "questions": sum(row["runs"][r] is not None for row in rows),
            "missing": sum(row["runs"][r] is None for row in rows),
            "answerable": len(flags[r]), "depth": depth,
            "recall": {str(k): v for k, v in recall_at_k(flags[r], sorted(set(ks))).items()},
            "curve": list(recall_at_k(flags[r], range(1, depth + 1)).values()) if flags[r] else [],
        }
        pred = predictions[r]
        if pred is not None:
            scored = [e for e in questions if e.id in pred and e.id in contents[r]]
            result = evaluate_answers(scored, pred, ignore_missing=True)
            summary |= {"predicted": len(scored), "exact": result["exact"], "f1": result["f1"]}
        run_rows.append(summary)
    return {
        "format": REPORT_FORMAT, "gold": gold, "ks": sorted(set(ks)), "texts": texts,
        "runs": run_rows, "questions": rows, "passages": passages.table(), "strings": list(passages.strings),
    }


def _questions(gold: str | None, contents: Sequence[Mapping[str, Example]]) -> list[Example]:
    """The questions to show, in order: the gold file's, or every run's (first run first)."""
    if gold is not None:
        from odqa.inputs import load_examples

        examples = list(load_examples(gold))
        ids = [e.id for e in examples]
        if len(set(ids)) < len(ids):
            raise FormatError(f"question id {next(i for i in ids if ids.count(i) > 1)!r} occurs twice in the gold "
                              "file", path=gold)
        if not any(e.id in content for e in examples for content in contents):
            raise InputError(f"no run holds any question of {gold} (ids such as {ids[0]!r}); check that the runs "
                             "were made from this gold file")
        return examples
    merged: dict[str, Example] = {}
    for content in contents:
        for qid, example in content.items():
            merged.setdefault(qid, example)
    return list(merged.values())


def _run_entry(
    example: Example, found: Example | None, passages: _Passages, spans: dict[int, list[tuple[int, int]]],
    texts: int,
) -> dict[str, Any] | None:
    """One run's passages for one question: passage indices, scores, rank of the first answer (1-based)."""
    if found is None:
        return None
    pids: list[int] = []
    scores: list[float | None] = []
    first: int | None = None
    for rank, doc in enumerate(found.ctxs or (), start=1):
        pid = passages.add(doc.id, doc.title, doc.text, doc.url)
        if pid not in spans:
            spans[pid] = answer_spans(doc.text, example.answers)
        if first is None and spans[pid]:
            first = rank
            passages.shown.add(pid)
        if rank <= texts:
            passages.shown.add(pid)
        pids.append(pid)
        scores.append(_score(doc.meta.get("score")))
    entry: dict[str, Any] = {"first": first, "p": pids, "s": scores}
    if any(isinstance(doc.meta.get("score"), float) and not math.isfinite(doc.meta["score"])
           for doc in found.ctxs or ()):
        entry["nonfinite"] = True  # the page shows its null scores as such
    return entry
