"""The OpenVINO backend: same vectors as torch (to fp32 rounding, or bf16's top-10), chosen by ``auto`` on CPUs, its
converted model kept and reused, and torch when a model cannot be converted."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.chunk import chunk
from odqa.config import EmbedConfig, RefineConfig
from odqa.embed import Encoder, resolve_backend
from odqa.embed import encoder as encoder_module
from odqa.embed.openvino import IR_FILE
from odqa.embed.tiny import save_random_bert
from odqa.errors import ConfigError, DependencyError
from odqa.inputs import load_examples
from odqa.records import Example, Passage

openvino = pytest.importorskip("openvino")

TIMEQA = Path(__file__).parent / "data" / "timeqa" / "human_train.hard.slice.jsonl"


@pytest.fixture(scope="module")
def timeqa() -> tuple[list[str], list[Passage]]:
    """The TimeQA slice's questions and their passages (every question ranks all of them)."""
    examples = list(load_examples(TIMEQA))
    passages = list({p.text: p for e in examples for p in chunk(e.ctxs or ())}.values())
    return [e.question for e in examples], passages


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One vector cache folder for this module's MiniLM encoders (converted models: the session's folder)."""
    return str(tmp_path_factory.mktemp("openvino-cache"))


def minilm(backend: str, precision: str, cache: str) -> Encoder:
    return Encoder(EmbedConfig(model="minilm", backend=backend, precision=precision,  # type: ignore[arg-type]
                               cache_dir=cache, device="cpu"))


@pytest.fixture(scope="module")
def torch_fp32(cache: str) -> Encoder:
    return minilm("torch", "fp32", cache)


@pytest.fixture(scope="module")
def openvino_fp32(cache: str) -> Encoder:
    return minilm("openvino", "fp32", cache)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))


def top10(queries: np.ndarray, passages: np.ndarray) -> list[set[int]]:
    return [set(np.argsort(-row, kind="stable")[:10].tolist()) for row in queries @ passages.T]


def test_openvino_fp32_vectors_are_torch_fp32_vectors(torch_fp32: Encoder, openvino_fp32: Encoder,
                                                      timeqa: tuple[list[str], list[Passage]]) -> None:
    questions, passages = timeqa
    assert openvino_fp32.backend == "openvino" and torch_fp32.backend == "torch"
    for encode in (lambda e: e.encode_passages(passages), lambda e: e.encode_queries(questions)):
        ours, theirs = encode(openvino_fp32), encode(torch_fp32)
        assert ours.shape == theirs.shape
        assert cosines(ours, theirs).min() >= 0.9999
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)  # the preset normalises


@pytest.mark.parametrize("backend", ["openvino", "torch"])
def test_bf16_keeps_the_fp32_top10(backend: str, torch_fp32: Encoder, cache: str,
                                   timeqa: tuple[list[str], list[Passage]]) -> None:
    """Runs on every CPU: where bf16 is native, its vectors; elsewhere, its refusal (emulated bf16 ran 8x slower)."""
    from odqa.embed.openvino import cpu_bf16

    questions, passages = timeqa
    if not cpu_bf16():
        with pytest.raises(ConfigError, match=r"precision 'bf16' would run emulated on this CPU") as caught:
            minilm(backend, "bf16", cache)
        assert "\n" not in str(caught.value)
        return
    fp32 = torch_fp32.encode_passages(passages)  # from the cache after the first call
    reference = top10(torch_fp32.encode_queries(questions), fp32)
    bf16 = minilm(backend, "bf16", cache)
    vectors = bf16.encode_passages(passages)
    # bf16 really computes in bf16 (it is not fp32 under another name), and stays close to it
    assert not np.allclose(vectors, fp32, atol=1e-6, rtol=0)
    assert cosines(vectors, fp32).min() >= 0.999
    ranked = top10(bf16.encode_queries(questions), vectors)
    assert np.mean([len(a & b) / 10 for a, b in zip(ranked, reference, strict=True)]) >= 0.99


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    return save_random_bert(tmp_path_factory.mktemp("tiny-bert-ov"), minilm_path, layers=2, max_positions=128)


@pytest.mark.parametrize(("pooling", "normalize"), [("cls", False), ("mean", False), ("mean", True)])
def test_every_pooling_mode_matches_torch(tiny_bert: Path, pooling: str, normalize: bool, cache: str,
                                          timeqa: tuple[list[str], list[Passage]]) -> None:
    texts = timeqa[0] + [p.text for p in timeqa[1][:10]]
    vectors = {}
    for backend in ("torch", "openvino"):
        encoder = Encoder(EmbedConfig(model=str(tiny_bert), pooling=pooling, normalize=normalize,  # type: ignore[arg-type]
                                      backend=backend, precision="fp32", cache_dir=cache, device="cpu"))
        assert encoder.backend == backend
        vectors[backend] = encoder.encode_queries(texts)
    assert cosines(vectors["openvino"], vectors["torch"]).min() >= 0.9999
    np.testing.assert_allclose(vectors["openvino"], vectors["torch"], rtol=1e-3, atol=1e-4)  # lengths too


def test_auto_is_openvino_on_cpus_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_backend("auto", "cpu", "fp32") == "openvino"
    assert resolve_backend("auto", "cuda:0", "fp16") == "torch"
    assert resolve_backend("auto", "cuda", "bf16") == "torch"
    assert resolve_backend("auto", "cpu", "fp16") == "torch"  # OpenVINO is not offered fp16 on CPUs
    assert resolve_backend("torch", "cpu", "fp32") == "torch"
    monkeypatch.setattr(encoder_module, "supports", lambda precision: precision == "fp32")
    assert resolve_backend("auto", "cpu", "bf16") == "torch"  # a CPU without native bf16


def test_auto_is_torch_where_openvino_does_not_import(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    real = importlib.import_module

    def no_openvino(name: str, package: str | None = None) -> Any:
        if name == "openvino":
            raise ImportError("No module named 'openvino'")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_openvino)
    assert resolve_backend("auto", "cpu", "fp32") == "torch"
    with pytest.raises(DependencyError, match=r"'openvino' is not installed; install it with: pip install "
                                              r"'odqa\[embed\]'"):
        resolve_backend("openvino", "cpu", "fp32")


@pytest.mark.parametrize(("device", "precision", "match"), [
    ("cuda:0", "fp16", r"backend 'openvino' runs on the CPU, not on 'cuda:0'; pass --device cpu"),
    ("cpu", "fp16", r"backend 'openvino' does not run precision 'fp16' on this CPU; pass --precision fp32"),
])
def test_an_openvino_that_cannot_run_is_one_typed_line(device: str, precision: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        resolve_backend("openvino", device, precision)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_an_unknown_backend_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"backend 'onnx' is not valid; choose one of: auto, torch, openvino"):
        EmbedConfig(backend="onnx")  # type: ignore[arg-type]


def test_backends_have_their_own_cache_fingerprints(torch_fp32: Encoder, openvino_fp32: Encoder) -> None:
    assert torch_fp32.fingerprint != openvino_fp32.fingerprint
    assert (torch_fp32.config.backend, openvino_fp32.config.backend) == ("torch", "openvino")


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts calls of ``openvino.convert_model``."""
    calls: list[int] = []
    real = openvino.convert_model

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(openvino, "convert_model", counted)
    yield calls


def test_the_converted_model_is_saved_once_and_reused(tiny_bert: Path, tmp_path: Path,
                                                     conversions: list[int]) -> None:
    def config(**folders: str) -> EmbedConfig:
        return EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, backend="openvino",
                           precision="fp32", device="cpu", **folders)  # type: ignore[arg-type]

    first = Encoder(config(cache_dir=str(tmp_path / "vectors"), converted_dir=str(tmp_path / "converted")))
    vectors = first.encode_queries(["a question", "another, longer question"])
    assert len(conversions) == 1
    (saved,) = (tmp_path / "converted").glob(f"*/{IR_FILE}")  # a folder of its own, not in the vector cache
    assert saved.with_suffix(".bin").is_file() and not list((tmp_path / "vectors").rglob(IR_FILE))
    assert not [p for p in (tmp_path / "converted").iterdir() if p.name.startswith(".")]  # no staging left behind
    # Read back, not converted again, whether vectors are cached or not (an index build, a query encoder, --no-cache)
    for cache_dir in (str(tmp_path / "vectors"), ""):
        again = Encoder(config(cache_dir=cache_dir, converted_dir=str(tmp_path / "converted")))
        np.testing.assert_array_equal(again.encode_queries(["a question", "another, longer question"]), vectors)
    assert len(conversions) == 1
    Encoder(config(cache_dir="", converted_dir=""))
    assert len(conversions) == 2  # without a converted-models folder it converts in memory


def test_a_converted_models_folder_that_cannot_be_written_still_encodes(
    tiny_bert: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="odqa.embed.openvino"):
        encoder = Encoder(EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, backend="openvino",
                                      precision="fp32", device="cpu", cache_dir="", converted_dir=str(blocked)))
    assert encoder.backend == "openvino" and encoder.encode_queries(["q"]).shape == (1, 32)
    assert "cannot keep the converted model" in caplog.text


def test_a_model_openvino_cannot_convert_falls_back_to_torch(
    tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def fails(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Cannot convert operation aten::strange\nwith a long trace")

    monkeypatch.setattr(openvino, "convert_model", fails)
    settings = {"model": str(tiny_bert), "pooling": "mean", "normalize": True, "precision": "fp32",
                "cache_dir": str(tmp_path), "converted_dir": str(tmp_path / "converted"), "device": "cpu"}
    with caplog.at_level(logging.WARNING, logger="odqa.embed.encoder"):
        fallen = Encoder(EmbedConfig(**settings, backend="auto"))  # type: ignore[arg-type]
    (record,) = caplog.records
    assert "OpenVINO cannot run" in record.getMessage() and "RuntimeError: Cannot convert operation" in \
        record.getMessage() and "encoding with torch instead" in record.getMessage()
    torch = Encoder(EmbedConfig(**settings, backend="torch"))  # type: ignore[arg-type]
    assert fallen.backend == fallen.config.backend == "torch"
    from typer.testing import CliRunner

    from odqa.cli import app

    fallen.encode_passages([Passage(id="p", doc_id="d", title="", text="a passage")])
    info = CliRunner().invoke(app, ["cache", "info", "--cache-dir", str(tmp_path)], env={"COLUMNS": "300"})
    assert "(fp32, torch, " in info.output and "(fp32, openvino, " not in info.output  # the one holding vectors
    assert fallen.fingerprint == torch.fingerprint  # its vectors are cached as torch's
    np.testing.assert_array_equal(fallen.encode_queries(["a question"]), torch.encode_queries(["a question"]))


def test_the_refine_config_records_the_backend_used(openvino_fp32: Encoder, tmp_path: Path) -> None:
    from odqa.pipeline import refine_to_file

    examples = [Example(id="q", question="Who owned the house?", answers=("Baker",),
                        ctxs=next(iter(load_examples(TIMEQA))).ctxs)]
    config = RefineConfig(scorer="dense", k=2, embed=EmbedConfig(precision="fp32"))
    summary = refine_to_file(examples, tmp_path / "out.jsonl", config, openvino_fp32)
    written = json.loads(summary.config_file.read_text(encoding="utf-8"))
    assert written["embed"]["backend"] == "openvino" and written["embed"]["precision"] == "fp32"


def test_refine_refuses_an_encoder_of_another_backend(openvino_fp32: Encoder) -> None:
    from odqa.refine import check_encoder

    with pytest.raises(ConfigError, match=r"backend 'openvino' \(encoder\) vs 'torch' \(config\)"):
        check_encoder(EmbedConfig(backend="torch", precision="fp32"), openvino_fp32)


def test_cache_info_names_the_backend_of_each_setting(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from odqa.cli import app
    from odqa.embed.cache import EmbeddingCache

    with EmbeddingCache(tmp_path, "fp", identity='{"model": "m", "precision": "bf16", "backend": "openvino"}') as c:
        c.put_many({"t": np.ones(4, dtype=np.float32)})
    info = CliRunner().invoke(app, ["cache", "info", "--cache-dir", str(tmp_path)])
    assert info.exit_code == 0 and "m (bf16, openvino, fp)" in info.output


def test_openvino_runs_the_encoders_batch_size_and_restores_the_order(
    openvino_fp32: Encoder, timeqa: tuple[list[str], list[Passage]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from odqa.embed.openvino import OpenVinoModel

    model = openvino_fp32._openvino
    assert isinstance(model, OpenVinoModel)
    batches: list[list[str]] = []
    real = model._features

    def spy(texts: list[str]) -> dict[str, np.ndarray]:
        batches.append(texts)
        return real(texts)

    monkeypatch.setattr(model, "_features", spy)
    texts, size = timeqa[0], openvino_fp32.batch_size
    assert len(texts) > size
    vectors = openvino_fp32.encode_queries(texts)
    assert [len(b) for b in batches] == [size] * (len(texts) // size) + ([len(texts) % size] if len(texts) % size
                                                                        else [])
    assert [len(t) for t in batches[0]] == sorted((len(t) for t in batches[0]), reverse=True)  # longest first
    batches.clear()
    again = model.encode(texts, 5)  # another batch size: other batches, the same vectors in the same order
    assert [len(b) for b in batches] == [5] * (len(texts) // 5) + ([len(texts) % 5] if len(texts) % 5 else [])
    np.testing.assert_allclose(again, vectors, atol=1e-5)
    assert Encoder(replace(openvino_fp32.config, batch_size=3)).batch_size == 3  # an explicit one is kept


TRICKY_TEXTS = [
    "Who owned the house in 1920?",
    "  leading and trailing spaces\t\n",
    "",
    "Ünïcödé, accents and CAPITALS: naïve café résumé",
    "東京は日本の首都です。人口は約1400万人。",
    "a b " * 400,  # beyond every model's maximum length: truncated
    "x",
]


@pytest.mark.parametrize("which", ["minilm", "tiny"])
def test_the_converted_tokenizer_tokenises_as_sentence_transformers(which: str, tiny_bert: Path) -> None:
    from odqa.embed.openvino import convert

    model = str(tiny_bert) if which == "tiny" else "minilm"
    settings = {"pooling": "mean", "normalize": True} if which == "tiny" else {}
    encoder = Encoder(EmbedConfig(model=model, backend="torch", precision="fp32", cache_dir="", device="cpu",
                                  **settings))  # type: ignore[arg-type]
    theirs = encoder.model.preprocess(TRICKY_TEXTS)
    ours = convert(openvino, encoder.model, None).tokenizer.encode_batch(TRICKY_TEXTS)
    limit = encoder.model.max_seq_length  # the tiny model's is its 128 positions, below its tokenizer's 512
    assert max(len(e.ids) for e in ours) == limit == (128 if which == "tiny" else 256)  # truncated to the limit
    np.testing.assert_array_equal([e.ids for e in ours], theirs["input_ids"].numpy())
    np.testing.assert_array_equal([e.attention_mask for e in ours], theirs["attention_mask"].numpy())
    np.testing.assert_array_equal([e.type_ids for e in ours], theirs["token_type_ids"].numpy())


def test_the_converted_tokenizer_truncates_at_max_seq_length_not_the_tokenizers_maximum(tiny_bert: Path) -> None:
    """sentence-transformers 5.x keeps ``max_seq_length`` apart from the tokenizer's ``model_max_length`` (6.x ties
    them): the converted tokenizer must cut where the model's ``max_seq_length`` says, as its ``tokenize`` does."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from odqa.embed.openvino import _tokenizer

    hf = AutoTokenizer.from_pretrained(str(tiny_bert))
    hf.model_max_length = 512

    class FiveX(list[Any]):  # a SentenceTransformer of 5.x, as far as the conversion reads it
        max_seq_length = 40

    ours = _tokenizer(FiveX([SimpleNamespace(tokenizer=hf, max_seq_length=40)])).encode_batch(TRICKY_TEXTS)
    theirs = hf(TRICKY_TEXTS, truncation="longest_first", max_length=40, padding=True)  # what 5.x's tokenize asks
    assert max(len(e.ids) for e in ours) == 40
    assert [e.ids for e in ours] == theirs["input_ids"]
    assert [e.attention_mask for e in ours] == theirs["attention_mask"]


HEAVY = ("torch", "transformers", "sentence_transformers")


def test_a_converted_model_refines_without_importing_torch(tmp_path: Path, cache: str,
                                                           openvino_fp32: Encoder) -> None:
    """Once converted, ``odqa refine`` reads the model back and never imports torch, transformers or
    sentence-transformers (6 s of start-up), and ranks as the encoder that converted it."""
    import os
    import subprocess
    import sys

    from odqa.pipeline import refine_to_file

    examples = list(load_examples(TIMEQA))
    config = RefineConfig(scorer="dense", k=5, embed=openvino_fp32.config)
    refine_to_file(examples, tmp_path / "here.jsonl", config, openvino_fp32)
    script = (
        "import json, sys\n"
        "from odqa.cli import main\n"
        f"sys.argv = ['odqa', 'refine', {str(TIMEQA)!r}, '--out', {str(tmp_path / 'there.jsonl')!r}, '--scorer',"
        f" 'dense', '--k', '5', '--precision', 'fp32', '--device', 'cpu', '--cache-dir', {cache!r}]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert json.loads(done.stdout.splitlines()[-1]) == []
    ranked = [[c["id"] for c in json.loads(line)["ctxs"]] for name in ("here", "there")
              for line in (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ranked[: len(examples)] == ranked[len(examples) :]


def test_a_dense_search_reuses_the_converted_model_without_importing_torch(tmp_path: Path,
                                                                          openvino_fp32: Encoder) -> None:
    """`odqa retrieve` encodes its questions without a vector cache: it still reads the model converted before (by
    the index build here) and never imports torch, transformers or sentence-transformers."""
    import os
    import subprocess
    import sys

    from odqa.index import IndexConfig, build_index, open_encoder
    from odqa.io import write_jsonl

    examples = list(load_examples(TIMEQA))[:4]
    config = IndexConfig(kind="dense", embed=EmbedConfig(model="minilm", precision="fp32", device="cpu"))
    with open_encoder(config) as encoder:  # no vector cache, as every index build
        assert encoder.cache is None and encoder.backend == "openvino"
        build_index(list({p.text: p for e in examples for p in chunk(e.ctxs or ())}.values())[:40],
                    tmp_path / "index", config, encoder=encoder)
    questions = tmp_path / "q.jsonl"
    write_jsonl(questions, [{"id": e.id, "question": e.question, "answers": list(e.answers)} for e in examples])
    script = (
        "import json, sys\n"
        "from odqa.cli import main\n"
        f"sys.argv = ['odqa', 'retrieve', {str(questions)!r}, '--index', {str(tmp_path / 'index')!r}, '--k', '3',"
        f" '--out', {str(tmp_path / 'hits.jsonl')!r}]\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert json.loads(done.stdout.splitlines()[-1]) == []
    rows = [json.loads(line) for line in (tmp_path / "hits.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [len(r["ctxs"]) for r in rows] == [3] * len(examples)


def test_the_default_device_is_known_without_torch_where_no_gpu_node_exists(monkeypatch: pytest.MonkeyPatch
                                                                             ) -> None:
    import sys

    def ask_torch() -> dict[str, int]:
        raise AssertionError("torch was asked")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(encoder_module, "_devices_here", ask_torch)
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(()))
    assert encoder_module._default_device() == "cpu"
    nodes = {"dev/nvidia*": [Path("/dev/nvidia0")]}
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(nodes.get(pattern, ())))
    monkeypatch.setattr(encoder_module, "_devices_here", lambda: {"cpu": 1, "cuda": 1})
    assert encoder_module._default_device() == "cuda:0"  # a GPU node: torch decides
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(encoder_module, "_devices_here", lambda: {"cpu": 1, "mps": 1})
    assert encoder_module._default_device() == "mps"


def test_an_older_half_converted_folder_is_replaced(tiny_bert: Path, tmp_path: Path, conversions: list[int]) -> None:
    config = EmbedConfig(model=str(tiny_bert), pooling="mean", normalize=True, backend="openvino", precision="fp32",
                         cache_dir="", converted_dir=str(tmp_path), device="cpu")
    Encoder(config)
    (folder,) = tmp_path.iterdir()
    (folder / "tokenizer.json").unlink()  # as an odqa that kept no tokenizer left it
    Encoder(config)
    Encoder(config)
    assert len(conversions) == 2 and (folder / "tokenizer.json").is_file()
