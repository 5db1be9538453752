"""The report in a real browser: headless Chromium opens a report of two runs over the shipped TimeQA slice (BM25,
with predictions, and the original passage order), finds the summary, the chart, highlighted answers and marked
predictions, applies filters and checks the count of questions shown against the report's own data, and saves a
screenshot.

Needs the Debian packages ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them) and selenium (dev extra).
Skipped where they are missing, except under CI (``CI`` set), where a missing browser fails the test.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odqa.bench.browser import headless_chromium, missing
from odqa.report import ReportConfig, RunSpec, write_report

SHOTS = Path(os.environ.get("ODQA_SCREENSHOTS", "")) if os.environ.get("ODQA_SCREENSHOTS") else None


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"the browser test must run in CI: {reason}")
        pytest.skip(reason)
    chrome = headless_chromium(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture(scope="module")
def report(demo_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    import json

    from odqa.io import read_fid, write_jsonl

    folder = tmp_path_factory.mktemp("report")
    out, js, pred = folder / "report.html", folder / "report.json", folder / "pred.jsonl"
    # a reader's predictions for the BM25 run: the gold answer for two questions in three, "1900" otherwise
    write_jsonl(pred, [{"id": e.id, "prediction": e.answers[0] if e.answers and i % 3 else "1900"}
                       for i, e in enumerate(read_fid(demo_runs["bm25"]))])
    write_report(ReportConfig((RunSpec(str(demo_runs["bm25"]), predictions=str(pred)),
                               RunSpec(str(demo_runs["original"]))), str(out), json_out=str(js)))
    return out, json.loads(js.read_text(encoding="utf-8"))


def _wait(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the page did not get there in time")
        time.sleep(0.05)


def _count(chrome: Any) -> str:
    return str(chrome.execute_script("return document.getElementById('count').textContent"))


def _select(chrome: Any, element_id: str, value: str) -> None:
    chrome.execute_script("const s = document.getElementById(arguments[0]); s.value = arguments[1];"
                          "s.dispatchEvent(new Event('change'));", element_id, value)


def test_report_in_headless_chromium(driver: Any, report: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    page, data = report
    driver.get(page.as_uri())
    _wait(lambda: driver.execute_script("return window.odqaReady !== undefined"))

    rows = driver.find_elements(By.CSS_SELECTOR, "table.summary tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "td.name").text.splitlines()[0] for r in rows] == ["bm25", "original"]
    assert f"{data['runs'][0]['recall']['1']:.3f}" == "0.483" and "0.483" in rows[0].text
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.chart polyline.curve")) == 2
    assert _count(driver) == "108 of 108 questions"

    assert "EM %" in driver.find_element(By.CSS_SELECTOR, "table.summary").text
    right = driver.find_elements(By.CSS_SELECTOR, "#list .pred.right")
    wrong = driver.find_elements(By.CSS_SELECTOR, "#list .pred.wrong")
    assert right and wrong and right[0].text.startswith("✓") and wrong[0].text == "✗ 1900"
    marks = driver.find_elements(By.CSS_SELECTOR, "#list mark")
    assert marks and all(m.text for m in marks[:20])
    first = driver.find_element(By.CSS_SELECTOR, "#list article.card")
    answers = [a.lower() for a in data["questions"][0]["answers"]]
    assert any(m.text.lower() in answers for m in first.find_elements(By.CSS_SELECTOR, "mark"))
    driver.save_screenshot(str(tmp_path / "report.png"))
    if SHOTS is not None:
        driver.save_screenshot(str(SHOTS / "report.png"))

    # BM25 finds an answer within k=1 where the original order does not: the count is the data's own.
    _select(driver, "k", "1")
    _select(driver, "hit", "0")
    _select(driver, "miss", "1")
    expected = [q for q in data["questions"] if q["answers"]
                and q["runs"][0]["first"] is not None and q["runs"][0]["first"] <= 1
                and not (q["runs"][1]["first"] is not None and q["runs"][1]["first"] <= 1)]
    assert 0 < len(expected) < 108
    assert _count(driver) == f"{len(expected)} of 108 questions"
    shown = [c.get_attribute("data-qid") for c in driver.find_elements(By.CSS_SELECTOR, "#list article.card")]
    assert shown == [q["id"] for q in expected][: len(shown)] and len(shown) == min(len(expected), 25)

    _select(driver, "hit", "-1")
    _select(driver, "miss", "-1")
    driver.find_element(By.ID, "unanswerable").click()
    unanswerable = sum(not q["answers"] for q in data["questions"])
    assert _count(driver) == f"{unanswerable} of 108 questions" and unanswerable == 19
    driver.find_element(By.ID, "unanswerable").click()

    driver.find_element(By.ID, "search").send_keys("Pakistan Football")
    matching = sum("pakistan football" in q["question"].lower() for q in data["questions"])
    assert 0 < matching < 108
    _wait(lambda: _count(driver) == f"{matching} of 108 questions")

    driver.find_element(By.ID, "search").clear()
    driver.execute_script("document.getElementById('search').dispatchEvent(new Event('input'))")
    _wait(lambda: _count(driver) == "108 of 108 questions")
    _select(driver, "sort", "desc:0")  # never found by BM25 first, then the latest first answers
    ranks = driver.execute_script(
        "return [...document.querySelectorAll('#list article.card')].map(c => c.dataset.qid)")
    by_id = {q["id"]: q["runs"][0]["first"] for q in data["questions"]}
    keys = [float("inf") if by_id[qid] is None else by_id[qid] for qid in ranks]
    assert keys == sorted(keys, reverse=True) and keys[0] == float("inf")
    driver.save_screenshot(str(tmp_path / "sorted.png"))

    driver.find_element(By.CSS_SELECTOR, 'table.summary td.recall[data-run="0"][data-k="5"]').click()
    missed = sum(bool(q["answers"]) and (q["runs"][0]["first"] is None or q["runs"][0]["first"] > 5)
                 for q in data["questions"])
    assert missed == round(89 * (1 - data["runs"][0]["recall"]["5"]))
    assert _count(driver) == f"{missed} of 108 questions"
    assert (tmp_path / "report.png").stat().st_size > 20_000


def test_highlights_land_on_the_answer_past_astral_characters(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from odqa.io import write_jsonl

    run = tmp_path / "run.jsonl"
    text = "𝔘𝔫𝔦 𝔙𝔢𝔯𝔰𝔦𝔱𝔶 😀 was founded in 1954 , Café Müller in 1954"
    write_jsonl(run, [{"id": "q1", "question": "When?", "answers": ["1954", "Cafe\u0301"],
                       "ctxs": [{"title": "T", "text": text, "score": 1.0}]}])
    write_report(ReportConfig((RunSpec(str(run)),), str(tmp_path / "r.html")))
    driver.get((tmp_path / "r.html").as_uri())
    _wait(lambda: driver.execute_script("return window.odqaReady !== undefined"))
    assert [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#list mark")] == ["1954", "Café", "1954"]


def test_a_run_with_nan_scores_draws_its_questions(driver: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = tmp_path / "nan.jsonl"
    run.write_text(
        '{"id": "q1", "question": "When?", "answers": ["1954"], "ctxs": [{"title": "A", "text": "in 1954", '
        '"score": NaN}, {"title": "B", "text": "later", "score": 2.5}]}\n'
        '{"id": "q2", "question": "Who?", "answers": ["Ann"], "ctxs": [{"title": "C", "text": "Ann", '
        '"score": Infinity}]}\n', encoding="utf-8")
    write_report(ReportConfig((RunSpec(str(run)),), str(tmp_path / "r.html")))
    driver.get((tmp_path / "r.html").as_uri())
    _wait(lambda: driver.execute_script("return window.odqaReady !== undefined"))
    assert _count(driver) == "2 of 2 questions"
    cards = driver.find_elements(By.CSS_SELECTOR, "#list article.card")
    assert [c.get_attribute("data-qid") for c in cards] == ["q1", "q2"]
    scores = [s.text for s in driver.find_elements(By.CSS_SELECTOR, "#list .score")]
    assert scores == ["score null", "score 2.5", "score null"]
    assert [m.text for m in driver.find_elements(By.CSS_SELECTOR, "#list mark")][:2] == ["1954", "Ann"]
