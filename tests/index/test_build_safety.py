"""What a build refuses before it writes or deletes anything: a folder that is not an odqa index (even one holding
some other program's manifest.json), a FAISS factory that cannot work, duplicate passage ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from odqa.errors import ConfigError, InputError, OutputError
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
    (out / "faiss.ivfdata").write_bytes(b"left by an IVF assembly killed before the manifest listed it")
    (out / "NOTES.md").write_text("my notes about this index\n")
    (out / "eval").mkdir()
    (out / "eval" / "run.jsonl").write_text("{}\n")
    manifest = build_index(short_corpus[:8], out, tiny_config, encoder=encoder, overwrite=True)
    assert manifest.count == 8 and read_manifest(out).complete
    left = set(tree(out))
    assert {"NOTES.md", "eval/run.jsonl"} <= left  # the user's files survive
    assert (out / "NOTES.md").read_text() == "my notes about this index\n"
    assert not {"shards/00001.passages.jsonl", "shards/00002.vectors.npy", "shards/00009.vectors.npy",
                "shards/.00007.vectors.npy.abc.tmp", "build.config.json", "faiss.ivfdata"} & left
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


def _numbered(count: int, repeats: dict[int, int] | None = None) -> list[Passage]:
    """``count`` passages ``p0``, ``p1``, ...; ``repeats`` gives some position the id of an earlier one."""
    ids = [f"p{i}" for i in range(count)]
    for later, earlier in (repeats or {}).items():
        ids[later] = ids[earlier]
    return [Passage(pid, f"d{i}", f"Title {i}", f"passage number {i} about topic {i % 7}") for i, pid in enumerate(ids)]


@pytest.mark.parametrize(("repeats", "named"), [
    ({5: 2}, "'p2' occurs more than once: passages 3 and 6 of the input"),  # within shard 0
    ({37: 4, 40: 33}, "'p4' occurs more than once: passages 5 and 38 of the input"),  # across shards, first repeat
    ({41: 1, 44: 40}, "'p1' occurs more than once: passages 2 and 42 of the input"),  # earliest repeat: across shards
    ({44: 1, 41: 40}, "'p40' occurs more than once: passages 41 and 42 of the input"),  # ... or within one
])
def test_duplicate_ids_are_refused_naming_the_first_two_places(
        repeats: dict[int, int], named: str, tmp_path: Path, tiny_config: IndexConfig, encoder: Any) -> None:
    out = tmp_path / "index"
    with pytest.raises(InputError, match=named + r" \(counting from 1\); give every passage its own id"):
        build_index(_numbered(48, repeats), out, tiny_config, encoder=encoder)
    later = max(repeats)  # nothing of the shard holding the repeat is listed
    assert sum(s.count for s in read_manifest(out).shards) <= later


def test_a_hash_collision_is_not_a_duplicate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             tiny_config: IndexConfig, encoder: Any) -> None:
    """Every id hashed to the same 64 bits: the ids themselves decide, so a distinct corpus builds."""
    import numpy as np

    from odqa.index import ids as ids_module

    monkeypatch.setattr(ids_module, "_digests", lambda ids: np.zeros(len(ids), dtype=np.uint64))
    assert build_index(_numbered(40), tmp_path / "ok", tiny_config, encoder=encoder).count == 40
    with pytest.raises(InputError, match="'p3' occurs more than once: passages 4 and 36"):
        build_index(_numbered(40, {35: 3}), tmp_path / "bad", tiny_config, encoder=encoder)


def test_id_check_memory_is_eight_bytes_a_passage() -> None:
    """1M ids in shards of 50,000: the remembered hashes are 8 MB (8 bytes each) in at most log2(20) + 1 runs."""
    from odqa.index.ids import IdCheck
    from odqa.index.store import PassageStore

    check, empty = IdCheck(), PassageStore(".", [])
    for start in range(0, 1_000_000, 50_000):
        check.add([f"wiki:{i}" for i in range(start, start + 50_000)], empty)
    assert sum(run.nbytes for run in check.runs) == 8_000_000 and len(check.runs) <= 5
    assert all(bool((run[1:] > run[:-1]).all()) for run in check.runs)  # each run sorted, no repeats
