"""What a build refuses before it writes or deletes anything: a folder that is not an odqa index (even one holding
some other program's manifest.json), a FAISS factory that cannot work, duplicate passage ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odqa.errors import ConfigError, OutputError
from odqa.index.build import build_index
from odqa.index.config import IndexConfig
from odqa.index.manifest import read_manifest
from odqa.records import Passage


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_refuses_a_folder_whose_manifest_is_not_odqa_s(tmp_path: Path, short_corpus: list[Passage],
                                                                 tiny_config: IndexConfig, encoder: Any) -> None:
    """A web app's folder: a manifest.json of its own and src/. --overwrite must leave every byte of it."""
    app = tmp_path / "webapp"
    (app / "src").mkdir(parents=True)
    (app / "manifest.json").write_text(json.dumps({"name": "My App", "start_url": "/", "icons": []}))
    (app / "src" / "app.js").write_text("console.log('hello')\n")
    (app / "index.html").write_text("<html></html>\n")
    before = tree(app)
    with pytest.raises(OutputError, match=rf"^{app}: its manifest.json is not an odqa index manifest .*"
                                          r"--overwrite replaces only an odqa index; choose another --out folder"):
        build_index(short_corpus[:8], app, tiny_config, encoder=encoder, overwrite=True)
    assert tree(app) == before
    (app / "manifest.json").write_text("not json at all")
    before = tree(app)
    with pytest.raises(OutputError, match="is not an odqa index manifest"):
        build_index(short_corpus[:8], app, tiny_config, encoder=encoder, overwrite=True)
    assert tree(app) == before


def test_overwrite_removes_only_the_index_s_own_files(tmp_path: Path, short_corpus: list[Passage],
                                                      tiny_config: IndexConfig, encoder: Any) -> None:
    out = tmp_path / "index"
    build_index(short_corpus[:40], out, tiny_config, encoder=encoder)  # shards 0..2
    (out / "build.config.json").write_text("{}")  # what the CLI writes beside the index
    (out / "shards" / ".00007.vectors.npy.abc.tmp").write_bytes(b"left by a kill mid-write")
    (out / "shards" / "00009.vectors.npy").write_bytes(b"written, never listed")
    (out / "NOTES.md").write_text("my notes about this index\n")
    (out / "eval").mkdir()
    (out / "eval" / "run.jsonl").write_text("{}\n")
    manifest = build_index(short_corpus[:8], out, tiny_config, encoder=encoder, overwrite=True)
    assert manifest.count == 8 and read_manifest(out).complete
    left = set(tree(out))
    assert {"NOTES.md", "eval/run.jsonl"} <= left  # the user's files survive
    assert (out / "NOTES.md").read_text() == "my notes about this index\n"
    assert not {"shards/00001.passages.jsonl", "shards/00002.vectors.npy", "shards/00009.vectors.npy",
                "shards/.00007.vectors.npy.abc.tmp", "build.config.json"} & left
    indexed = {entry.name for shard in manifest.shards for entry in shard.files.values()}
    assert left == indexed | {entry.name for entry in manifest.index_files.values()} | {
        "manifest.json", "NOTES.md", "eval/run.jsonl"}


def test_overwrite_never_follows_a_manifest_out_of_its_folder(tmp_path: Path, short_corpus: list[Passage],
                                                              tiny_config: IndexConfig, encoder: Any) -> None:
    out = tmp_path / "index"
    build_index(short_corpus[:8], out, tiny_config, encoder=encoder)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    raw = json.loads((out / "manifest.json").read_text())
    raw["index_files"]["faiss"]["name"] = "../precious.txt"
    (out / "manifest.json").write_text(json.dumps(raw))
    with pytest.raises(OutputError, match="names a file outside the folder"):
        build_index(short_corpus[:8], out, tiny_config, encoder=encoder, overwrite=True)
    assert precious.read_text() == "keep me"


@pytest.mark.parametrize(("factory", "why"), [
    ("IDMap,Flat", "IDMap"), ("IDMap2,HNSW32", "IDMap"), ("Bogus12", "FAISS cannot build 'Bogus12'"),
    ("IVF16,PQ7", "FAISS cannot build 'IVF16,PQ7'")])  # PQ7: 32 dimensions are not a multiple of 7
def test_a_factory_that_cannot_work_is_refused_before_any_encoding(
        factory: str, why: str, tmp_path: Path, short_corpus: list[Passage], tiny_config: IndexConfig,
        encoder: Any) -> None:
    import dataclasses

    encoded = encoder.encoded
    out = tmp_path / "index"
    with pytest.raises(ConfigError, match=why):
        build_index(short_corpus, out, dataclasses.replace(tiny_config, faiss=factory), encoder=encoder)
    assert encoder.encoded == encoded and not out.exists()  # nothing encoded, nothing written
