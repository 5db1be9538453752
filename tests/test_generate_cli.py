"""``odqa generate hieradate`` and ``odqa generate pseudo`` end to end through the CLI."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from odqa.cli import app
from odqa.io import read_jsonl

HIERADATE = {"id": "fig1", "question": "Who lived longer, Maceo Anderson or Jacek Karpiński?", "entities": [
    {"entity": "Maceo Anderson", "date_of_birth": "September 3, 1910", "date_of_death": "July 4, 2001"},
    {"entity": "Jacek Karpiński", "date_of_birth": "9 April 1927", "date_of_death": "21 February 2010"}]}
FACTS = [
    {"subject": "Hans Kramers", "relation": "P108", "object": "Utrecht University", "start": "1926",
     "end": "1934"},
    {"subject": "Hans Kramers", "relation": "P108", "object": "Leiden University", "start": "1934",
     "end": "1952"},
]


def write(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_hieradate_command_writes_records_and_config(tmp_path: Path) -> None:
    facts, out = write(tmp_path / "pairs.jsonl", [HIERADATE]), tmp_path / "out" / "probes.jsonl"
    result = CliRunner().invoke(app, ["generate", "hieradate", str(facts), "--out", str(out), "--year-only",
                                      "--seed", "1"])
    assert result.exit_code == 0, result.output
    [(_, record)] = list(read_jsonl(out))
    assert record["ans_reason_1"] == {"year": 90, "month": 0, "day": 0}
    config = json.loads((out.parent / "probes.jsonl.config.json").read_text(encoding="utf-8"))
    assert config["stage"] == "HieraDateConfig" and config["year_only"] is True and config["seed"] == 1


def test_pseudo_command_is_reproducible(tmp_path: Path) -> None:
    facts = write(tmp_path / "facts.jsonl", FACTS)
    outputs = []
    for name in ("a.jsonl", "b.jsonl"):
        result = CliRunner().invoke(app, ["generate", "pseudo", str(facts), "--out", str(tmp_path / name),
                                          "--seed", "9", "--n", "25"])
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    assert len(outputs[0].splitlines()) == 25


def test_bad_input_exits_1_with_one_typed_line(tmp_path: Path) -> None:
    facts = write(tmp_path / "facts.jsonl", [HIERADATE])  # a HieraDate pair is not a temporal fact
    result = CliRunner().invoke(app, ["generate", "pseudo", str(facts), "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 1
    assert "FormatError:" in result.output and "facts.jsonl:1" in result.output
    assert not (tmp_path / "x.jsonl").exists()
