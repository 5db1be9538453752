"""One definition of what makes a vector (:class:`~odqa.embed.VectorSpec`), read by the embedding cache, refine's
encoder check, a dense index's manifest and the query-time check; a local model folder's digest travels with it."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from odqa.config import EmbedConfig
from odqa.embed import Encoder, VectorSpec
from odqa.embed.spec import INDEX_FIELDS, PASSAGE_FIELDS, folder_digest
from odqa.errors import ConfigError, IndexMismatchError
from odqa.records import Passage

PASSAGES = [Passage(id=f"p{i}", doc_id="d", title="T", text=f"passage number {i} about a house") for i in range(6)]


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    from odqa.embed.tiny import save_random_bert

    return save_random_bert(tmp_path_factory.mktemp("spec-bert"), minilm_path, layers=1, max_positions=64)


def tiny(folder: Path, **options: object) -> EmbedConfig:
    return EmbedConfig(model=str(folder), pooling="mean", normalize=True, device="cpu", precision="fp32",
                       backend="torch", **options)  # type: ignore[arg-type]


def test_the_cache_key_is_the_spec_without_the_query_prefix(model_folder: Path, tmp_path: Path) -> None:
    with Encoder(tiny(model_folder, cache_dir=str(tmp_path))) as encoder:
        spec = encoder.spec
        assert spec.model_digest == folder_digest(model_folder)  # a local folder that is not a preset
        assert encoder.fingerprint == spec.fingerprint()
        assert encoder.cache is not None
        (identity, _), = encoder.cache.info().models.values()
        assert json.loads(identity) == spec.passage_key() and "query_prefix" not in json.loads(identity)
    for name in PASSAGE_FIELDS:  # each of them names other vectors; the query prefix does not
        other = {"model": "x", "pooling": "cls", "normalize": False, "passage_prefix": "p: ", "max_seq_length": 7,
                 "precision": "bf16", "backend": "openvino", "model_digest": "d"}[name]
        assert dataclasses.replace(spec, **{name: other}).fingerprint() != spec.fingerprint(), name
    assert dataclasses.replace(spec, query_prefix="q: ").fingerprint() == spec.fingerprint()
    assert set(INDEX_FIELDS) <= set(PASSAGE_FIELDS)


def test_refine_and_an_index_manifest_read_the_same_spec(model_folder: Path, tmp_path: Path) -> None:
    from odqa.index import IndexConfig, build_index, open_encoder
    from odqa.index.manifest import read_manifest
    from odqa.refine import check_encoder

    config = IndexConfig(kind="dense", embed=dataclasses.replace(tiny(model_folder), precision="auto"))
    with open_encoder(config) as encoder:
        manifest = build_index(PASSAGES, tmp_path / "index", config, encoder=encoder)
        spec = encoder.spec
        check_encoder(config.embed, encoder)  # auto accepts what it resolved to
        with pytest.raises(ConfigError, match=r"passage_prefix '' \(encoder\) vs 'p: ' \(config\)"):
            check_encoder(dataclasses.replace(config.embed, passage_prompt="p: "), encoder)
    assert VectorSpec.from_json(read_manifest(tmp_path / "index").settings) == spec
    assert manifest.settings["precision"] == spec.precision != "auto"  # what ran, not "auto"
    assert manifest.settings["model_digest"] == folder_digest(model_folder)


def test_a_model_folder_changed_since_the_build_is_refused_at_query_time(model_folder: Path,
                                                                         tmp_path: Path) -> None:
    from odqa.embed.tiny import save_random_bert
    from odqa.index import IndexConfig, build_index, open_encoder
    from odqa.retrieve.compose import load_retriever

    folder = shutil.copytree(model_folder, tmp_path / "model")
    config = IndexConfig(kind="dense", embed=tiny(folder))
    with open_encoder(config) as encoder:
        build_index(PASSAGES, tmp_path / "index", config, encoder=encoder)
    retriever = load_retriever(tmp_path / "index", device="cpu")  # unchanged: searches
    assert [h.passage.id for h in retriever.search(["passage number 3"], 6)[0]] != []
    retriever.close()
    save_random_bert(folder, folder, seed=1, layers=1, max_positions=64)  # retrained in place: same shapes
    with pytest.raises(IndexMismatchError, match=r"the model folder .*model changed since .*index was built.*"
                                                 r"rebuild the index") as caught:
        load_retriever(tmp_path / "index", device="cpu")
    assert "\n" not in str(caught.value)


def test_an_index_of_an_older_odqa_without_a_digest_still_opens(model_folder: Path, tmp_path: Path) -> None:
    from odqa.index import IndexConfig, build_index, open_encoder
    from odqa.index.manifest import read_manifest, write_manifest
    from odqa.retrieve.compose import load_retriever

    config = IndexConfig(kind="dense", embed=tiny(model_folder))
    with open_encoder(config) as encoder:
        build_index(PASSAGES, tmp_path / "index", config, encoder=encoder)
    manifest = read_manifest(tmp_path / "index")
    del manifest.settings["model_digest"]
    write_manifest(tmp_path / "index", manifest)
    load_retriever(tmp_path / "index", device="cpu").close()


def test_a_preset_has_no_digest(no_model_load: type[Exception], monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    monkeypatch.setattr(Encoder, "_load", lambda self: SimpleNamespace(device="cpu"))
    with Encoder(EmbedConfig(model="minilm", cache_dir="", device="cpu", backend="torch", precision="fp32")) as e:
        assert e.spec.model_digest is None and e.spec.model == "sentence-transformers/all-MiniLM-L6-v2"


def test_an_index_builds_config_records_what_ran(model_folder: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from odqa.cli import app
    from odqa.index.manifest import read_manifest
    from odqa.io import write_jsonl

    passages = tmp_path / "passages.jsonl"
    write_jsonl(passages, [{"id": p.id, "title": p.title, "text": p.text} for p in PASSAGES])
    result = CliRunner().invoke(app, ["index", "build", str(passages), "--model", str(model_folder), "--pooling",
                                      "mean", "--normalize", "--device", "cpu", "--out", str(tmp_path / "index")])
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "index" / "build.config.json").read_text(encoding="utf-8"))["embed"]
    settings = read_manifest(tmp_path / "index").settings
    assert (written["precision"], written["backend"]) == (settings["precision"], settings["backend"])
    assert "auto" not in (written["precision"], written["backend"])


def test_only_odqa_embed_knows_where_vectors_and_converted_models_lie() -> None:
    """odqa cache info/clear and the benchmarks ask odqa.embed.folders; no module elsewhere names the layout."""
    package = Path(__file__).parents[1] / "odqa"
    layout = ("CACHE_FILE", "EmbeddingCache", "converted_folder", "embeddings.sqlite", "MODELS_DIR", "IR_FILE")
    wrong = sorted(f"{path.relative_to(package)}: {name}" for path in package.rglob("*.py")
                   if path.parent.name != "embed" for name in layout if name in path.read_text(encoding="utf-8"))
    assert wrong == []
