"""The numbers on the report page come from odqa's metric functions: checked against evaluate_retrieval, recall_at_k,
has_answer and ``odqa eval`` on the shipped TimeQA slice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from odqa.cli import app
from odqa.demo import demo_data
from odqa.errors import ConfigError, FormatError, InputError
from odqa.evaluate import has_answer, recall_at_k
from odqa.evaluate.retrieval import evaluate_retrieval
from odqa.evaluate.run import EvalConfig, run_eval
from odqa.io import read_fid, write_jsonl
from odqa.report import REPORT_FORMAT, ReportConfig, RunSpec, build_report_data, render_html, write_report

runner = CliRunner()


@pytest.fixture(scope="module")
def data(demo_runs: dict[str, Path]) -> dict[str, Any]:
    return build_report_data([RunSpec(str(demo_runs["bm25"])), RunSpec(str(demo_runs["original"]))])


def test_summary_recall_is_odqa_eval_recall(data: dict[str, Any], demo_runs: dict[str, Path]) -> None:
    assert data["format"] == REPORT_FORMAT and [run["name"] for run in data["runs"]] == ["bm25", "original"]
    for run in data["runs"]:
        expected = evaluate_retrieval(read_fid(run["path"]))
        assert run["answerable"] == expected["answerable"] == 89
        assert run["questions"] == 108 and run["missing"] == 0 and run["depth"] == 20
        assert {f"recall@{k}": v for k, v in run["recall"].items()} == {
            k: v for k, v in expected.items() if k.startswith("recall@")}
    assert data["runs"][0]["recall"]["1"] == pytest.approx(0.483, abs=5e-4)  # the demo table (docs/benchmarks.md)
    assert data["runs"][1]["recall"]["1"] == pytest.approx(0.247, abs=5e-4)


def test_first_answer_ranks_and_curve_follow_has_answer(data: dict[str, Any]) -> None:
    for r, run in enumerate(data["runs"]):
        flags = []
        by_id = {e.id: e for e in read_fid(run["path"])}
        for question in data["questions"]:
            example = by_id[question["id"]]
            marks = [has_answer(doc.text, example.answers) for doc in example.ctxs or ()]
            first = marks.index(True) + 1 if True in marks else None
            assert question["runs"][r]["first"] == first
            spans = question["spans"]
            assert [str(pid) in spans for pid in question["runs"][r]["p"]] == marks
            if example.answers:
                flags.append(marks)
        assert run["curve"] == list(recall_at_k(flags, range(1, 21)).values())
        assert [run["curve"][k - 1] for k in (1, 5, 10, 20)] == [run["recall"][str(k)] for k in (1, 5, 10, 20)]


def test_spans_point_at_the_answers_in_the_passage_table(data: dict[str, Any]) -> None:
    marked = 0
    for question in data["questions"]:
        for pid, spans in question["spans"].items():
            text = data["passages"][int(pid)][2]
            if text is None:
                continue
            for start, end in spans:
                assert has_answer(text[start:end], question["answers"])
                marked += 1
    assert marked > 100


def test_passage_text_kept_for_the_top_texts_and_the_first_answer(demo_runs: dict[str, Path]) -> None:
    data = build_report_data([RunSpec(str(demo_runs["original"]))], texts=2)
    late = 0
    for question in data["questions"]:
        entry = question["runs"][0]
        for rank, pid in enumerate(entry["p"], start=1):
            kept = data["passages"][pid][2] is not None
            if rank <= 2 or rank == entry["first"]:
                assert kept
            late += kept and rank > 2 and rank != entry["first"]
        title = data["strings"][data["passages"][entry["p"][0]][1]]
        assert title  # titles stay, through the string table
    assert late > 0  # a passage shown in its text window for one question keeps its text for all


def test_gold_file_gives_questions_and_answers(demo_runs: dict[str, Path], tmp_path: Path) -> None:
    rows = [json.loads(line) for line in demo_runs["bm25"].read_text().splitlines()]
    half = tmp_path / "half.jsonl"
    write_jsonl(half, rows[::2])
    data = build_report_data([RunSpec(str(half), name="half")], gold=str(demo_data()))
    run = data["runs"][0]
    assert len(data["questions"]) == 108 and run["questions"] == 54 and run["missing"] == 54
    assert run["answerable"] == 89  # a question the run lacks is a miss, as a question without passages is
    present = [e for e in read_fid(half) if e.answers]
    assert run["recall"]["20"] == pytest.approx(evaluate_retrieval(present)["recall@20"] * len(present) / 89)
    assert sum(q["runs"][0] is None for q in data["questions"]) == 54


def test_predictions_marked_and_scored_as_odqa_eval_scores_them(demo_runs: dict[str, Path], tmp_path: Path) -> None:
    examples = list(read_fid(demo_runs["bm25"]))
    predictions = {e.id: (e.answers[0] if e.answers and i % 3 else "1900") for i, e in enumerate(examples[:60])}
    pred = tmp_path / "pred.jsonl"
    write_jsonl(pred, [{"id": k, "prediction": v} for k, v in predictions.items()])
    data = build_report_data([RunSpec(str(demo_runs["bm25"]), predictions=str(pred)),
                              RunSpec(str(demo_runs["original"]))])
    expected = run_eval(EvalConfig("fid", str(pred), gold=str(demo_runs["bm25"]), ignore_missing=True))
    run = data["runs"][0]
    assert (run["exact"], run["f1"], run["predicted"]) == (expected["exact"], expected["f1"], 60)
    assert "exact" not in data["runs"][1]
    marks = {q["id"]: q["runs"][0].get("em") for q in data["questions"]}
    assert sum(v == 1.0 for v in marks.values()) == sum(
        bool(e.answers) and i % 3 != 0 for i, e in enumerate(examples[:60]))
    assert sum(v is None for v in marks.values()) == 48
    assert "EM %" in render_html(data)


def test_page_is_self_contained_and_escapes_passages(tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script> <!-- Paris"
    run = tmp_path / "run.jsonl"
    write_jsonl(run, [{"id": "q1", "question": "Capital of <b>France</b>?", "answers": ["Paris"],
                       "ctxs": [{"id": "p1", "title": "<i>T</i>", "text": evil, "score": 1.5,
                                 "url": "https://example.org/p"}]}])
    summary = write_report(ReportConfig((RunSpec(str(run)),), str(tmp_path / "r.html"),
                                        json_out=str(tmp_path / "r.json")))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert summary.bytes == len(page.encode("utf-8")) and summary.questions == 1
    assert page.count("</script>") == 3  # the data's, one passage block's and the code's: a passage cannot close one
    assert "<b>France" not in page and "<i>T</i>" not in page
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)  # nothing loaded from elsewhere
    assert _embedded(page) == json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert _embedded(page)["questions"][0]["spans"] == {"0": [[evil.index("Paris"), len(evil)]]}


def _script(page: str, element_id: str) -> Any:
    return json.loads(page.split(f'<script type="application/json" id="{element_id}">', 1)[1].split("</script>")[0])


def _embedded(page: str) -> dict[str, Any]:
    """The page's data put back together: the passage table is embedded in blocks of rows."""
    data = _script(page, "odqa-data")
    blocks = [_script(page, f"odqa-passages-{b}") for b in range(data.pop("passage_blocks"))]
    assert all(len(block) == data["passage_block"] for block in blocks[:-1])
    del data["passage_block"]
    return {**data, "passages": [row for block in blocks for row in block]}


def test_passage_table_embedded_in_blocks(demo_runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.report.html

    data = build_report_data([RunSpec(str(demo_runs["bm25"])), RunSpec(str(demo_runs["original"]))])
    monkeypatch.setattr(odqa.report.html, "PASSAGE_BLOCK", 100)
    page = render_html(data)
    assert 'id="odqa-passages-3"' in page and len(data["passages"]) > 300
    assert _embedded(page) == data


def test_summary_table_and_chart_are_in_the_html(data: dict[str, Any]) -> None:
    page = render_html(data)
    table = page.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    assert table.count("<tr>") == 3 and "0.483" in table and "0.247" in table
    chart = page.split('<svg class="chart"', 1)[1].split("</svg>", 1)[0]
    assert chart.count("<polyline") == 2 and "bm25: recall@5 = 0.764" in chart


@pytest.mark.parametrize(("runs", "kwargs", "error", "message"), [
    ([RunSpec("a.jsonl"), RunSpec("b/a.jsonl")], {}, ConfigError, "share the name"),
    ([], {}, ConfigError, "no run given"),
    ([RunSpec("missing.jsonl")], {}, InputError, "missing.jsonl"),
    ([RunSpec("{run}")], {"texts": -1}, ConfigError, "--texts"),
])
def test_bad_input(runs: list[RunSpec], kwargs: dict[str, Any], error: type[Exception], message: str,
                   demo_runs: dict[str, Path]) -> None:
    runs = [RunSpec(r.path.format(run=demo_runs["bm25"]), r.name) for r in runs]
    with pytest.raises(error, match=re.escape(message)):
        build_report_data(runs, **kwargs)


def test_bad_run_files(tmp_path: Path) -> None:
    empty, twice = tmp_path / "empty.jsonl", tmp_path / "twice.jsonl"
    empty.write_text("")
    write_jsonl(twice, [{"id": "q", "question": "?", "ctxs": []}] * 2)
    with pytest.raises(InputError, match="holds no questions"):
        build_report_data([RunSpec(str(empty))])
    with pytest.raises(FormatError, match="occurs twice"):
        build_report_data([RunSpec(str(twice))])
    gold, run = tmp_path / "gold.jsonl", tmp_path / "run.jsonl"
    write_jsonl(gold, [{"id": "x", "question": "?", "answers": ["a"]}])
    write_jsonl(run, [{"id": "q1", "question": "?", "answers": ["a"], "ctxs": []}])
    with pytest.raises(InputError, match="no run holds any question"):
        build_report_data([RunSpec(str(run))], gold=str(gold))


def test_cli_writes_page_and_json(demo_runs: dict[str, Path], tmp_path: Path) -> None:
    out, js = tmp_path / "report.html", tmp_path / "report.json"
    result = runner.invoke(app, ["report", str(demo_runs["bm25"]), str(demo_runs["original"]), "--name", "BM25",
                                 "--out", str(out), "--json", str(js), "--k", "1,5,20"])
    assert result.exit_code == 0, result.output
    assert "BM25" in result.output and "0.483" in result.output and "R@5" in result.output
    data = json.loads(js.read_text(encoding="utf-8"))
    assert [run["name"] for run in data["runs"]] == ["BM25", "original"] and data["ks"] == [1, 5, 20]
    assert out.stat().st_size > 100_000


def test_cli_rejects_more_predictions_than_runs(demo_runs: dict[str, Path], tmp_path: Path) -> None:
    result = runner.invoke(app, ["report", str(demo_runs["bm25"]), "--pred", "a.jsonl", "--pred", "b.jsonl",
                                 "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and "ConfigError" in result.output and "at most one" in result.output


def test_atlas_output_with_its_own_generations(tmp_path: Path) -> None:
    atlas = tmp_path / "atlas-step-1.jsonl"
    write_jsonl(atlas, [
        {"id": "a1", "query": "ignored", "question": "Where is the Louvre?", "answers": ["Paris"],
         "generation": "Paris", "passages": [{"title": "Louvre", "text": "The Louvre is in Paris."},
                                             {"title": "Lyon", "text": "Lyon is a city."}]},
        {"id": "a2", "question": "Who painted it?", "answers": ["Leonardo da Vinci"], "generation": "Raphael",
         "passages": [{"title": "Mona Lisa", "text": "Painted by Leonardo da Vinci."}]},
    ])
    data = build_report_data([RunSpec(str(atlas), predictions=str(atlas))])
    first, second = (q["runs"][0] for q in data["questions"])
    assert (first["first"], first["s"], first["pred"], first["em"]) == (1, [None, None], "Paris", 1.0)
    assert (second["first"], second["pred"], second["em"]) == (1, "Raphael", 0.0)
    run = data["runs"][0]
    assert (run["name"], run["exact"], run["predicted"], run["recall"]["1"]) == ("atlas-step-1", 50.0, 2, 1.0)


def _nan_run(path: Path) -> Path:
    """A run whose scores include NaN and Infinity, as a FiD file may hold them (Python's json writes them)."""
    path.write_text(
        '{"id": "q1", "question": "When?", "answers": ["1954"], "ctxs": [{"title": "A", "text": "in 1954", '
        '"score": NaN}, {"title": "B", "text": "later", "score": 2.5}]}\n'
        '{"id": "q2", "question": "Who?", "answers": ["Ann"], "ctxs": [{"title": "C", "text": "Ann", '
        '"score": -Infinity}, {"title": "D", "text": "Bob", "score": Infinity}]}\n', encoding="utf-8")
    return path


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_scores_become_null_and_the_page_json_is_strict(tmp_path: Path) -> None:
    run = _nan_run(tmp_path / "nan.jsonl")
    write_report(ReportConfig((RunSpec(str(run)),), str(tmp_path / "r.html"), json_out=str(tmp_path / "r.json")))
    data = _strict((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [q["runs"][0]["s"] for q in data["questions"]] == [[None, 2.5], [None, None]]
    assert all(q["runs"][0]["nonfinite"] for q in data["questions"])
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<script type="application/json" id="odqa-[^"]+">(.*?)</script>', page, re.S)
    assert blocks and all(_strict(block) is not None for block in blocks)  # JSON.parse reads every block
