from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from odqa.cli import app

runner = CliRunner()

QUESTIONS = [
    {"id": "q1", "question": "Who was the mayor of Geneva in 1998?", "answers": ["Anna Keller"],
     "ctxs": [{"id": "c1", "title": "Zurich", "text": "Zurich is the largest city in Switzerland."},
              {"id": "c2", "title": "Geneva", "text": "In 1998 the mayor of Geneva was Anna Keller."},
              {"id": "c3", "title": "Lake", "text": "Lake Geneva lies north of the Alps."}]},
    {"id": "q2", "question": "Which city is the largest in Switzerland?", "answers": ["Zurich"],
     "passages": ["Bern is the capital.", "Zurich is the largest city in Switzerland."]},
]


def write_questions(path: Path, rows: list[dict[str, Any]] = QUESTIONS) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_refine_bm25_writes_fid_with_resolved_config(tmp_path: Path) -> None:
    out = tmp_path / "out" / "refined.jsonl"
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")), "--out", str(out),
                                 "--scorer", "bm25", "--k", "2"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["q1", "q2"]
    assert [c["id"] for c in rows[0]["ctxs"]] == ["c2", "c3"]  # ids given in the input are kept
    assert rows[0]["ctxs"][0]["has_answer"] is True and rows[0]["ctxs"][1]["has_answer"] is False
    assert rows[1]["ctxs"][0]["text"].startswith("Zurich") and rows[1]["ctxs"][0]["id"] == "q2:1"
    assert set(rows[0]["ctxs"][0]) == {"id", "title", "text", "score", "has_answer"}
    config = json.loads((out.parent / "refined.jsonl.config.json").read_text())
    assert config["k"] == 2 and config["scorer"] == "bm25"
    assert "answer recall@1" in result.output


def test_refine_hybrid_with_bundled_model_and_atlas_key(tmp_path: Path, minilm_path: Path) -> None:
    out = tmp_path / "atlas.jsonl"
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")), "--out", str(out),
                                 "--atlas", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    first = json.loads(out.read_text().splitlines()[0])
    assert "passages" in first and "ctxs" not in first
    assert first["passages"][0]["id"] == "c2"
    assert "fewer than k=100" in result.output


def test_refine_no_cache_writes_no_cache_and_records_the_resolved_precision(
    tmp_path: Path, minilm_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ODQA_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "dense.jsonl"
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")), "--out", str(out),
                                 "--scorer", "dense", "--no-cache", "--k", "1"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "cache").exists()
    config = json.loads((tmp_path / "dense.jsonl.config.json").read_text())
    assert config["embed"]["cache_dir"] == "" and config["embed"]["precision"] in ("fp32", "bf16")


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ('{"id": "q1", "question": "ok", "ctxs": []}\n{"id": "q2", "question": \n', ["--scorer", "bm25"],
         "FormatError: {path}:2: malformed JSON"),
        ('{"id": "q1", "question": "caf\xe9"}\n', ["--scorer", "bm25"], "FormatError: {path}:1: not UTF-8 text"),
        ('{"id": "q1", "question": "ok", "meta": [1]}\n', ["--scorer", "bm25"],
         "FormatError: {path}:1: 'meta' must be an object, got list"),
        ('{"id": "q1", "question": "ok"}\n', ["--model", "bge"], "ConfigError: unknown embedding preset 'bge'"),
        ('{"id": "q1", "question": "ok"}\n', ["--k", "0"], "ConfigError: k must be >= 1"),
        ('{"id": "q1"}\n', ["--scorer", "bm25"], "FormatError: {path}:1: record has no 'question'"),
    ],
)
def test_bad_input_is_one_typed_line_and_exit_1(tmp_path: Path, content: str, args: list[str], message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content.encode("latin-1") if "caf" in content else content.encode())
    result = runner.invoke(app, ["refine", str(path), "--out", str(tmp_path / "o.jsonl"), *args])
    assert result.exit_code == 1
    assert message.format(path=path) in " ".join(result.output.split())
    assert not (tmp_path / "o.jsonl").exists()  # nothing half-written


def test_missing_or_empty_input_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["refine", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1 and "InputError" in result.output
    (tmp_path / "empty.jsonl").write_text("\n")
    result = runner.invoke(app, ["refine", str(tmp_path / "empty.jsonl"), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1 and "holds no questions" in result.output
    assert not (tmp_path / "o.jsonl").exists()


def test_timeqa_file_is_detected(tmp_path: Path) -> None:
    from odqa.demo import demo_data

    out = tmp_path / "t.jsonl"
    result = runner.invoke(app, ["refine", str(demo_data()), "--out", str(out), "--scorer", "bm25", "--k", "5"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 108 and all(1 <= len(r["ctxs"]) <= 5 for r in rows)
    assert sum(len(r["ctxs"]) == 5 for r in rows) > 100  # a few articles are shorter than 500 words
    assert rows[0]["id"].startswith("/wiki/")


def test_unknown_choice_is_rejected_with_the_valid_ones(tmp_path: Path) -> None:
    path = write_questions(tmp_path / "q.jsonl")
    result = runner.invoke(app, ["refine", str(path), "--out", str(tmp_path / "o.jsonl"), "--scorer", "magic"])
    assert result.exit_code == 2
    assert "'magic' is not one of" in result.output and "hybrid" in result.output


def test_corrupt_gzip_input(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl.gz"
    path.write_bytes(b"not gzip at all")
    result = runner.invoke(app, ["refine", str(path), "--out", str(tmp_path / "o.jsonl"), "--scorer", "bm25"])
    assert result.exit_code == 1 and "FormatError" in result.output and "gzip" in result.output


def test_unwritable_output(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")),
                                 "--out", str(blocker / "out.jsonl"), "--scorer", "bm25"])
    assert result.exit_code == 1 and "OutputError: cannot write" in " ".join(result.output.split())


@pytest.mark.parametrize(
    ("yaml_text", "message"),
    [("chunk: {words: 1.5}\n", "chunk.words must be a valid integer, got 1.5"),
     ("k: true\n", "k must be a valid integer, got True"),
     ("embed: minilm\n", "'embed' must be a mapping")],
)
def test_bad_config_values(tmp_path: Path, yaml_text: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml_text)
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")), "--out",
                                 str(tmp_path / "o.jsonl"), "--config", str(config), "--model", "x/y"])
    assert result.exit_code == 1 and "ConfigError" in result.output and message in " ".join(result.output.split())


def test_config_path_that_is_a_folder(tmp_path: Path) -> None:
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl")), "--out",
                                 str(tmp_path / "o.jsonl"), "--config", str(tmp_path)])
    assert result.exit_code == 1 and "ConfigError: cannot read config file" in " ".join(result.output.split())


def test_error_is_exactly_one_line_however_long(tmp_path: Path) -> None:
    long_name = tmp_path / ("x" * 150 + ".jsonl")
    result = runner.invoke(app, ["refine", str(long_name), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and result.output.startswith("InputError: ")


@pytest.mark.parametrize(
    ("dataset_file", "questions", "min_ctxs"),
    [
        ("hieradate/normal.json", 2, 2),  # candidates under 'context', as [title, [sentence, ...]]
        ("hieradate/distractor.jsonl", 1, 10),
        ("complex_tr/reasonqa.jsonl", 7, 1),  # 'context' text
        ("complex_tr/odqa.jsonl", 7, 2),  # 'passages'
        ("timeqa/human_annotated_train.slice.json", 11, 1),  # 'paras'
        ("timeqa/human_train.hard.slice.jsonl", 14, 1),  # 'paragraphs'
    ],
)
def test_every_dataset_refines_through_its_own_loader(
    tmp_path: Path, data_dir: Path, dataset_file: str, questions: int, min_ctxs: int
) -> None:
    out = tmp_path / "refined.jsonl"
    result = runner.invoke(app, ["refine", str(data_dir / dataset_file), "--out", str(out), "--scorer", "bm25",
                                 "--k", "10"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == questions
    assert all(len(r["ctxs"]) >= min_ctxs for r in rows), [len(r["ctxs"]) for r in rows]


@pytest.mark.parametrize(
    "dataset_file",
    ["jemhopqa/train_ver1.2.slice.json", "complex_tr/squad_style.json"],
)
def test_questions_without_any_candidates_are_an_error_naming_the_fix(
    tmp_path: Path, data_dir: Path, dataset_file: str
) -> None:
    out = tmp_path / "refined.jsonl"
    result = runner.invoke(app, ["refine", str(data_dir / dataset_file), "--out", str(out), "--scorer", "bm25"])
    output = " ".join(result.output.split())
    assert result.exit_code == 1, output
    assert output.startswith("InputError: none of the") and "has candidate passages" in output
    assert "odqa crawl" in output and "odqa retrieve" in output
    assert not out.exists() and not (tmp_path / "refined.jsonl.config.json").exists()


def test_fid_questions_without_candidates_are_an_error(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": "Who?", "answers": ["x"]}, {"id": "q2", "question": "What?", "ctxs": []}]
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl", rows)), "--out",
                                 str(tmp_path / "o.jsonl"), "--scorer", "bm25"])
    assert result.exit_code == 1 and "InputError: none of the 2 question(s) has candidate passages" in " ".join(
        result.output.split())


def test_hybridqa_questions_name_their_loader(tmp_path: Path, data_dir: Path) -> None:
    result = runner.invoke(app, ["refine", str(data_dir / "hybridqa" / "dev.sample.json"), "--out",
                                 str(tmp_path / "o.jsonl"), "--scorer", "bm25"])
    assert result.exit_code == 1 and "holds HybridQA questions" in " ".join(result.output.split())


def test_repeated_articles_give_distinct_passages(tmp_path: Path) -> None:
    article = " ".join(f"word{i}" for i in range(300))
    rows = [{"id": "q1", "question": "word7 word250", "answers": ["word250"],
             "ctxs": [{"id": "a", "title": "A", "text": article}, {"id": "a2", "title": "A", "text": article},
                      {"id": "b", "title": "B", "text": "something else"}]}]
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, ["refine", str(write_questions(tmp_path / "q.jsonl", rows)), "--out", str(out),
                                 "--scorer", "bm25", "--k", "100"])
    assert result.exit_code == 0, result.output
    ctxs = json.loads(out.read_text())["ctxs"]
    assert len(ctxs) == len({c["text"] for c in ctxs}) == 4
    assert {c["id"] for c in ctxs} == {"a:0", "a:1", "a:2", "b"}
    assert re.search(r"repeated passages dropped\s*│\s*3\s*│", result.output)


def test_crawl_folder_with_one_article_stored_twice_gives_each_passage_once(tmp_path: Path) -> None:
    from odqa.crawl.store import CrawlStore, PageRow, ResultRow
    from odqa.records import Example

    article = " ".join(f"word{i}" for i in range(1600))  # 16 passages
    urls = ["https://en.wikipedia.org/wiki/Geneva", "https://mirror.example/geneva"]
    with CrawlStore(tmp_path / "run" / "crawl.sqlite") as store:
        store.add_questions([(Example(id="q1", question="word5 word1500"), {"id": "q1", "question": "word5 word1500"})])
        store.save_lookup("q1", "html", [ResultRow(url, rank, "Geneva") for rank, url in enumerate(urls)],
                          pages=[PageRow(url, "ok", title="Geneva", text=article) for url in urls])
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, ["refine", str(tmp_path / "run"), "--out", str(out), "--scorer", "bm25", "--k", "100"])
    assert result.exit_code == 0, result.output
    ctxs = json.loads(out.read_text())["ctxs"]
    assert len(ctxs) == len({c["text"] for c in ctxs}) == 16
    assert len({c["id"].rsplit(":", 1)[0] for c in ctxs}) == 1  # all from the first-ranked copy
