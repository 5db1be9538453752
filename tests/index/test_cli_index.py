"""`odqa index build`, `odqa index export` and `odqa retrieve` end to end, with the bundled MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from odqa.cli import app
from odqa.io import read_dpr_tsv
from odqa.records import Passage

runner = CliRunner()


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_build_dense_and_bm25_then_retrieve_fused(tmp_path: Path, timeqa_file: Path,
                                                  short_corpus: list[Passage]) -> None:
    passages = write_jsonl(tmp_path / "passages.jsonl", [
        {"id": p.id, "doc_id": p.doc_id, "title": p.title, "text": p.text} for p in short_corpus[:24]])
    dense, sparse = tmp_path / "indexes" / "dense", tmp_path / "indexes" / "bm25"
    result = runner.invoke(app, ["index", "build", str(passages), "--model", "minilm", "--shard-size", "16",
                                 "--device", "cpu", "--out", str(dense)])
    assert result.exit_code == 0, result.output
    assert "passages" in result.output and "24" in result.output and "minilm (384 dimensions, cosine)" in result.output
    assert json.loads((dense / "build.config.json").read_text())["embed"]["model"] == "minilm"
    result = runner.invoke(app, ["index", "build", str(timeqa_file), "--kind", "bm25", "--out", str(sparse)])
    assert result.exit_code == 0, result.output

    from odqa.inputs import load_examples

    docs = {p.doc_id for p in short_corpus[:24]}
    asked = [ex for ex in load_examples(timeqa_file) if ex.id.split("#")[0] in docs][:12]
    questions = write_jsonl(tmp_path / "q.jsonl", [
        {"id": ex.id, "question": ex.question, "answers": list(ex.answers)} for ex in asked])
    out = tmp_path / "run" / "retrieved.jsonl"
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(dense), "--index", str(sparse),
                                 "--fuse", "rrf", "--k", "5", "--depth", "20", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "answer recall@5" in result.output and "2 indexes, rrf fusion" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [ex.id for ex in asked]
    assert all(len(r["ctxs"]) == 5 for r in rows)
    assert all(set(c) == {"id", "title", "text", "score", "has_answer"} for r in rows for c in r["ctxs"])
    assert any(c["has_answer"] for r in rows for c in r["ctxs"])
    resolved = json.loads((tmp_path / "run" / "retrieved.jsonl.config.json").read_text())
    assert resolved["stage"] == "RetrieveConfig" and resolved["indexes"] == [str(dense), str(sparse)]

    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(dense), "--model", "e5-base",
                                 "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 1
    assert result.output.startswith("IndexMismatchError: this index was built with 'minilm'")


def test_export_tsv_from_any_passage_set_and_from_an_index(tmp_path: Path, timeqa_file: Path,
                                                           corpus: list[Passage]) -> None:
    tsv = tmp_path / "psgs.tsv"
    result = runner.invoke(app, ["index", "export", str(timeqa_file), "--tsv", str(tsv)])
    assert result.exit_code == 0, result.output
    assert "wrote 564 passages" in result.output
    expected = [(p.id, p.title, p.text) for p in corpus]
    assert [(p.id, p.title, p.text) for p in read_dpr_tsv(tsv)] == expected
    index = tmp_path / "bm25"
    assert runner.invoke(app, ["index", "build", str(tsv), "--kind", "bm25", "--out", str(index)]).exit_code == 0
    again = tmp_path / "again.tsv"
    assert runner.invoke(app, ["index", "export", str(index), "--tsv", str(again)]).exit_code == 0
    assert again.read_bytes() == tsv.read_bytes()


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["index", "build", str(tmp_path / "none.jsonl"), "--kind", "bm25",
                                 "--out", str(tmp_path / "i")])
    assert result.exit_code == 1 and result.output.startswith("InputError:")
    questions = write_jsonl(tmp_path / "q.jsonl", [{"id": "1", "question": "Who?"}])
    result = runner.invoke(app, ["retrieve", str(questions), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 1 and "ConfigError: no index to search; pass --index indexes/NAME" in result.output
    result = runner.invoke(app, ["retrieve", str(questions), "--index", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and result.output.startswith("IndexFormatError:")
    result = runner.invoke(app, ["index", "build", str(questions), "--kind", "bm25", "--faiss", "HNSW32",
                                 "--shard-size", "0", "--out", str(tmp_path / "i")])
    assert result.exit_code == 1 and "shard_size must be >= 1" in result.output
