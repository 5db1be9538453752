from __future__ import annotations

import re
from pathlib import Path

import pytest

from odqa.config import RefineConfig, load_config, write_resolved
from odqa.errors import ConfigError


def test_yaml_with_nested_sections_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "refine.yaml"
    path.write_text("k: 20\nscorer: bm25\nchunk:\n  words: 50\nembed:\n  model: e5-base\n")
    cfg = load_config(RefineConfig, path, k=None, **{"embed.batch_size": 8, "hybrid.temporal_weight": 0.0})
    assert (cfg.k, cfg.scorer, cfg.chunk.words, cfg.embed.model, cfg.embed.batch_size) == (20, "bm25", 50, "e5-base", 8)
    assert cfg.hybrid.temporal_weight == 0.0


def test_unknown_keys_are_rejected_with_the_valid_ones(tmp_path: Path) -> None:
    path = tmp_path / "refine.yaml"
    path.write_text("k: 20\ntopk: 5\n")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['topk'\].*valid keys"):
        load_config(RefineConfig, path)
    path.write_text("embed:\n  modle: minilm\n")
    with pytest.raises(ConfigError, match="embed: unknown key"):
        load_config(RefineConfig, path)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"k": 0}, "k must be >= 1, got 0"),
        ({"scorer": "magic"}, "scorer must be 'dense' | 'bm25' | 'hybrid' | 'original', got 'magic'"),
        ({"embed.precision": "int3"}, "precision must be 'fp32' | 'fp16' | 'bf16', got 'int3'"),
        ({"chunk.words": 1.5}, "words must be int, got 1.5"),
        ({"hybrid.bm25_weight": -1}, "bm25_weight must be >= 0"),
    ],
)
def test_invalid_values_say_what_is_valid(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(RefineConfig, None, **overrides)


def test_shipped_config_files_load() -> None:
    for path in (Path(__file__).parents[1] / "configs").glob("refine*.yaml"):
        assert isinstance(load_config(RefineConfig, path), RefineConfig)


def test_resolved_config_is_written_next_to_the_output(tmp_path: Path) -> None:
    target = write_resolved(RefineConfig(k=7), tmp_path / "out.jsonl")
    assert target.name == "out.jsonl.config.json" and '"k": 7' in target.read_text()
