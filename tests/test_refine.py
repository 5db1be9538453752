from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from odqa.config import HybridConfig, RefineConfig
from odqa.errors import ConfigError, InputError
from odqa.records import Document, Example, Passage
from odqa.refine import RefineStats, refine, score_passages
from odqa.retrieve.bm25 import bm25_scores
from odqa.retrieve.fusion import minmax, reciprocal_rank_fusion, top_k, weighted_fusion
from odqa.retrieve.temporal import TimeWindow, parse_window, temporal_scores
from odqa.retrieve.tokenize import tokenize

DOCS = (
    Document("a", "Lake Geneva", "Lake Geneva is a lake on the north side of the Alps shared by France and "
                                 "Switzerland. " * 3),
    Document("b", "Geneva", "In 1998 the mayor of Geneva was Anna Keller. She served until 2003."),
    Document("c", "Zurich", "Zurich is the largest city in Switzerland and a centre of banking."),
)


def example(question: str = "Who was the mayor of Geneva in 1998?", ctxs: tuple[Document, ...] | None = DOCS,
            answers: tuple[str, ...] = ("Anna Keller",)) -> Example:
    return Example(id="q1", question=question, answers=answers, ctxs=ctxs)


def test_bm25_on_two_passages_still_ranks() -> None:
    passages = [Passage("1", "d", "", "Bern is the capital."), Passage("2", "d", "", "Zurich is the largest city.")]
    assert int(np.argmax(bm25_scores("largest city", passages))) == 1  # Robertson's idf would give all zeros


def test_tokenize_stems_and_drops_stopwords() -> None:
    assert tokenize("The owners owned the houses") == ("owner", "own", "hous")
    assert tokenize("東京都") == ("東京", "京都")


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("Who owned the house before Mar 1811?", TimeWindow(1801, 1811)),
        ("Which team did he play for from 1995 to 1998?", TimeWindow(1995, 1998)),
        ("What did she do between Jan 1990 and Dec 1993?", TimeWindow(1990, 1993)),
        ("Where was he in the early 1990s?", TimeWindow(1990, 1993)),
        ("Who coached the team after 2001?", TimeWindow(2001, 2011)),
        ("Who was the coach in 2004?", TimeWindow(2004, 2004)),
        ("Who is the coach?", None),
    ],
)
def test_time_windows(question: str, window: TimeWindow | None) -> None:
    assert parse_window(question) == window


def test_temporal_scores_prefer_years_in_the_window() -> None:
    scores = temporal_scores("Who was mayor in 1998?", ["elected in 1998", "in 2003 he left", "no year here"])
    assert scores is not None
    assert scores[0] == 1.0 and 0 < scores[1] < 1 and scores[2] == 0.0
    assert temporal_scores("Who is mayor?", ["in 1998"]) is None


def test_fusion_functions() -> None:
    np.testing.assert_allclose(minmax(np.array([2.0, 4.0, 3.0])), [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(minmax(np.array([5.0, 5.0])), [0.0, 0.0])
    fused = weighted_fusion([np.array([1.0, 0.0]), np.array([0.0, 10.0])], [0.75, 0.25])
    np.testing.assert_allclose(fused, [0.75, 0.25])
    rrf = reciprocal_rank_fusion([np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 3.0])], k=60)
    np.testing.assert_allclose(rrf, [1 / 61 + 1 / 63, 2 / 62, 1 / 63 + 1 / 61])


def test_top_k_is_stable_on_ties() -> None:
    passages = [Passage(str(i), "d", "", str(i)) for i in range(4)]
    hits = top_k(passages, np.array([1.0, 2.0, 2.0, 0.5]), 3)
    assert [h.passage.id for h in hits] == ["1", "2", "0"]


def test_bm25_refine_orders_and_keeps_ids() -> None:
    (result,) = refine([example()], RefineConfig(scorer="bm25", k=2))
    assert [h.passage.id for h in result.hits] == ["b", "a"]
    assert result.hits[0].score >= result.hits[1].score


def test_long_documents_are_chunked() -> None:
    long_doc = Document("long", "T", " ".join(f"w{i}" for i in range(250)) + " Anna Keller")
    (result,) = refine([example(ctxs=(long_doc,))], RefineConfig(scorer="original", k=5))
    assert [h.passage.id for h in result.hits] == ["long:0", "long:1", "long:2"]


def test_edge_cases_are_defined_and_counted() -> None:
    stats = RefineStats()
    items = [
        example(ctxs=None),
        Example(id="q2", question="   ", ctxs=DOCS),
        example(),
    ]
    no_ctx, empty_q, normal = refine(items, RefineConfig(scorer="bm25", k=10), stats=stats)
    assert no_ctx.hits == []
    assert [h.passage.id for h in empty_q.hits] == ["a", "b", "c"] and {h.score for h in empty_q.hits} == {0.0}
    assert len(normal.hits) == 3  # k larger than the candidates: all of them, best first
    assert (stats.questions, stats.no_candidates, stats.empty_question, stats.fewer_than_k) == (3, 1, 1, 2)
    assert len(stats.warnings) == 2


def test_dense_scorers_need_an_encoder() -> None:
    with pytest.raises(ConfigError, match="needs an encoder"):
        list(refine([example()], RefineConfig(scorer="hybrid")))


def test_hybrid_combines_its_signals() -> None:
    passages = [Passage(str(i), "d", "", t) for i, t in enumerate(["mayor Geneva", "in 1998 someone", "nothing"])]
    dense = np.array([0.1, 0.2, 0.9])
    no_time = RefineConfig(hybrid=HybridConfig(temporal_weight=0.0))
    base = score_passages("mayor of Geneva in 1998", passages, no_time, dense)
    timed = score_passages("mayor of Geneva in 1998", passages, RefineConfig(), dense)
    np.testing.assert_allclose(timed - base, [0.0, 0.3, 0.0])
    only_dense = RefineConfig(hybrid=HybridConfig(bm25_weight=0.0, temporal_weight=0.0))
    assert int(np.argmax(score_passages("q", passages, only_dense, dense))) == 2
    rrf = score_passages("mayor Geneva", passages, RefineConfig(hybrid=HybridConfig(fusion="rrf", rrf_k=1)), dense)
    np.testing.assert_allclose(rrf, [1 / 2 + 1 / 4, 1 / 3 + 1 / 3, 1 / 4 + 1 / 2])  # BM25 ties keep input order


def test_dense_and_hybrid_refine_with_the_bundled_model(minilm_encoder: Any) -> None:
    for scorer in ("dense", "hybrid"):
        (result,) = refine([example()], RefineConfig(scorer=scorer, k=3), minilm_encoder)  # type: ignore[arg-type]
        assert result.hits[0].passage.id == "b"
        scores = [h.score for h in result.hits]
        assert scores == sorted(scores, reverse=True)


def test_japanese_candidates_are_chunked_and_ranked_by_bm25() -> None:
    tokyo = Document("tokyo", "東京", "東京は日本の首都である。" * 30 + "東京タワーは1958年に完成した。")
    osaka = Document("osaka", "大阪", "大阪は日本第二の都市である。" * 10)
    question = Example(id="ja", question="東京タワーは何年に完成しましたか？", answers=("1958年",), ctxs=(osaka, tokyo))
    (result,) = refine([question], RefineConfig(scorer="bm25", k=3))
    top = result.hits[0].passage
    assert top.doc_id == "tokyo" and "東京タワー" in top.text and len(top.text) <= 200


def test_the_same_passage_text_is_kept_once_at_its_best_ranked_source() -> None:
    article = " ".join(f"word{i}" for i in range(250)) + " Anna Keller was mayor of Geneva in 1998."
    twice = (Document("wiki", "Geneva", article), Document("mirror", "Geneva (mirror)", article), DOCS[2])
    stats = RefineStats()
    (result,) = refine([example(ctxs=twice)], RefineConfig(scorer="original", k=100), stats=stats)
    texts = [h.passage.text for h in result.hits]
    assert len(texts) == len(set(texts)) == 4  # 3 passages of the article, once each, and Zurich
    assert [h.passage.id for h in result.hits] == ["wiki:0", "wiki:1", "wiki:2", "c"]
    assert (stats.passages, stats.duplicates) == (4, 3)
    (ranked,) = refine([example(ctxs=twice)], RefineConfig(scorer="bm25", k=2))
    assert ranked.hits[0].passage.id == "wiki:2" and ranked.hits[1].passage.doc_id != "mirror"


def test_an_encoder_built_for_other_settings_is_refused(minilm_encoder: Any) -> None:
    from odqa.config import EmbedConfig

    for embed, named in [(EmbedConfig(model="bge-base"), "model 'sentence-transformers/all-MiniLM-L6-v2' (encoder)"),
                         (EmbedConfig(query_prompt="query: "), "query_prefix '' (encoder) vs 'query: ' (config)"),
                         (EmbedConfig(precision="fp16"),
                          f"precision {minilm_encoder.precision!r} (encoder) vs 'fp16' (config)")]:
        with pytest.raises(ConfigError, match=re.escape(named)):
            list(refine([example()], RefineConfig(scorer="dense", embed=embed), minilm_encoder))
    # run settings that leave the vectors unchanged (device, batch size, cache) are not a mismatch
    same = EmbedConfig(batch_size=4, cache_dir="", device="cpu")
    (result,) = refine([example()], RefineConfig(scorer="dense", embed=same), minilm_encoder)
    assert result.hits[0].passage.id == "b"


def test_the_written_config_names_the_precision_auto_resolved_to(minilm_encoder: Any, tmp_path: Path) -> None:
    from odqa.config import EmbedConfig
    from odqa.pipeline import refine_to_file

    assert EmbedConfig().precision == "auto" and minilm_encoder.precision in ("fp32", "bf16")
    summary = refine_to_file([example()], tmp_path / "out.jsonl", RefineConfig(scorer="dense"), minilm_encoder)
    written = json.loads(summary.config_file.read_text(encoding="utf-8"))
    assert written["embed"]["precision"] == summary.config.embed.precision == minilm_encoder.precision


def test_refine_to_file_writes_fid_config_and_summary(tmp_path: Path) -> None:
    from odqa.pipeline import refine_to_file

    done: list[int] = []
    items = [example(), Example(id="q2", question="largest city?", answers=("Zurich",), ctxs=DOCS)]
    summary = refine_to_file(items, tmp_path / "out.jsonl", RefineConfig(scorer="bm25", k=2, block_size=1),
                             progress=done.append)
    assert done == [1, 1]
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [[c["id"] for c in r["ctxs"]] for r in rows] == [["b", "a"], ["c", "a"]]
    assert [r["ctxs"][0]["has_answer"] for r in rows] == [True, True]
    assert (summary.questions, summary.answerable, summary.recall) == (2, 2, {1: 1.0})
    assert summary.stats.passages == 6 and summary.encoded == 0
    assert json.loads(summary.config_file.read_text())["k"] == 2


def test_refine_to_file_without_any_candidates_writes_nothing(tmp_path: Path) -> None:
    from odqa.pipeline import refine_to_file

    out = tmp_path / "out.jsonl"
    out.write_text("an earlier run\n")
    for items, message in [([example(ctxs=None), example(ctxs=())], "none of the 2 question"),
                           ([], "the input is empty")]:
        with pytest.raises(InputError, match=message):
            refine_to_file(items, out, RefineConfig(scorer="bm25"))
        assert out.read_text() == "an earlier run\n" and not (tmp_path / "out.jsonl.config.json").exists()


def test_refine_and_refine_tables_record_what_ran_beside_their_output(minilm_encoder: Any, tmp_path: Path,
                                                                      data_dir: Path) -> None:
    """Both writers record the precision and backend the encoder resolved ``auto`` to, never ``auto``."""
    from odqa.pipeline import refine_to_file
    from odqa.tables import refine_tables_to_file

    hybridqa = data_dir / "hybridqa"
    config = RefineConfig(scorer="dense", k=2)
    assert (config.embed.precision, config.embed.backend) == ("auto", "auto")
    summaries = [
        refine_to_file([example()], tmp_path / "plain.jsonl", config, minilm_encoder),
        refine_tables_to_file(hybridqa / "dev.tables.json", hybridqa / "WikiTables-WithLinks", tmp_path / "t.jsonl",
                              config, minilm_encoder),
    ]
    ran = {"precision": minilm_encoder.precision, "backend": minilm_encoder.backend}
    assert "auto" not in ran.values()
    for summary in summaries:
        written = json.loads(summary.config_file.read_text(encoding="utf-8"))["embed"]
        assert {key: written[key] for key in ran} == ran
        assert {key: getattr(summary.config.embed, key) for key in ran} == ran
