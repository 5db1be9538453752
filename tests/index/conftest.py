"""Fixtures for index and corpus-retrieval tests: a small real corpus (the shipped TimeQA slice, chunked) and a
tiny randomly initialised encoder for the mechanics (building, resuming, checking) that need no real model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from odqa.config import ChunkConfig, EmbedConfig
from odqa.index.build import build_index, open_encoder
from odqa.index.config import IndexConfig
from odqa.index.source import read_passages
from odqa.records import Passage

TIMEQA = Path(__file__).parents[2] / "odqa" / "demo" / "data" / "timeqa_hard_slice.jsonl.gz"


@pytest.fixture(scope="session")
def timeqa_file() -> Path:
    """108 TimeQA hard questions over 32 Wikipedia articles (BSD-3-Clause, shipped with the demo)."""
    return TIMEQA


@pytest.fixture(scope="session")
def corpus() -> list[Passage]:
    """All 564 100-word passages of the slice's articles."""
    return list(read_passages(TIMEQA))


@pytest.fixture(scope="session")
def short_corpus() -> list[Passage]:
    """The articles cut into 30-word passages, the first 60: cheap to embed."""
    return list(read_passages(TIMEQA, ChunkConfig(words=30)))[:60]


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A 1-layer BERT with random weights and MiniLM's tokenizer: fast, and enough for index mechanics."""
    from odqa.embed.tiny import save_random_bert

    return save_random_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_path)


@pytest.fixture(scope="session")
def tiny_config(tiny_bert: Path) -> IndexConfig:
    """A dense index over the tiny model, 16 passages a shard."""
    return IndexConfig(kind="dense", shard_size=16,
                       embed=EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, device="cpu"))


@pytest.fixture(scope="session")
def encoder(tiny_config: IndexConfig) -> Iterator[Any]:
    """The tiny model's encoder, without an embedding cache (as index builds run it)."""
    enc = open_encoder(tiny_config)
    yield enc
    enc.close()


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, short_corpus: list[Passage], tiny_config: IndexConfig,
              encoder: Any) -> Path:
    """An uninterrupted dense build of the 60 short passages (4 shards of 16, the last of 12); do not modify it."""
    out = tmp_path_factory.mktemp("reference") / "index"
    build_index(short_corpus, out, tiny_config, encoder=encoder)
    return out


@pytest.fixture(scope="session")
def kill_when_blocked() -> Callable[..., None]:
    """Runs ``python -c SCRIPT ARGS...`` until the script prints "blocked" (where it then waits), and SIGKILLs it
    there: a build killed at exactly the point the script chose."""

    def run(script: str, *args: str) -> None:
        with subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"}) as proc:
            try:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "blocked"
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()

    return run
