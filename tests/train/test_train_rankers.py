"""Training rankers: a tiny model learns a planted task on held-out articles, the trained folders load where
models are loaded, a killed run resumes to identical weights, no positive is one typed error, the split by
article never leaks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from planted import WORDS, planted
from safetensors.torch import load_file
from typer.testing import CliRunner

from odqa.checkpoints import TRAINER_STATE
from odqa.cli import app
from odqa.config import ChunkConfig, EmbedConfig, RefineConfig, RerankConfig
from odqa.errors import ConfigError, NoPositiveError
from odqa.evaluate import has_answer, recall_at_k
from odqa.records import Document, Example
from odqa.train.config import TrainRankerConfig
from odqa.train.data import build_groups, split_by_article


def _config(model: Path, **changes: object) -> TrainRankerConfig:
    base = TrainRankerConfig(model=str(model), pooling="mean", normalize=True, epochs=3, batch_size=8, lr=3e-3,
                             warmup_steps=2, max_length=32, ks=(1, 3), device="cpu", chunk=ChunkConfig(words=WORDS),
                             checkpoint_every=100)
    return replace(base, **changes)  # type: ignore[arg-type]


def test_the_retriever_learns_the_planted_task_and_loads_as_a_model(tmp_path: Path, tiny_encoder: Path,
                                                                     words: list[str]) -> None:
    from odqa.embed import Encoder
    from odqa.refine import refine
    from odqa.train.retriever import train_retriever

    train, held_out = planted(words, 40, seed=1, prefix="a"), planted(words, 16, seed=2, prefix="b")
    summary = train_retriever(train, tmp_path / "run", _config(tiny_encoder), dev=held_out)
    before, best = summary.dev[0], summary.best
    assert [d.epoch for d in summary.dev] == [0, 1, 2, 3] and best is not None
    assert best.recall[1] >= before.recall[1] + 0.25, summary.dev
    assert summary.usage == f"--model {tmp_path / 'run' / 'best'} --pooling mean --normalize"
    # loaded as any model folder is (refine, index build, retrieve): the same ranking as the dev evaluation
    embed = EmbedConfig(model=str(summary.best_dir), pooling="mean", normalize=True, cache_dir="", backend="torch",
                        device="cpu")
    with Encoder(embed) as encoder:
        config = RefineConfig(scorer="dense", k=3, embed=encoder.config, chunk=ChunkConfig(words=WORDS))
        flags = [[has_answer(h.passage.text, item.example.answers) for h in item.hits]
                 for item in refine(held_out, config, encoder)]
    assert recall_at_k(flags, (1, 3)) == pytest.approx(best.recall)


def test_the_reranker_learns_the_planted_task_and_loads_with_rerank(tmp_path: Path, tiny_encoder: Path,
                                                                    words: list[str]) -> None:
    from odqa.retrieve.rerank import CrossEncoderReranker
    from odqa.train.reranker import train_reranker

    # a cross-encoder initialised from a random encoder (the head is new), the answer passage marked by one word
    marker = words[7]
    train = planted(words, 40, seed=1, prefix="a", marker=marker)
    held_out = planted(words, 16, seed=2, prefix="b", marker=marker)
    config = _config(tiny_encoder, miner=str(tiny_encoder))
    summary = train_reranker(train, tmp_path / "run", config, dev=held_out)
    before, best = summary.dev[0], summary.best
    assert best is not None and best.recall[1] >= before.recall[1] + 0.25, summary.dev
    assert summary.usage == f"--rerank {tmp_path / 'run' / 'best'}"
    reranker = CrossEncoderReranker(RerankConfig(model=str(summary.best_dir), device="cpu"))
    groups, _ = build_groups(held_out, ChunkConfig(words=WORDS))
    from odqa.records import Hit

    ranked = reranker.rerank([g.question for g in groups], [[Hit(p, 0.0) for p in g.candidates] for g in groups], 1)
    top1 = np.mean([has_answer(hits[0].passage.text, ex.answers) for hits, ex in zip(ranked, held_out, strict=True)])
    assert top1 == pytest.approx(best.recall[1])


class Killed(Exception):
    """Stands for the process being killed after a step."""


def _as_if_written_on_a_gpu(state_file: Path) -> None:
    """Rewrites a trainer state with every tensor tagged cuda:0, as a GPU run writes it (a CPU-only machine cannot
    load it without map_location)."""
    import torch.serialization

    state = torch.load(state_file, weights_only=False)
    original = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: "cuda:0"  # type: ignore[assignment]
    try:
        torch.save(state, state_file)
    finally:
        torch.serialization.location_tag = original
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(state_file, weights_only=False)


def test_a_killed_run_resumes_to_the_same_weights_and_figures(tmp_path: Path, tiny_encoder_with_dropout: Path,
                                                              words: list[str]) -> None:
    from odqa.train.retriever import train_retriever

    train, dev = planted(words, 16, seed=3, prefix="a"), planted(words, 6, seed=4, prefix="b")
    config = _config(tiny_encoder_with_dropout, epochs=2, batch_size=4, checkpoint_every=2)
    whole = train_retriever(train, tmp_path / "whole", config, dev=dev)

    def kill_at_step_5(step: int, total: int, loss: float) -> None:
        if step == 5:
            raise Killed

    with pytest.raises(Killed):
        train_retriever(train, tmp_path / "cut", config, dev=dev, progress=kill_at_step_5)
    with pytest.raises(ConfigError, match="already holds checkpoint-0000004"):
        train_retriever(train, tmp_path / "cut", config, dev=dev)
    with pytest.raises(ConfigError, match="settings differ"):
        train_retriever(train, tmp_path / "cut", replace(config, lr=1e-3), dev=dev, resume=True)
    _as_if_written_on_a_gpu(tmp_path / "cut" / "checkpoint-0000004" / TRAINER_STATE)
    resumed = train_retriever(train, tmp_path / "cut", config, dev=dev, resume=True)
    assert resumed.resumed_from == 4
    assert resumed.losses == whole.losses and resumed.dev == whole.dev and resumed.best == whole.best
    for name in ("checkpoint-0000008", "best"):
        a, b = (load_file(str(tmp_path / run / name / "model.safetensors")) for run in ("whole", "cut"))
        assert a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)


def test_training_data_without_a_positive_is_one_typed_error(tmp_path: Path, tiny_encoder: Path) -> None:
    docs = (Document(id="d", title="", text="nothing here holds the answer"),)
    examples = [Example(id="q1", question="who?", answers=("Ada Lovelace",), ctxs=docs),
                Example(id="q2", question="unanswerable?", answers=(), ctxs=docs)]
    with pytest.raises(NoPositiveError, match=r"none of the 2 training questions .*1 have no answer, 1 have"):
        build_groups(examples, ChunkConfig())
    data = tmp_path / "train.jsonl"
    data.write_text('{"id": "q1", "question": "who?", "answers": ["Ada Lovelace"], '
                    '"ctxs": [{"id": "d", "title": "", "text": "nothing here holds the answer"}]}\n')
    result = CliRunner().invoke(app, ["train-retriever", str(data), "--out", str(tmp_path / "run"), "--model",
                                      str(tiny_encoder), "--pooling", "mean", "--normalize"])
    assert result.exit_code == 1
    assert result.output.strip().startswith("NoPositiveError: none of the 1 training questions")
    assert not (tmp_path / "run").exists()


def test_the_split_by_article_never_puts_an_article_on_both_sides(words: list[str]) -> None:
    # three questions per article, in shuffled order: every article's questions land on one side
    base = planted(words, 60, seed=5, prefix="a")
    examples = [replace(ex, id=f"{ex.id}-{n}") for n in range(3) for ex in base]
    groups, _ = build_groups(examples, ChunkConfig(words=WORDS))
    train, dev = split_by_article(groups, 0.25, seed=0)
    assert {g.article for g in train}.isdisjoint({g.article for g in dev})
    assert 5 <= len({g.article for g in dev}) <= 25 and len(train) + len(dev) == len(groups)
    again = split_by_article(list(reversed(groups)), 0.25, seed=0)[1]
    assert {g.id for g in again} == {g.id for g in dev}  # the draw depends on the article, not the order
    from odqa.train.data import check_disjoint

    with pytest.raises(ConfigError, match="both in the training and the dev questions"):
        check_disjoint(train, train[:1])
