"""Hit-list fusion (pure functions), Fused, the static retriever, and the protocol every retriever satisfies."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from odqa.errors import ConfigError, InputError
from odqa.records import Hit, Passage
from odqa.retrieve.compose import Fused, StaticRetriever, load_retriever
from odqa.retrieve.fusion import fuse_rrf, fuse_weighted, reciprocal_rank_fusion, weighted_fusion


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(Passage(pid, "d", "", f"text {pid}"), score) for pid, score in pairs]


class Fixed:
    """A ten-line fake retriever: the same ranked list for every query."""

    def __init__(self, ranked: list[Hit]) -> None:
        self.ranked = ranked
        self.asked: list[int] = []

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        self.asked.append(k)
        return [self.ranked[:k] for _ in queries]


A = hits(("a", 9.0), ("b", 5.0), ("c", 1.0))
B = hits(("c", 0.9), ("d", 0.8), ("a", 0.1))


def test_rrf_over_hit_lists() -> None:
    fused = fuse_rrf([A, B], k=4, rrf_k=60)
    expected = {"a": 1 / 61 + 1 / 63, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert [h.passage.id for h in fused] == ["a", "c", "b", "d"]  # ties keep first-seen order
    assert [h.score for h in fused] == pytest.approx([expected[h.passage.id] for h in fused])
    assert [h.passage.id for h in fuse_rrf([A, B], k=2)] == ["a", "c"]


def test_hit_fusion_equals_array_fusion_when_every_list_ranks_every_passage() -> None:
    """Over the same passages, the hit-list and score-array fusions are one definition."""
    first, second = hits(("x", 3.0), ("y", 2.0), ("z", 1.0)), hits(("z", 0.7), ("x", 0.5), ("y", 0.1))
    ids = ["x", "y", "z"]
    arrays = [np.array([dict((h.passage.id, h.score) for h in lst)[i] for i in ids]) for lst in (first, second)]
    rrf = {h.passage.id: h.score for h in fuse_rrf([first, second], k=3)}
    assert [rrf[i] for i in ids] == pytest.approx(list(reciprocal_rank_fusion(arrays)))
    weighted = {h.passage.id: h.score for h in fuse_weighted([first, second], [0.3, 0.7], k=3)}
    assert [weighted[i] for i in ids] == pytest.approx(list(weighted_fusion(arrays, [0.3, 0.7])))


def test_rrf_ranks_by_list_position_not_by_score() -> None:
    """A list's order is its ranking, whatever its scores say (a reranked head followed by first-stage hits)."""
    unordered = hits(("x", 1.0), ("y", 5.0), ("z", 5.0))
    fused = fuse_rrf([unordered, hits(("w", 1.0))], k=4)
    assert [h.passage.id for h in fused] == ["x", "w", "y", "z"]
    assert [h.score for h in fused] == pytest.approx([1 / 61, 1 / 61, 1 / 62, 1 / 63])


def test_hit_fusion_is_array_fusion_with_absent_passages_as_nan() -> None:
    """A passage missing from a list is NaN in that list's score array: one definition for refine and retrieve."""
    nan = float("nan")
    arrays = [np.array([9.0, 5.0, 1.0, nan]), np.array([0.1, nan, 0.9, 0.8])]  # A and B over ids a, b, c, d
    rrf = {h.passage.id: h.score for h in fuse_rrf([A, B], k=4)}
    assert [rrf[i] for i in "abcd"] == pytest.approx(list(reciprocal_rank_fusion(arrays)))
    weighted = {h.passage.id: h.score for h in fuse_weighted([A, B], [1.0, 2.0], k=4)}
    assert [weighted[i] for i in "abcd"] == pytest.approx(list(weighted_fusion(arrays, [1.0, 2.0])))


def test_weighted_fusion_over_hit_lists() -> None:
    fused = fuse_weighted([A, B], [1.0, 2.0], k=4)
    # min-max per list: A -> a 1, b 0.5, c 0; B -> c 1, d 0.875, a 0
    assert {h.passage.id: round(h.score, 6) for h in fused} == {"a": 1.0, "b": 0.5, "c": 2.0, "d": 1.75}
    assert [h.passage.id for h in fused] == ["c", "d", "a", "b"]
    with pytest.raises(ConfigError, match="2 hit lists but 1 weights"):
        fuse_weighted([A, B], [1.0], k=3)


def test_fused_composes_any_retrievers_and_asks_each_for_depth() -> None:
    first, second = Fixed(A), Fixed(B)
    fused = Fused(first, second, depth=3)
    assert [[h.passage.id for h in lst] for lst in fused.search(["q1", "q2"], k=2)] == [["a", "c"], ["a", "c"]]
    assert first.asked == second.asked == [3]
    # A Fused is itself a retriever: fused again with a third list, its ranking is the one RRF gives its list.
    third = Fixed(hits(("d", 1.0), ("e", 0.5)))
    nested = Fused(Fused(first, second, depth=3), third, depth=4).search(["q"], k=3)[0]
    inner = fuse_rrf([A[:3], B[:3]], k=4)
    assert [h.passage.id for h in nested] == [h.passage.id for h in fuse_rrf([inner, third.ranked], k=3)]
    assert [h.passage.id for h in nested] == ["d", "a", "c"]  # d is in both lists
    weighted = Fused(first, second, fusion="weighted", weights=[1.0, 2.0], depth=3)
    assert [h.passage.id for h in weighted.search(["q"], 1)[0]] == ["c"]
    with pytest.raises(ConfigError, match="at least two retrievers"):
        Fused(first)
    with pytest.raises(ConfigError, match="2 retrievers but 3 weights; give one weight per retriever"):
        Fused(first, second, fusion="weighted", weights=[1, 2, 3])
    with pytest.raises(ConfigError, match="fusion 'max' is not valid"):
        Fused(first, second, fusion="max")  # type: ignore[arg-type]


def test_static_retriever_serves_a_fid_file(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    records = [
        {"id": "q1", "question": "Who?", "answers": ["x"],
         "ctxs": [{"id": "p1", "title": "T", "text": "one", "score": 2.5}, {"id": "p2", "title": "T", "text": "two"}]},
        {"id": "q2", "question": "When?", "answers": [], "ctxs": []},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    static = load_retriever(path)
    assert isinstance(static, StaticRetriever)
    found = static.search(["Who?", "When?"], k=5)
    assert [[(h.passage.id, h.passage.text, h.score) for h in lst] for lst in found] == [
        [("p1", "one", 2.5), ("p2", "two", -1.0)], []]
    assert [h.passage.id for h in static.lookup(["q1"], k=1)[0]] == ["p1"]
    with pytest.raises(InputError, match=r"question 'Where\?' is not in .*run\.jsonl; a static retriever serves only"):
        static.search(["Where?"], 1)
    with pytest.raises(InputError, match="question id 'q9'"):
        static.lookup(["q9"], 1)
    fused = Fused(static, Fixed(hits(("p2", 7.0), ("p9", 3.0))), depth=2).search(["Who?"], k=3)[0]
    assert [h.passage.id for h in fused] == ["p2", "p1", "p9"]  # composes: p2 is ranked by both


def test_index_modules_import_neither_torch_nor_faiss() -> None:
    code = ("import sys, odqa.retrieve.protocol, odqa.retrieve.compose, odqa.index.build, odqa.cli; "
            "print(sorted(m for m in ('torch', 'faiss', 'bm25s', 'sentence_transformers') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("name", "cls"), [("index.yaml", "IndexConfig"), ("retrieve.yaml", "RetrieveConfig")])
def test_shipped_yaml_spells_out_the_defaults(name: str, cls: str) -> None:
    import odqa
    from odqa.config import load_config

    config_cls = getattr(odqa, cls)
    assert load_config(config_cls, Path(__file__).parents[2] / "configs" / name) == config_cls()


def test_weights_are_refused_under_rrf() -> None:
    """RRF fuses ranks and takes no weights: a weight given with it would be silently ignored."""
    from odqa.retrieve.run import RetrieveConfig

    with pytest.raises(ConfigError, match=r"weights apply to weighted fusion only; pass --fuse weighted with "
                                          r"--weight, or drop --weight"):
        RetrieveConfig(indexes=("a", "b"), weights=(1.0, 2.0))
    assert RetrieveConfig(indexes=("a", "b"), weights=(1.0, 2.0), fusion="weighted").weights == (1.0, 2.0)
    with pytest.raises(ConfigError, match="weights apply to weighted fusion only"):
        Fused(Fixed(A), Fixed(B), weights=[1.0, 2.0])


def test_dense_only_options_are_refused_where_no_index_takes_them(tmp_path: Path, corpus: list[Passage],
                                                                  reference: Path) -> None:
    """--search-params and --device apply to dense indexes only: a BM25 index (or a FiD file) alone refuses them;
    fused with a dense index, they go to the dense one."""
    from odqa.index.build import build_index
    from odqa.index.config import IndexConfig
    from odqa.retrieve.run import RetrieveConfig, open_retriever
    from odqa.retrieve.sparse import BM25Retriever

    bm25 = tmp_path / "bm25"
    build_index(corpus[:30], bm25, IndexConfig(kind="bm25"))
    with pytest.raises(ConfigError, match=r"is a BM25 index: --search-params \(FAISS\) does not apply to it"):
        load_retriever(bm25, search_params="nprobe=8")
    with pytest.raises(ConfigError, match=r"is a BM25 index: --device \(the query encoder's\) does not apply to it"):
        open_retriever(RetrieveConfig(indexes=(str(bm25),), device="cpu"))
    fid = tmp_path / "run.jsonl"
    fid.write_text(json.dumps({"id": "q", "question": "Who?", "answers": [], "ctxs": []}) + "\n")
    with pytest.raises(ConfigError, match=r"is a FiD file: --device \(the query encoder's\) does not apply to it"):
        load_retriever(fid, device="cpu")
    assert isinstance(load_retriever(bm25), BM25Retriever)
    model = json.loads((reference / "manifest.json").read_text())["settings"]["model"]
    fused = open_retriever(RetrieveConfig(indexes=(str(reference), str(bm25)), device="cpu", model=model))
    assert isinstance(fused, Fused)
    dense, sparse = fused.retrievers
    assert dense.encoder.config.device == "cpu" and isinstance(sparse, BM25Retriever)  # type: ignore[attr-defined]
