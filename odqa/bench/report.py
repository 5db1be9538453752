"""``odqa report`` at scale: file size, build time and, in headless Chromium, time to first paint and to a usable
page, for a synthetic report of N questions x M passages (two runs over the same passages in different orders).

Every passage is distinct (100 pseudo-words, no sharing between questions): the worst case for the page's size,
since the passage table stores each distinct passage once. Needs Chromium and its driver (Debian packages
``chromium`` and ``chromium-driver``) and selenium (the dev extra): ``odqa bench report`` (500 questions with
``--quick``).
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path
from typing import Any

from odqa.bench._common import say
from odqa.bench.browser import headless_chromium, missing
from odqa.errors import InputError
from odqa.io import write_jsonl
from odqa.report import ReportConfig, RunSpec, write_report

__all__ = ["missing", "run", "write_synthetic"]


def _vocabulary(rng: random.Random, size: int = 6000) -> list[str]:
    syllables = ["ka", "ro", "mi", "ten", "sa", "lu", "ber", "do", "an", "vi", "gor", "el", "ne", "tor", "is", "pa"]
    return sorted({"".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(size * 2)})[:size]


def write_synthetic(folder: Path, questions: int, passages: int, seed: int = 0) -> tuple[Path, Path]:
    """Two runs (FiD JSON Lines) of ``questions`` x ``passages``; about 10 % of questions have no gold answer and
    the answer of the others sits in a few random passages."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    rows_a: list[dict[str, Any]] = []
    rows_b: list[dict[str, Any]] = []
    for q in range(questions):
        answer = " ".join(rng.choices(vocab, k=2)).title()
        answers = [] if rng.random() < 0.1 else [answer]
        ctxs = []
        holders = set(rng.sample(range(passages), k=rng.randint(0, 4))) if answers else set()
        for p in range(passages):
            words = rng.choices(vocab, k=100)
            if p in holders:
                words[rng.randrange(95)] = answer
            title = f"Article {q // 4} {p // 10}"
            ctxs.append({"id": f"q{q}-p{p}", "title": title, "text": " ".join(words).capitalize() + ".",
                         "url": "https://en.wikipedia.org/wiki/" + title.replace(" ", "_"),
                         "score": round(30 - p * 0.25 + rng.random(), 4)})
        question = "When did " + " ".join(rng.choices(vocab, k=rng.randint(6, 12))) + "?"
        rows_a.append({"id": f"q{q}", "question": question, "answers": answers, "ctxs": ctxs})
        shuffled = rng.sample(ctxs, k=len(ctxs))
        rows_b.append({"id": f"q{q}", "question": question, "answers": answers,
                       "ctxs": [{**c, "score": round(1 - i / passages, 4)} for i, c in enumerate(shuffled)]})
    a, b = folder / "ranked.jsonl", folder / "shuffled.jsonl"
    write_jsonl(a, rows_a)
    write_jsonl(b, rows_b)
    return a, b


def measure_browser(page: Path, profile: Path) -> dict[str, float]:
    """Load the page from disk: first (contentful) paint, the page's script reached (the HTML parsed), its data
    parsed, the first questions drawn (usable); then one filter and sort change, timed in the page."""
    driver = headless_chromium(profile)
    try:
        started = time.perf_counter()
        driver.get(page.as_uri())
        loaded = time.perf_counter() - started
        driver.execute_script("return 1")
        deadline = time.time() + 120
        while driver.execute_script("return window.odqaReady === undefined") and time.time() < deadline:
            time.sleep(0.05)
        paint = {e["name"]: e["startTime"] for e in driver.execute_script(
            "return performance.getEntriesByType('paint').map(e => ({name: e.name, startTime: e.startTime}))")}
        filter_ms = driver.execute_script("""
            const t = performance.now();
            const miss = document.getElementById('miss'); miss.value = '1';
            miss.dispatchEvent(new Event('change'));
            const sort = document.getElementById('sort'); sort.value = 'asc:0';
            sort.dispatchEvent(new Event('change'));
            return performance.now() - t;""")
        heap = driver.execute_script("return performance.memory ? performance.memory.usedJSHeapSize : null")
        times = driver.execute_script("return window.odqaTimes")
        return {"driver_get_s": round(loaded, 2), "first_paint_ms": round(paint.get("first-paint", -1)),
                "first_contentful_paint_ms": round(paint.get("first-contentful-paint", -1)),
                "html_parsed_ms": round(times["scriptStart"]), "data_parsed_ms": round(times["dataParsed"]),
                "usable_ms": round(times["ready"]),
                "filter_and_sort_ms": round(filter_ms), "js_heap_mb": round(heap / 1e6) if heap else -1}
    finally:
        driver.quit()


def run(quick: bool = False, *, questions: int | None = None, passages: int = 100,
        texts: tuple[int, ...] = (20, 100)) -> dict[str, Any]:
    """Size, build time and browser timings of a report of ``questions`` (5,000; 500 in ``quick``) x ``passages``
    for each ``texts`` (passage texts kept per question)."""
    reason = missing()
    if reason:
        raise InputError(f"odqa bench report needs headless Chromium: {reason}")
    questions = questions or (500 if quick else 5000)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        a, b = write_synthetic(folder, questions, passages)
        for kept in texts:
            page = folder / f"report-{kept}.html"
            started = time.perf_counter()
            summary = write_report(ReportConfig((RunSpec(str(a)), RunSpec(str(b))), str(page), texts=kept))
            build_s = time.perf_counter() - started
            row = {"questions": questions, "passages": passages, "runs": 2, "texts": kept,
                   "html_mb": round(summary.bytes / 1e6, 1), "build_s": round(build_s, 1),
                   **measure_browser(page, folder / f"profile-{kept}")}
            say(f"  texts {kept}: {row['html_mb']} MB, built in {row['build_s']} s, usable in {row['usable_ms']} ms")
            rows.append(row)
    return {"rows": rows}
