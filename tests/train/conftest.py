"""Fixtures of the training tests: a tiny random encoder and the planted task's vocabulary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # planted.py


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A 1-layer BERT of width 32 with random weights and MiniLM's tokenizer: a plain encoder folder. No dropout:
    at width 32 it drowns the planted signal in the few steps a test can afford."""
    from odqa.embed.tiny import save_random_bert

    return save_random_bert(tmp_path_factory.mktemp("tiny-encoder"), minilm_path, seed=0, layers=1,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="session")
def tiny_encoder_with_dropout(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """The same with BERT's dropout (0.1): a resumed run must restore the RNG that draws its masks."""
    from odqa.embed.tiny import save_random_bert

    return save_random_bert(tmp_path_factory.mktemp("tiny-dropout"), minilm_path, seed=0, layers=1)


@pytest.fixture(scope="session")
def words(minilm_path: Path) -> list[str]:
    from planted import vocabulary

    return vocabulary(minilm_path)
