"""What `odqa index build` reads: passage JSON Lines, DPR TSV (header optional), question files, crawl folders."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from odqa.errors import FormatError, InputError
from odqa.index.source import open_passages, read_passages
from odqa.io import write_dpr_tsv
from odqa.records import Passage


def test_passage_json_lines_and_json_array(tmp_path: Path) -> None:
    rows = [{"id": 1, "title": "A", "text": "one"}, {"id": "p2", "doc_id": "d", "text": "two"}]
    lines = tmp_path / "p.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = [Passage("1", "1", "A", "one"), Passage("p2", "d", "", "two")]
    assert list(read_passages(lines)) == expected
    array = tmp_path / "p.json"
    array.write_text(json.dumps(rows))
    assert list(read_passages(array)) == expected
    lines.write_text('{"id": "1", "text": "ok"}\n{"title": "no id", "text": "x"}\n')
    with pytest.raises(FormatError, match=r"p\.jsonl:2: a passage needs an 'id' and a 'text' string"):
        list(read_passages(lines))


def test_dpr_tsv_with_and_without_header_and_gzipped(tmp_path: Path) -> None:
    passages = [Passage("1", "Aaron", "Aaron", "Aaron is a prophet."), Passage("2", "B", "B", 'say "hi"\tthere')]
    with_header = tmp_path / "psgs.tsv"
    write_dpr_tsv(with_header, passages)
    assert list(read_passages(with_header)) == passages
    bare = tmp_path / "bare.tsv.gz"
    bare.write_bytes(gzip.compress(with_header.read_bytes().split(b"\n", 1)[1]))
    assert list(read_passages(bare)) == passages


def test_a_question_file_is_chunked_and_each_passage_kept_once(timeqa_file: Path, corpus: list[Passage]) -> None:
    assert len(corpus) == 564 == len({p.id for p in corpus})  # 108 questions share 32 articles
    assert corpus[0].id == "/wiki/Pakistan_Football_Federation:0"
    assert all(len(p.text.split()) <= 100 for p in corpus)


def test_empty_or_missing_input_fails_before_any_work(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="holds no passages"):
        open_passages(empty)
    with pytest.raises(InputError, match="no such file"):
        open_passages(tmp_path / "missing.jsonl")


def test_a_crawl_folder_gives_each_passage_once(tmp_path: Path) -> None:
    from odqa.crawl.store import CrawlStore, PageRow, ResultRow
    from odqa.records import Example

    article = " ".join(f"word{i}" for i in range(250))  # 3 passages
    urls = ["https://en.wikipedia.org/wiki/Geneva", "https://mirror.example/geneva"]  # one page, two URLs
    with CrawlStore(tmp_path / "run" / "crawl.sqlite") as store:
        for qid in ("q1", "q2"):  # two questions sharing the page
            store.add_questions([(Example(id=qid, question="Geneva?"), {"id": qid, "question": "Geneva?"})])
            store.save_lookup(qid, "html", [ResultRow(url, rank, "Geneva") for rank, url in enumerate(urls)],
                              pages=[PageRow(url, "ok", title="Geneva", text=article) for url in urls])
    passages = list(read_passages(tmp_path / "run"))
    assert [len(p.text.split()) for p in passages] == [100, 100, 50]
    assert len({p.doc_id for p in passages}) == 1 and all(p.title == "Geneva" for p in passages)
