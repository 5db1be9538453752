"""JEMHopQA loader on the shipped slice of the real train file, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from odqa.datasets import load_jemhopqa, to_fid
from odqa.errors import FormatError


def test_slice(data_dir: Path) -> None:
    examples = list(load_jemhopqa(data_dir / "jemhopqa" / "train_ver1.2.slice.json"))
    assert len(examples) == 30
    first = examples[0]
    assert first.id == "45cad48d43f222048ea4a498fd29c4a1"
    assert first.answers == ("あまちゃん",)
    assert first.meta["type"] == "comparison"
    assert first.meta["derivations"] == [
        ["仮面ライダー電王", "放送回数", ["49"]],
        ["あまちゃん", "放送回数", ["156"]],
    ]
    assert first.meta["page_ids"] == ["1398776", "2588518"] and first.meta["time_dependent"] is False
    assert any(len(step[2]) > 1 for e in examples for step in e.meta["derivations"])
    fid = {"id": first.id, "question": first.question, "answers": ["あまちゃん"], "ctxs": []}
    assert to_fid(first) == fid


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"derivations": [["a", "b", "c"]]}, r"derivation step \['a', 'b', 'c'\] is not"),
        ({"derivations": "a"}, "derivations must be a list"),
        ({"answer": None}, "question and answer must be strings"),
        ({"page_ids": 5}, "page_ids must be a list of page ids, got int 5"),
        ({"type": ["comparison"]}, r"type must be a string \(compositional or comparison\)"),
    ],
)
def test_records_that_do_not_fit(
    tmp_path: Path, data_dir: Path, change: dict[str, object], message: str
) -> None:
    records = json.loads((data_dir / "jemhopqa" / "train_ver1.2.slice.json").read_text("utf-8"))[:2]
    records[1] |= change
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(FormatError, match=message) as info:
        list(load_jemhopqa(path))
    assert info.value.line == 2


def test_missing_fields(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"qid": "x", "question": "?"}]), encoding="utf-8")
    with pytest.raises(FormatError, match="missing type, answer, derivations"):
        list(load_jemhopqa(path))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"qid": None}, "'qid' must be a string, got null"),
        ({"question": 3}, "question and answer must be strings"),
        ({"page_ids": [None]}, r"page_ids must be a list of page ids, got list \[None\]"),
        ({"time_dependent": "no"}, "time_dependent must be true or false, got 'no'"),
    ],
)
def test_null_or_wrong_type_fields(
    tmp_path: Path, data_dir: Path, change: dict[str, object], message: str
) -> None:
    records = json.loads((data_dir / "jemhopqa" / "train_ver1.2.slice.json").read_text("utf-8"))[:2]
    records[1] |= change
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(FormatError, match=r"bad\.jsonl:2: .*" + message):
        list(load_jemhopqa(path))
