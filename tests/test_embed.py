from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.config import EmbedConfig
from odqa.embed import PRESETS, Encoder, get_preset, passage_text, query_text, resolve_model
from odqa.errors import ConfigError, ModelError
from odqa.records import Passage

PASSAGE = Passage("p", "d", "Aaron Aaronson", "was an agronomist.")


@pytest.mark.parametrize(
    ("name", "model", "pooling", "normalize", "query", "passage"),
    [
        ("bge-base", "BAAI/bge-base-en-v1.5", "cls", True,
         "Represent this sentence for searching relevant passages: Who?", "Aaron Aaronson was an agronomist."),
        ("contriever", "facebook/contriever", "mean", False, "Who?", "Aaron Aaronson was an agronomist."),
        ("contriever-msmarco", "facebook/contriever-msmarco", "mean", False, "Who?",
         "Aaron Aaronson was an agronomist."),
        ("gte-base", "thenlper/gte-base", "mean", True, "Who?", "Aaron Aaronson was an agronomist."),
        ("e5-base", "intfloat/e5-base-v2", "mean", True, "query: Who?", "passage: Aaron Aaronson was an agronomist."),
        ("minilm", "sentence-transformers/all-MiniLM-L6-v2", "mean", True, "Who?",
         "Aaron Aaronson was an agronomist."),
        ("complex-tr-reference", "BAAI/bge-base-en-v1.5", "mean", False, "Who?", "Aaron Aaronson was an agronomist."),
    ],
)
def test_preset_table(name: str, model: str, pooling: str, normalize: bool, query: str, passage: str) -> None:
    preset = get_preset(name)
    assert (preset.model, preset.pooling, preset.normalize) == (model, pooling, normalize)
    assert preset.score == ("cosine" if normalize else "dot")
    assert query_text("Who?", preset.query_prefix) == query
    assert passage_text(PASSAGE, preset.passage_prefix) == passage


def test_passage_without_title_has_no_leading_space() -> None:
    assert passage_text(Passage("p", "d", "", "body")) == "body"


def test_instruction_is_switchable() -> None:
    assert resolve_model(EmbedConfig(model="bge-base", query_prompt="")).query_prefix == ""


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match=r"unknown embedding preset 'bge'.*bge-base.*complex-tr-reference"):
        resolve_model(EmbedConfig(model="bge"))


def test_presets_fix_pooling_and_other_models_must_state_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="fixes pooling"):
        resolve_model(EmbedConfig(model="bge-base", pooling="mean"))
    with pytest.raises(ConfigError, match="--pooling"):
        resolve_model(EmbedConfig(model=str(tmp_path)))
    adhoc = resolve_model(EmbedConfig(model=str(tmp_path), pooling="cls", normalize=False))
    assert (adhoc.pooling, adhoc.normalize, adhoc.query_prefix) == ("cls", False, "")


def test_missing_weights_give_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"'BAAI/bge-base-en-v1.5' \(preset 'bge-base'\).*'minilm'"):
        Encoder(EmbedConfig(model="bge-base", cache_dir=""))


def test_minilm_matches_the_reference_model(minilm_encoder: Any, minilm_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_path), device="cpu")
    ours = minilm_encoder.encode_passages([PASSAGE])
    theirs = reference.encode([passage_text(PASSAGE)])
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_cache_dedupes_within_and_across_runs(minilm_path: Path, tmp_path: Path) -> None:
    config = EmbedConfig(model="minilm", cache_dir=str(tmp_path), device="cpu")
    passages = [Passage(str(i), "d", "T", f"text number {i % 3}") for i in range(9)]
    first = Encoder(config)
    vectors = first.encode_passages(passages)
    assert first.encoded == 3  # 9 passages, 3 distinct texts
    np.testing.assert_array_equal(vectors[0], vectors[3])
    second = Encoder(config)
    again = second.encode_passages(passages)
    assert second.encoded == 0  # everything came from the persistent cache
    np.testing.assert_allclose(again, vectors, atol=1e-6)


def save_tiny_bert(path: Path, tokenizer_from: Path, seed: int) -> Path:
    """Save a 1-layer BERT with random weights (drawn from ``seed``) and MiniLM's tokenizer at ``path``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_from))
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A tiny random BERT: pooling is checked by hand on it."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_path, seed=0)


@pytest.mark.parametrize(("pooling", "normalize"), [("cls", False), ("mean", False), ("mean", True)])
def test_pooling_and_normalisation_by_hand(tiny_model: Path, pooling: str, normalize: bool) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    encoder = Encoder(EmbedConfig(model=str(tiny_model), pooling=pooling, normalize=normalize,  # type: ignore[arg-type]
                                  cache_dir="", device="cpu"))
    text = "the tiny model pools tokens"
    got = encoder.encode_queries([text])[0]
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_model), AutoModel.from_pretrained(tiny_model)
    with torch.no_grad():
        states = model(**tokenizer([text], return_tensors="pt")).last_hidden_state[0].numpy()
    expected = states[0] if pooling == "cls" else states.mean(axis=0)
    if normalize:
        expected = expected / np.linalg.norm(expected)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_every_preset_has_a_hub_id() -> None:
    assert all("/" in p.model for p in PRESETS.values())


def test_encoder_closes_its_cache(minilm_path: Path, tmp_path: Path) -> None:
    import sqlite3

    with Encoder(EmbedConfig(model="minilm", cache_dir=str(tmp_path), device="cpu")) as encoder:
        encoder.encode_passages([PASSAGE])
        assert encoder.cache is not None
    with pytest.raises(sqlite3.ProgrammingError):  # the connection is closed
        encoder.cache.get_many(["anything"])


def test_retrained_checkpoint_in_place_never_reuses_cached_vectors(minilm_path: Path, tmp_path: Path) -> None:
    model, cache = tmp_path / "checkpoint", tmp_path / "cache"
    config = EmbedConfig(model=str(model), pooling="mean", normalize=True, cache_dir=str(cache), device="cpu")
    save_tiny_bert(model, minilm_path, seed=1)
    before = Encoder(config)
    old = before.encode_passages([PASSAGE])
    before.close()
    save_tiny_bert(model, minilm_path, seed=2)  # same config.json, new weights, same folder
    after = Encoder(config)
    new = after.encode_passages([PASSAGE])
    after.close()
    assert after.encoded == 1  # a cache miss: the old vector was not served for the new weights
    assert after.fingerprint != before.fingerprint
    assert not np.allclose(old, new)
