"""The curated public surface: exactly the pinned names, each the real object of its home module."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
from typing import Protocol

import pytest

import odqa
from odqa.records import Hit, Passage
from odqa.retrieve import Retriever

# name -> the module that defines it; adding or removing a public name is a decision, made here.
HOMES = {
    "ChunkConfig": "odqa.config",
    "ConfigError": "odqa.errors",
    "CrawlError": "odqa.errors",
    "CrossEncoderReranker": "odqa.retrieve.rerank",
    "DependencyError": "odqa.errors",
    "Document": "odqa.records",
    "EmbedConfig": "odqa.config",
    "Encoder": "odqa.embed.encoder",
    "Example": "odqa.records",
    "FormatError": "odqa.errors",
    "Fused": "odqa.retrieve.compose",
    "Hit": "odqa.records",
    "HybridConfig": "odqa.config",
    "IndexConfig": "odqa.index.config",
    "IndexFormatError": "odqa.errors",
    "IndexMismatchError": "odqa.errors",
    "InputError": "odqa.errors",
    "ModelError": "odqa.errors",
    "OdqaError": "odqa.errors",
    "OutputError": "odqa.errors",
    "Page": "odqa.records",
    "Passage": "odqa.records",
    "RefineConfig": "odqa.config",
    "RefineSummary": "odqa.pipeline",
    "Refined": "odqa.refine",
    "RerankConfig": "odqa.config",
    "Reranked": "odqa.retrieve.rerank",
    "Reranker": "odqa.retrieve.protocol",
    "ResourceError": "odqa.errors",
    "RetrieveConfig": "odqa.retrieve.run",
    "RetrieveSummary": "odqa.retrieve.run",
    "Retriever": "odqa.retrieve.protocol",
    "StaticRetriever": "odqa.retrieve.compose",
    "__version__": "odqa._version",
    "build_index": "odqa.index.build",
    "chunk": "odqa.chunk",
    "chunk_document": "odqa.chunk",
    "load_examples": "odqa.inputs",
    "load_retriever": "odqa.retrieve.compose",
    "refine": "odqa.refine",
    "refine_to_file": "odqa.pipeline",
    "retrieve_to_file": "odqa.retrieve.run",
}
RECORDS = {"Document", "Example", "Hit", "Page", "Passage", "Refined", "RefineSummary", "RetrieveSummary"}
CONFIGS = {"ChunkConfig", "EmbedConfig", "HybridConfig", "IndexConfig", "RefineConfig", "RerankConfig",
           "RetrieveConfig"}
RETRIEVERS = {"Fused", "Reranked", "StaticRetriever"}  # built by wrapping (load_retriever opens indexes)
RERANKERS = {"CrossEncoderReranker"}
FUNCTIONS = {  # name -> its leading parameters, the calling convention users rely on
    "chunk": ["docs", "config"],
    "chunk_document": ["doc", "config"],
    "load_examples": ["path"],
    "refine": ["examples", "config", "encoder"],
    "refine_to_file": ["examples", "out", "config", "encoder"],
    "build_index": ["passages", "out", "config"],
    "load_retriever": ["path"],
    "retrieve_to_file": ["examples", "out", "config", "retriever"],
}


def test_all_is_exactly_the_pinned_list_sorted_without_repeats() -> None:
    assert odqa.__all__ == sorted(HOMES)


@pytest.mark.parametrize("name", sorted(HOMES))
def test_each_name_is_the_object_defined_in_its_home_module(name: str) -> None:
    home = importlib.import_module(HOMES[name])
    obj = getattr(odqa, name)
    assert getattr(home, name) is obj
    if name != "__version__":
        assert obj.__module__ == HOMES[name]
        assert name in home.__all__
        assert (inspect.getdoc(obj) or "").strip(), f"{name} has no docstring"


def test_each_name_is_the_kind_it_claims() -> None:
    errors = {name for name in HOMES if name.endswith("Error")}
    assert errors == {"ConfigError", "CrawlError", "DependencyError", "FormatError", "IndexFormatError",
                      "IndexMismatchError", "InputError", "ModelError", "OdqaError", "OutputError", "ResourceError"}
    for name in errors:
        assert issubclass(getattr(odqa, name), odqa.OdqaError) and issubclass(odqa.OdqaError, Exception)
    assert issubclass(odqa.FormatError, odqa.InputError) and issubclass(odqa.IndexFormatError, odqa.InputError)
    assert issubclass(odqa.IndexMismatchError, odqa.ConfigError)
    for name in RECORDS | CONFIGS:
        cls = getattr(odqa, name)
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
    for name, leading in FUNCTIONS.items():
        params = list(inspect.signature(getattr(odqa, name)).parameters)
        assert params[: len(leading)] == leading, name
    for name in ("Retriever", "Reranker"):
        protocol = getattr(odqa, name)
        assert Protocol in protocol.__mro__ and getattr(protocol, "_is_runtime_protocol", False), name
    assert inspect.isclass(odqa.Encoder) and callable(odqa.Encoder.encode_queries)
    for name in RETRIEVERS:
        assert inspect.isclass(getattr(odqa, name)) and callable(getattr(odqa, name).search), name
    for name in RERANKERS:
        assert inspect.isclass(getattr(odqa, name)) and callable(getattr(odqa, name).rerank), name
    assert odqa.__version__ == importlib.metadata.version("odqa")
    covered = errors | RECORDS | CONFIGS | RETRIEVERS | RERANKERS | set(FUNCTIONS) | {
        "Retriever", "Reranker", "Encoder", "__version__"}
    assert covered == set(HOMES)


def test_import_is_light() -> None:
    code = "import sys, odqa, odqa.retrieve; print(any(m in sys.modules for m in ('torch', 'faiss', 'trafilatura')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def test_a_ten_line_fake_is_a_retriever() -> None:
    class Fake:
        def search(self, queries: list[str], k: int) -> list[list[Hit]]:
            return [[Hit(Passage("p", "d", "t", q), 1.0)][:k] for q in queries]

    assert isinstance(Fake(), Retriever)
    assert not isinstance(object(), Retriever)
