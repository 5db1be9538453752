"""``odqa eval`` end to end, and the prediction formats it reads."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.errors import FormatError
from odqa.evaluate.predictions import read_predictions

runner = CliRunner()


def _eval(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["eval", *map(str, args)], env={"COLUMNS": "400"})
    return result.exit_code, result.stdout, " ".join(result.stderr.split())


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_complex_tr_default_and_official(data_dir: Path, tmp_path: Path) -> None:
    pred, gold = data_dir / "complex_tr" / "predictions.jsonl", data_dir / "complex_tr" / "reasonqa.jsonl"
    out = tmp_path / "metrics.json"
    code, stdout, _ = _eval(pred, gold, "--dataset", "complex-tr", "--json", out)
    assert code == 0, stdout
    assert "Set_Acc" in stdout and "by_hops / multi-hop / Answer_F1" in stdout
    result = json.loads(out.read_text("utf-8"))
    assert result["Set_Acc"] == pytest.approx(500 / 7) and result["mode"] == "default"
    config = json.loads((tmp_path / "metrics.json.config.json").read_text("utf-8"))
    assert config["dataset"] == "complex-tr" and config["official_split"] is False
    code, _, _ = _eval(pred, gold, "-d", "complex-tr", "--official-split", "--json", out)
    assert code == 0 and json.loads(out.read_text("utf-8"))["Set_Acc"] == pytest.approx(400 / 7)


def test_fid_recall_from_one_file(tmp_path: Path) -> None:
    fid = _jsonl(tmp_path / "fid.jsonl", [
        {"id": "1", "question": "?", "answers": ["Paris"],
         "ctxs": [{"title": "", "text": "Lyon", "has_answer": False}, {"title": "", "text": "in Paris"}]},
        {"id": "2", "question": "?", "answers": [], "ctxs": [{"title": "", "text": "Paris"}]},
    ])
    out = tmp_path / "r.json"
    code, stdout, _ = _eval(fid, "--k", "1,2", "--json", out)
    assert code == 0, stdout
    assert json.loads(out.read_text("utf-8")) == {
        "recall@1": 0.0, "recall@2": 1.0, "answerable": 1, "unanswerable_skipped": 1, "without_passages": 0,
        "has_answer": "recomputed from text",
    }
    code, _, stderr = _eval(fid, "--use-file-flags")
    assert code == 1 and "passage 1 has no boolean 'has_answer' flag" in stderr


def test_fid_answers_with_a_json_object_of_predictions(tmp_path: Path) -> None:
    gold = _jsonl(tmp_path / "gold.jsonl", [{"id": "a", "question": "?", "answers": ["Paris"]},
                                            {"id": "b", "question": "?", "answers": []}])
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"a": "paris.", "b": "London"}), encoding="utf-8")
    out = tmp_path / "m.json"
    assert _eval(pred, gold, "--json", out)[0] == 0
    result = json.loads(out.read_text("utf-8"))
    assert result["exact"] == 50.0 and result["unanswerable"]["exact"] == 0.0


def test_timeqa(tmp_path: Path) -> None:
    paragraphs = [{"title": "Olivier Bernard", "text": "He played for Newcastle United from 2000 to 2005."}]
    gold = _jsonl(tmp_path / "timeqa.jsonl", [
        {"idx": "/wiki/Olivier_Bernard#P54#0", "question": "Which team did Olivier Bernard play for in 2003?",
         "context": "", "targets": ["Newcastle United"], "from": [], "end": [], "paragraphs": paragraphs},
        {"idx": "/wiki/Olivier_Bernard#P54#1", "question": "Which team did he play for in 1850?",
         "context": "", "targets": [], "from": [], "end": [], "paragraphs": paragraphs},
    ])
    pred = _jsonl(tmp_path / "pred.jsonl", [{"id": "/wiki/Olivier_Bernard#P54#0", "prediction": "Newcastle"},
                                            {"id": "/wiki/Olivier_Bernard#P54#1", "prediction": ""}])
    out = tmp_path / "m.json"
    assert _eval(pred, gold, "-d", "timeqa", "--json", out)[0] == 0
    result = json.loads(out.read_text("utf-8"))
    assert result["exact"] == 50.0 and result["f1"] == pytest.approx((2 / 3 + 1) / 2 * 100)


def test_hybridqa_official_prediction_format(data_dir: Path, tmp_path: Path) -> None:
    reference = data_dir / "hybridqa" / "dev_reference.sample.json"
    answers = json.loads(reference.read_text("utf-8"))["reference"]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"question_id": q, "pred": a} for q, a in answers.items()]), encoding="utf-8")
    out = tmp_path / "m.json"
    code, stdout, _ = _eval(pred, reference, "--dataset", "hybridqa", "--json", out)
    assert code == 0 and "passage exact" in stdout
    assert list(json.loads(out.read_text("utf-8"))) == [
        "table exact", "table f1", "passage exact", "passage f1", "total exact", "total f1", "total"]


def test_jemhopqa_official_prediction_format(data_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("sudachipy")
    gold = data_dir / "jemhopqa" / "train_ver1.2.slice.json"
    records = json.loads(gold.read_text("utf-8"))
    pred = tmp_path / "pred.json"
    official = {"answer": {r["qid"]: r["answer"] for r in records},
                "derivations": {r["qid"]: r["derivations"] for r in records}}
    pred.write_text(json.dumps(official), encoding="utf-8")
    out = tmp_path / "m.json"
    code, stdout, _ = _eval(pred, gold, "--dataset", "jemhopqa", "--sudachi-dict", "core", "--json", out)
    assert code == 0, stdout
    result = json.loads(out.read_text("utf-8"))
    assert result["a"] == {"em": 1.0, "score": 1.0}
    assert result["er"] == {"prec": 1.0, "recall": 1.0, "f1": 1.0}
    assert "synonym matching" in result["note"]
    # the notes are printed under the table, one per line, not as a table row
    assert "note: SudachiPy dictionary: core (the official script uses full)\n" in stdout
    if importlib.util.find_spec("chikkarpy") is None:
        assert "note: synonym matching: off (chikkarpy is not installed" in stdout
        assert "off (chikkarpy is not installed" in result["note"]
    assert "│ note" not in stdout


def test_hieradate_official_prediction_format(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    code, _, _ = _eval(data_dir / "hieradate" / "predictions.json", data_dir / "hieradate" / "normal.json",
                       "-d", "hieradate", "--json", out)
    assert code == 0
    assert json.loads(out.read_text("utf-8"))["em_compare"] == pytest.approx(200 / 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-d", "squad"], "ConfigError: unknown dataset 'squad'; choose one of: fid, complex-tr, timeqa"),
        (["-d", "hybridqa"], "--dataset hybridqa needs a GOLD file"),
        (["-d", "SQuAD"], "choose one of: fid, complex-tr, timeqa, hieradate, jemhopqa, hybridqa"),
        (["--k", "1,five"], "--k must be comma-separated positive integers (recall@k cut-offs, e.g. 1,5,10,20,100), "
                            "got '1,five'"),
        (["--k", "0"], "--k must be comma-separated positive integers (recall@k cut-offs, e.g. 1,5,10,20,100), "
                       "got '0'"),
        (["--k", "5,-1"], "--k must be comma-separated positive integers"),
        (["--k=-3"], "got '-3'"),
        (["--k", ","], "got ','"),
        (["--official-split"], "--official-split applies to --dataset complex-tr only"),
        (["--sudachi-dict", "core"], "--sudachi-dict and --synonym-dic apply to --dataset jemhopqa"),
    ],
)
def test_bad_options(data_dir: Path, args: list[str], message: str) -> None:
    code, _, stderr = _eval(data_dir / "complex_tr" / "predictions.jsonl", *args)
    assert code == 1 and stderr.startswith("ConfigError: ") and message in stderr


def _one_error_line(*args: str | Path) -> str:
    """Run ``odqa eval``; it must exit 1 with exactly one ``Type: message`` line on stderr (no traceback)."""
    result = runner.invoke(app, ["eval", *map(str, args)], env={"COLUMNS": "400"})
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 1, (result.exit_code, result.stderr, result.exception)
    assert len(lines) == 1 and re.match(r"^(InputError|FormatError): \S", lines[0]), result.stderr
    return lines[0]


def test_a_prediction_file_that_is_not_utf8(data_dir: Path, tmp_path: Path) -> None:
    pred = tmp_path / "latin1.jsonl"
    pred.write_bytes('{"id": "L2_Q451225_P108_4", "prediction": "Universit\u00e9 de Paris"}\n'.encode("latin-1"))
    line = _one_error_line(pred, data_dir / "complex_tr" / "reasonqa.jsonl", "-d", "complex-tr")
    assert line.startswith(f"FormatError: {pred}") and "not UTF-8" in line and "UTF-8" in line.split(";")[-1]


def test_a_gold_path_that_is_a_folder(data_dir: Path, tmp_path: Path) -> None:
    for dataset in ("complex-tr", "hybridqa", "fid"):
        line = _one_error_line(data_dir / "complex_tr" / "predictions.jsonl", tmp_path, "-d", dataset)
        assert line == (f"InputError: {tmp_path} is a folder, not a file; give the {dataset} gold file itself "
                        "(GOLD, after PRED)")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2, 3]", "item 0 of the JSON array is int 1, expected a prediction object with an id; accepted: "
                      'JSON Lines of {"id": ..., "prediction": ...}, a JSON object {id: answer}'),
        ('["Paris"]', 'item 0 of the JSON array is str "Paris", expected a prediction object'),
        ("42", 'got a JSON int; accepted: JSON Lines of {"id": ..., "prediction": ...}'),
        ('{"id": "a", "prediction": "x"}\n[1]\n', ":2: expected a JSON object, got list"),
    ],
)
def test_a_prediction_file_of_the_wrong_shape(data_dir: Path, tmp_path: Path, content: str, message: str) -> None:
    pred = tmp_path / "pred.json"
    pred.write_text(content, encoding="utf-8")
    line = _one_error_line(pred, data_dir / "complex_tr" / "reasonqa.jsonl", "-d", "complex-tr")
    assert line.startswith(f"FormatError: {pred}") and message in line


def test_unreadable_inputs_are_one_line_errors(data_dir: Path, tmp_path: Path) -> None:
    gold = data_dir / "complex_tr" / "reasonqa.jsonl"
    corrupt = tmp_path / "pred.jsonl.gz"
    corrupt.write_bytes(gzip.compress(b'{"id": "a", "prediction": "x"}\n' * 100)[:40])
    assert "corrupt or truncated gzip data" in _one_error_line(corrupt, gold, "-d", "complex-tr")
    assert "is a folder, not a file; give the prediction file" in _one_error_line(tmp_path, gold, "-d", "complex-tr")
    assert "is a folder, not a file; give the FiD file" in _one_error_line(tmp_path)
    empty_gold = tmp_path / "gold.jsonl"
    empty_gold.write_text("\n", encoding="utf-8")
    pred = data_dir / "complex_tr" / "predictions.jsonl"
    assert "the gold file holds no questions" in _one_error_line(pred, empty_gold, "-d", "complex-tr")
    latin1_gold = tmp_path / "gold.json"
    latin1_gold.write_bytes('{"reference": {"a": "caf\u00e9"}}'.encode("latin-1"))
    assert "not UTF-8 text" in _one_error_line(pred, latin1_gold, "-d", "hybridqa")


def test_missing_and_malformed_prediction_files(data_dir: Path, tmp_path: Path) -> None:
    gold = data_dir / "complex_tr" / "reasonqa.jsonl"
    code, _, stderr = _eval(tmp_path / "nope.jsonl", gold, "-d", "complex-tr")
    assert code == 1 and "InputError" in stderr and "no such file; give the prediction file" in stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prediction": "x"}\n{"id": "b", "prediction": \n', encoding="utf-8")
    code, _, stderr = _eval(bad, gold, "-d", "complex-tr")
    assert code == 1 and "FormatError" in stderr and "bad.jsonl:2: malformed JSON" in stderr


def test_questions_without_predictions(data_dir: Path, tmp_path: Path) -> None:
    gold = data_dir / "complex_tr" / "reasonqa.jsonl"
    pred = _jsonl(tmp_path / "p.jsonl", [{"id": "L3_Q1000_P69_2", "prediction": "Imperial College London"}])
    code, _, stderr = _eval(pred, gold, "-d", "complex-tr")
    assert code == 1 and "6 of 7 gold questions have no prediction" in stderr and "--ignore-missing" in stderr
    out = tmp_path / "m.json"
    assert _eval(pred, gold, "-d", "complex-tr", "--ignore-missing", "--json", out)[0] == 0
    result = json.loads(out.read_text("utf-8"))
    assert result["total"] == 1 and result["missing"] == 6 and result["Set_Acc"] == 100.0


def test_read_predictions_shapes(tmp_path: Path) -> None:
    hf = tmp_path / "hf.json"
    hf_rows = [{"id": "q", "prediction_text": "a", "no_answer_probability": 0}]
    hf.write_text(json.dumps(hf_rows), encoding="utf-8")
    assert read_predictions(hf) == {"q": "a"}
    single = _jsonl(tmp_path / "one.jsonl", [{"id": "q", "prediction": "a"}])
    assert read_predictions(single) == {"q": "a"}
    records = _jsonl(tmp_path / "jem.jsonl", [{"id": "q", "answer": "a", "derivations": []}])
    assert read_predictions(records) == {"q": {"answer": "a", "derivations": []}}
    jem = tmp_path / "jem.json"
    jem.write_text(json.dumps({"answer": {"q": "a", "r": "b"}, "derivations": {"q": []}}), encoding="utf-8")
    assert read_predictions(jem) == {"q": {"answer": "a", "derivations": []}, "r": {"answer": "b"}}


def test_read_predictions_errors(tmp_path: Path) -> None:
    dup = _jsonl(tmp_path / "dup.jsonl", [{"id": "q", "prediction": "a"}, {"id": "q", "prediction": "b"}])
    with pytest.raises(FormatError, match=r"dup\.jsonl:2: duplicate prediction for 'q'"):
        read_predictions(dup)
    no_id = _jsonl(tmp_path / "noid.jsonl", [{"prediction": "a"}, {"prediction": "b"}])
    with pytest.raises(FormatError, match=r"noid\.jsonl:1: prediction record has no id"):
        read_predictions(no_id)


def test_read_predictions_never_leaks_a_decoding_error(tmp_path: Path) -> None:
    latin1 = tmp_path / "p.json"
    latin1.write_bytes(b'{"a": "caf\xe9"}')
    with pytest.raises(FormatError, match=r"p\.json: not UTF-8 text .*re-encode the file as UTF-8") as info:
        read_predictions(latin1)
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(FormatError, match="nested too deeply"):
        read_predictions(deep)


def test_read_predictions_reports_where_a_json_document_breaks(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"question_id": "a", "pred": "x"},\n  {"question_id": "b" "pred": "y"}\n]\n', "utf-8")
    with pytest.raises(FormatError, match=r"malformed JSON \(Expecting ',' delimiter, line 3 column 23\)"):
        read_predictions(broken)


def test_read_predictions_of_fid_and_atlas_readers(tmp_path: Path) -> None:
    # FiD test_reader.py --write_results: "id<TAB>answer" per line (numeric ids, empty answers, tabs in answers)
    fid = tmp_path / "final_output.txt"
    fid.write_text("3\tParis\n4\t\n\nq5\tNew\tYork\n", encoding="utf-8")
    assert read_predictions(fid) == {"3": "Paris", "4": "", "q5": "New\tYork"}
    broken = tmp_path / "broken.txt"
    broken.write_text("1\tParis\n2 London\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"broken\.txt:2: no tab in this line of id<TAB>answer predictions"):
        read_predictions(broken)
    dup = tmp_path / "dup.txt"
    dup.write_text("1\tParis\n1\tLondon\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"dup\.txt:2: duplicate prediction for '1'"):
        read_predictions(dup)
    # Atlas evaluate.py --write_results: JSON Lines with the gold "answers" and the model's "generation"
    atlas = _jsonl(tmp_path / "dev-step-100.jsonl", [
        {"query": "?", "answers": ["Paris"], "generation": "paris", "passages": [], "id": "a"},
        {"query": "?", "answers": [], "generation": "", "id": "b"},
    ])
    assert read_predictions(atlas) == {"a": "paris", "b": ""}
    # a pretty-printed JSON object indented with tabs is still JSON
    tabbed = tmp_path / "tabbed.json"
    tabbed.write_text('{\n\t"a": "Paris"\n}\n', encoding="utf-8")
    assert read_predictions(tabbed) == {"a": "Paris"}


def test_fid_tsv_predictions_through_odqa_eval(tmp_path: Path) -> None:
    gold = _jsonl(tmp_path / "gold.jsonl", [{"id": "0", "question": "?", "answers": ["Paris"]},
                                            {"id": "1", "question": "?", "answers": ["Newcastle United"]}])
    pred = tmp_path / "final_output.txt"
    pred.write_text("0\tParis\n1\tNewcastle\n", encoding="utf-8")
    out = tmp_path / "m.json"
    assert _eval(pred, gold, "--json", out)[0] == 0
    result = json.loads(out.read_text("utf-8"))
    assert result["exact"] == 50.0 and result["f1"] == pytest.approx((1 + 2 / 3) / 2 * 100)
