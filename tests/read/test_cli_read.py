"""``odqa train-reader``, ``odqa read`` and ``odqa eval`` end to end on a tiny file, and the shipped configs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from reader_tasks import copy_task, write_fid
from typer.testing import CliRunner

from odqa.cli import app
from odqa.config import load_config
from odqa.read.config import ReadConfig, TrainReaderConfig
from odqa.records import Example

runner = CliRunner()
CONFIGS = Path(__file__).parents[2] / "configs"


def _odqa(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "300"})
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def _complex_tr(path: Path, examples: list[Example]) -> Path:
    """The same questions as Complex-TR gold records (ids in its L2_Q..._P..._N form)."""
    with path.open("w", encoding="utf-8") as fh:
        for i, ex in enumerate(examples):
            fh.write(json.dumps({"id": f"L2_Q{i}_P1_{i}", "question": ex.question,
                                 "text_answers": {"text": list(ex.answers)}}) + "\n")
    return path


def test_train_reader_then_read_then_eval(tmp_path: Path, tiny_reader_dir: Path) -> None:
    examples = copy_task(8, two_answers=3)
    examples = [Example(f"L2_Q{i}_P1_{i}", ex.question, ex.answers, ctxs=ex.ctxs)
                for i, ex in enumerate(examples)]
    train = write_fid(tmp_path / "train.jsonl", examples)
    complex_tr = ["--dataset", "complex-tr", "--joiner", " and "]  # a set of answers (the word tokenizer lacks $)
    code, _, err = _odqa("train-reader", train, *complex_tr, "--model", tiny_reader_dir, "--out", tmp_path / "run",
                         "--dev", train, "--epochs", "1000", "--steps", "100", "--lr", "3e-3", "--warmup", "10",
                         "--n-context", "4",
                         "--max-length", "24", "--answer-length", "8", "--batch-size", "8",
                         "--eval-every", "50", "--checkpoint-every", "50", "--device", "cpu")
    assert code == 0, err
    assert "step 100: dev exact match 1.000" in err and "best dev exact match (step)" in err
    assert (tmp_path / "run" / "best" / "dev_score.json").is_file()

    pred = tmp_path / "pred.jsonl"
    assert re.search(r"epochs\W+100\.00 \(8 questions\)", err)  # 8 questions, a batch of 8: 100 passes
    code, _, err = _odqa("read", train, *complex_tr, "--model", tmp_path / "run" / "best", "--out", pred,
                         "--n-context", "4",
                         "--max-length", "24", "--batch-size", "3", "--beams", "2", "--device", "cpu")
    assert code == 0, err
    assert "questions" in err and "8" in err and "output" in err
    rows = [json.loads(line) for line in pred.read_text("utf-8").splitlines()]
    assert [r["id"] for r in rows] == [ex.id for ex in examples]
    assert [r["answers"] for r in rows] == [list(ex.answers) for ex in examples]
    assert rows[-1]["prediction"] == " and ".join(examples[-1].answers)
    assert json.loads((tmp_path / "pred.jsonl.config.json").read_text("utf-8"))["num_beams"] == 2

    code, _, err = _odqa("eval", pred, _complex_tr(tmp_path / "gold.jsonl", examples), "--dataset",
                              "complex-tr", "--json", tmp_path / "metrics.json")
    assert code == 0, err
    metrics = json.loads((tmp_path / "metrics.json").read_text("utf-8"))
    assert metrics["Set_Acc"] == 100.0 and metrics["Answer_F1"] == 100.0
    code, _, err = _odqa("eval", pred, train, "--dataset", "fid", "--json", tmp_path / "fid.json")
    assert code == 0, err
    fid = json.loads((tmp_path / "fid.json").read_text("utf-8"))
    assert fid["total"] == 8 and fid["exact"] == pytest.approx(500 / 8)  # multi-answer EM needs the one gold string


def test_read_warns_on_empty_ctxs_and_reads_atlas_passages(tmp_path: Path, tiny_reader_dir: Path) -> None:
    rows = [{"id": "a", "question": "what is the code?", "answers": ["apple"],
             "passages": [{"title": "code", "text": "the code is apple ."}]},
            {"id": "b", "question": "what is the code?", "answers": ["tiger"], "passages": []}]
    source = tmp_path / "atlas.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = _odqa("read", source, "--model", tiny_reader_dir, "--out", tmp_path / "p.jsonl",
                         "--answer-length", "3", "--device", "cpu")
    assert code == 0, err
    assert "warning: question 'b' has no passages; answered from the question alone" in err
    assert len((tmp_path / "p.jsonl").read_text("utf-8").splitlines()) == 2


@pytest.mark.parametrize(("args", "message"), [
    (["--model", "no-such/reader"], "ModelError: reader model 'no-such/reader' is not a local folder"),
    ([], "ConfigError: no reader model given; pass --model"),
    (["--model", "x", "--n-context", "0"], "ConfigError: n_context must be >= 1, got 0"),
    (["--model", "x", "--passage-format", "{passage}"], "ConfigError: passage_format uses ['passage']"),
])
def test_read_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    source = write_fid(tmp_path / "in.jsonl", copy_task(1))
    code, _, err = _odqa("read", source, "--out", tmp_path / "p.jsonl", *args)
    assert code == 1 and err.startswith(message), err


@pytest.mark.parametrize(("name", "cls"), [("read.yaml", ReadConfig), ("train-reader.yaml", TrainReaderConfig)])
def test_shipped_yaml_spells_out_the_defaults(name: str, cls: type) -> None:
    assert load_config(cls, CONFIGS / name) == cls()


def test_train_reader_fetches_contexts_from_a_retriever_and_resumes(tmp_path: Path, tiny_reader_dir: Path) -> None:
    tasks = copy_task(4)
    with_ctxs = [Example(ex.id, f"{ex.question} {ex.answers[0]}", ex.answers, ctxs=ex.ctxs) for ex in tasks]
    retriever = write_fid(tmp_path / "retrieved.jsonl", with_ctxs)
    questions = write_fid(tmp_path / "questions.jsonl", [Example(ex.id, ex.question, ex.answers) for ex in with_ctxs])
    args = ["train-reader", questions, "--retriever", retriever, "--model", tiny_reader_dir, "--out", tmp_path / "r",
            "--n-context", "3", "--max-length", "24", "--batch-size", "2", "--checkpoint-every", "1",
            "--device", "cpu"]
    code, _, err = _odqa(*args, "--steps", "2")
    assert code == 0, err
    assert "training questions without passages" not in err and "checkpoint-0000002" in err
    code, _, err = _odqa(*args, "--steps", "3", "--resume")
    assert code == 0, err
    assert "resumed from step" in err and "checkpoint-0000003" in err
    code, _, err = _odqa(*args, "--steps", "3")
    assert code == 1 and err.startswith("ConfigError: ") and "pass --resume" in err


def test_read_records_an_unreadable_question_and_counts_it(tmp_path: Path, tiny_reader_dir: Path) -> None:
    rows = [{"id": "ja", "question": "コードは何ですか", "answers": ["林檎"],
             "ctxs": [{"title": "コード", "text": "コードは林檎です"}]},
            {"id": "a", "question": "what is the code?", "answers": ["apple"],
             "ctxs": [{"title": "code", "text": "the code is apple ."}]}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    code, _, err = _odqa("read", source, "--model", tiny_reader_dir, "--out", tmp_path / "p.jsonl",
                         "--answer-length", "3", "--device", "cpu")
    assert code == 0, err
    assert re.search(r"not answered: unreadable to the tokenizer \(reason under 'error'\)\W+1\b", err)
    first, second = (json.loads(line) for line in (tmp_path / "p.jsonl").read_text("utf-8").splitlines())
    assert first["id"] == "ja" and first["prediction"] == "" and "'<unk>'" in first["error"]
    assert second["id"] == "a" and "error" not in second
