from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

import odqa
from odqa._version import __version__
from odqa.config import RefineConfig, load_config, write_resolved
from odqa.crawl.config import CrawlConfig
from odqa.errors import ConfigError

ROOT = Path(__file__).parents[1]


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
        ({"scorer": "magic"},
         "scorer must be 'dense', 'bm25', 'hybrid', 'original', 'table' or 'table-hybrid', got 'magic'"),
        ({"embed.precision": "int3"}, "embed.precision must be 'auto', 'fp32', 'fp16' or 'bf16', got 'int3'"),
        ({"embed.cache_limit_gb": 0}, "cache_limit_gb must be > 0, got 0"),
        ({"chunk.words": 1.5}, "chunk.words must be a valid integer, got 1.5"),
        ({"k": True}, "k must be a valid integer, got True"),
        ({"k": "5"}, "k must be a valid integer, got '5'"),
        ({"embed.batch_size": "8"}, "embed.batch_size must be a valid integer, got '8'"),
        ({"embed": 3}, "embed must be a mapping of keys to values, got 3"),
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


def test_crawl_yaml_loads_with_its_list_of_media_types() -> None:
    config = load_config(CrawlConfig, ROOT / "configs" / "crawl.yaml")
    assert config == CrawlConfig() and config.content_types == ("text/html", "application/xhtml+xml")


@pytest.mark.parametrize(
    ("yaml", "message"),
    [
        ("content_types: [1, 2]", "content_types.0 must be a valid string, got 1"),
        ("content_types: text/html", "content_types must be a list, got 'text/html'"),
        ("top: 2.5", "top must be a valid integer, got 2.5"),
        ("search: yahoo", "search must be 'google', 'brave', 'bing', 'searxng' or 'none', got 'yahoo'"),
        ("robots: 'no'", "robots must be a valid boolean, got 'no'"),
        ("contact: [a]", "contact must be a valid string, got ['a']"),
        ("delay: -1", "delay must be >= 0, got -1"),
    ],
)
def test_crawl_yaml_values_are_type_checked(tmp_path: Path, yaml: str, message: str) -> None:
    path = tmp_path / "crawl.yaml"
    path.write_text(yaml + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        load_config(CrawlConfig, path)
    assert "\n" not in str(caught.value)


def test_numbers_and_dates_are_read_as_yaml_means_them(tmp_path: Path) -> None:
    path = tmp_path / "crawl.yaml"
    path.write_text("delay: 1\ncontact: 2026-11-23\n", encoding="utf-8")  # an int for a float; a YAML date
    config = load_config(CrawlConfig, path)
    assert (config.delay, config.contact) == (1.0, "2026-11-23")


def test_python_version_supported_is_the_one_tested() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == ">=3.11" and sys.version_info >= (3, 11)


def test_version_has_one_home_that_config_modules_import() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "odqa._version.__version__"}
    assert odqa.__version__ == __version__
    assert CrawlConfig().user_agent.startswith(f"odqa-crawl/{__version__} ")


def test_no_module_imports_the_package_root() -> None:
    """Imports run from the CLI down to records: a module inside odqa never imports ``odqa`` itself."""
    offenders = []
    for path in sorted((ROOT / "odqa").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            root_from = isinstance(node, ast.ImportFrom) and node.module == "odqa" and node.level == 0
            root_import = isinstance(node, ast.Import) and any(alias.name == "odqa" for alias in node.names)
            if root_from or root_import:
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []
