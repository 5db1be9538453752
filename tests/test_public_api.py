from __future__ import annotations

import subprocess
import sys

import odqa
from odqa.records import Hit, Passage
from odqa.retrieve import Retriever

EXPECTED = {
    "ChunkConfig", "ConfigError", "CrawlError", "DependencyError", "Document", "EmbedConfig",
    "Encoder", "Example", "FormatError", "Hit", "HybridConfig", "InputError", "ModelError", "OdqaError", "OutputError",
    "Page",
    "Passage", "RefineConfig", "Refined", "Reranker", "Retriever", "__version__", "chunk", "chunk_document",
    "load_examples", "refine",
}


def test_all_is_curated_and_importable() -> None:
    assert set(odqa.__all__) == EXPECTED
    for name in odqa.__all__:
        assert getattr(odqa, name) is not None


def test_errors_share_one_base() -> None:
    for name in odqa.__all__:
        obj = getattr(odqa, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert issubclass(obj, odqa.OdqaError)


def test_import_is_light() -> None:
    code = "import sys, odqa, odqa.retrieve; print(any(m in sys.modules for m in ('torch', 'faiss', 'trafilatura')))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() \
        == "False"


def test_a_ten_line_fake_is_a_retriever() -> None:
    class Fake:
        def search(self, queries: list[str], k: int) -> list[list[Hit]]:
            return [[Hit(Passage("p", "d", "t", q), 1.0)][:k] for q in queries]

    assert isinstance(Fake(), Retriever)
