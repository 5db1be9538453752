"""Tiny readers for the reader tests: a word-level tokenizer trained on the fly and random-weight T5 models.

No T5 weights can be had offline; a model of one or two layers of width 32-64 over a vocabulary of ~40 words trains
in seconds, so tests can check real learning.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reader_tasks import vocabulary_texts, word_tokenizer


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """Tiny models on a shared 2-core machine: one torch thread is 20x faster than two contending ones."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    return word_tokenizer(vocabulary_texts())


@pytest.fixture(scope="session")
def tiny_reader_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    """A 2-layer, width-64 random T5 with the word tokenizer, saved as a folder (no dropout: fast learning)."""
    from odqa.read.tiny import save_random_t5

    return save_random_t5(tmp_path_factory.mktemp("tiny-t5"), tokenizer, d_model=64, d_ff=128, d_kv=32,
                          num_layers=2, dropout=0.0)


@pytest.fixture(scope="session")
def dropout_reader_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    """A 1-layer random T5 with dropout on, so an exact resume must restore the RNG state too."""
    from odqa.read.tiny import save_random_t5

    return save_random_t5(tmp_path_factory.mktemp("tiny-t5-dropout"), tokenizer, dropout=0.1)
