"""Training the reader: it learns, checkpoints are atomic, a resumed run takes the uninterrupted run's next steps."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from reader_tasks import copy_task
from safetensors.torch import load_file

from odqa.checkpoints import latest_checkpoint
from odqa.errors import ConfigError, InputError, ResourceError
from odqa.read.config import ReadConfig, TrainReaderConfig
from odqa.read.data import ReaderBatch, ReaderFormat
from odqa.read.infer import read
from odqa.read.model import FiDReader
from odqa.read.train import _score, train_reader
from odqa.records import Example, Hit, Passage


def _config(model: Path, **changes: object) -> TrainReaderConfig:
    reader = ReadConfig(model=str(model), n_context=3, max_length=24, answer_max_length=6, batch_size=8,
                        device="cpu", answers="set", answer_joiner=" and ")  # the word tokenizer knows "and"
    base = TrainReaderConfig(reader=reader, epochs=1000, steps=100, lr=3e-3, warmup_steps=10, schedule="constant",
                             checkpoint_every=100, eval_every=50, seed=0)
    return replace(base, **changes)  # type: ignore[arg-type]


def test_training_learns_to_copy_the_answer_from_the_right_passage(tmp_path: Path, tiny_reader_dir: Path) -> None:
    # the same question every time: only the passages, shuffled among distractors, say what the answer is
    train = copy_task(8, two_answers=2)
    summary = train_reader(train, tmp_path / "run", _config(tiny_reader_dir), dev=train)
    assert summary.losses[-1] < summary.losses[0] / 20
    assert summary.best is not None and summary.best.exact == 1.0
    assert [s.step for s in summary.dev] == [50, 100]
    assert summary.best_dir == tmp_path / "run" / "best" and (summary.best_dir / "dev_score.json").is_file()
    assert summary.checkpoint == tmp_path / "run" / "checkpoint-0000100"
    predictions = list(read(train, ReadConfig(model=str(summary.best_dir), n_context=3, max_length=24,
                                              batch_size=4, device="cpu", answers="set", answer_joiner=" and ")))
    assert [p.answers for p in predictions] == [ex.answers for ex in train]
    assert predictions[-1].prediction == " and ".join(train[-1].answers)  # two answers, joined and split back


def test_the_trained_reader_copies_from_passages_it_never_saw(tmp_path: Path, tiny_reader_dir: Path) -> None:
    # held-out questions: other distractors, other orders; the same question text, so only reading can answer
    train, held_out = copy_task(30, seed=0), copy_task(10, seed=5)
    def contexts(examples: list[Example]) -> set[tuple[str, ...]]:
        return {tuple(d.text for d in ex.ctxs or ()) for ex in examples}

    assert contexts(train).isdisjoint(contexts(held_out))
    summary = train_reader(train, tmp_path / "run", _config(tiny_reader_dir), dev=held_out)
    assert summary.dev[0].exact < 1.0 and summary.best is not None and summary.best.exact == 1.0


def test_multi_answer_targets_round_trip_through_the_connector() -> None:
    for joiner in (" and ", " ; ", " $and "):
        fmt = ReaderFormat(answers="set", answer_joiner=joiner)
        for answers in (["Real Madrid"], ["Real Madrid", "Inter Milan"], ["A", "B", "C"]):
            assert fmt.split(fmt.target(answers)) == answers
    aliases = ReaderFormat(answers="aliases")
    assert aliases.target(["Tom and Jerry", "T&J"]) == "Tom and Jerry"
    assert aliases.split("Tom and Jerry") == ["Tom and Jerry"]
    assert ReaderFormat().split("") == []


def test_dev_exact_match_compares_like_with_like_when_an_answer_holds_the_joiner() -> None:
    answer_set = ReaderFormat(answers="set", answer_joiner=" and ")
    gold = ["Tom and Jerry", "Scooby-Doo"]
    for prediction in ("Tom and Jerry and Scooby-Doo", "Scooby-Doo and Tom and Jerry", "scooby-doo and TOM AND JERRY"):
        assert _score(prediction, gold, answer_set) == (1.0, 1.0)
    for wrong in ("Tom and Jerry", "Tom and Scooby-Doo", "Jerry and Tom and Scooby-Doo", "Tom and Jerry and Scooby-Doo"
                  " and Garfield"):
        assert _score(wrong, gold, answer_set)[0] == 0.0
    assert _score("Tom and Jerry", ["Tom and Jerry"], answer_set)[0] == 1.0  # one member, never split
    aliases = ReaderFormat(answers="aliases")  # NQ / TriviaQA / TimeQA: names of one answer, the target is one
    assert _score("T&J", ["Tom and Jerry", "T&J"], aliases) == (1.0, 1.0)
    assert _score("Tom and Jerry", ["Tom and Jerry", "T&J"], aliases) == (1.0, 1.0)
    assert _score("Tom and Jerry and T&J", ["Tom and Jerry", "T&J"], aliases)[0] == 0.0


def test_the_answers_convention_is_the_datasets_unless_given() -> None:
    assert ReadConfig().reader_format().answers == "aliases"  # a FiD file: NQ, TriviaQA
    for dataset, kind in (("complex-tr", "set"), ("timeqa", "aliases"), ("fid", "aliases")):
        assert ReadConfig(dataset=dataset).reader_format().answers == kind
    complex_tr = ReadConfig(dataset="complex-tr").reader_format()
    assert complex_tr.target(["Tom and Jerry", "Scooby-Doo"]) == "Tom and Jerry $and Scooby-Doo"
    assert ReadConfig(dataset="complex-tr", answers="aliases").reader_format().answers == "aliases"
    with pytest.raises(ConfigError, match="dataset 'nq' is not valid; choose one of: complex-tr, fid"):
        ReadConfig(dataset="nq")


def test_the_best_checkpoint_is_chosen_on_set_equality_with_a_joiner_inside_an_answer(
        tmp_path: Path, tiny_reader_dir: Path) -> None:
    # the gold member "apple and tiger" holds the joiner: a reader that learns the target must score dev EM 1
    train = [Example(ex.id, ex.question, ("apple and tiger", ex.answers[0]), ctxs=ex.ctxs) for ex in copy_task(4)]
    summary = train_reader(train, tmp_path / "run", _config(tiny_reader_dir), dev=train)
    assert summary.best is not None and summary.best.exact == 1.0


def test_a_checkpoint_written_on_a_gpu_resumes_on_a_cpu(tmp_path: Path, tiny_reader_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch.serialization

    config = _config(tiny_reader_dir, steps=2, checkpoint_every=1)
    train_reader(copy_task(4), tmp_path / "run", config)
    state_file = tmp_path / "run" / "checkpoint-0000002" / "trainer.pt"
    state = torch.load(state_file, weights_only=False)
    with monkeypatch.context() as patch:  # written as a GPU run writes it: every tensor tagged cuda:0
        patch.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(state, state_file)
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(state_file, weights_only=False)  # what a load without map_location does here
    resumed = train_reader(copy_task(4), tmp_path / "run", replace(config, steps=3), resume=True)
    assert resumed.resumed_from == 2 and len(resumed.losses) == 3


def test_the_run_follows_the_data_epochs_with_steps_as_a_cap(tmp_path: Path, tiny_reader_dir: Path) -> None:
    config = replace(_config(tiny_reader_dir), epochs=3, steps=None, warmup_steps=None)
    config = replace(config, reader=replace(config.reader, batch_size=4))
    summary = train_reader(copy_task(12), tmp_path / "run", config)  # 12 questions, 4 a step: 3 steps an epoch
    assert len(summary.losses) == 9 and summary.epochs == 3.0 and summary.questions == 12
    capped = train_reader(copy_task(12), tmp_path / "capped", replace(config, steps=4))
    assert len(capped.losses) == 4 and capped.epochs == pytest.approx(4 / 3)
    assert TrainReaderConfig().total_steps(12) == 120 and TrainReaderConfig().warmup(120) == 12
    assert TrainReaderConfig(steps=50).total_steps(12) == 50


def _parameters(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(folder / "model.safetensors"))


def test_a_resumed_run_takes_the_same_next_steps(tmp_path: Path, dropout_reader_dir: Path) -> None:
    train = copy_task(6)
    config = _config(dropout_reader_dir, steps=6, checkpoint_every=3, warmup_steps=2, schedule="linear", lr=1e-2)
    config = replace(config, reader=replace(config.reader, batch_size=4))  # 2 batches per epoch: order reshuffles
    whole = train_reader(train, tmp_path / "whole", config)

    class Interrupted(Exception):
        pass

    def stop_after_three(step: int, loss: float) -> None:
        if step == 3:
            raise Interrupted

    with pytest.raises(Interrupted):
        train_reader(train, tmp_path / "cut", config, progress=stop_after_three)
    assert latest_checkpoint(tmp_path / "cut") == tmp_path / "cut" / "checkpoint-0000003"
    resumed = train_reader(train, tmp_path / "cut", config, resume=True)
    assert resumed.resumed_from == 3
    assert resumed.losses == whole.losses  # steps 4-6 bitwise as the uninterrupted run's
    final, final_resumed = _parameters(whole.checkpoint), _parameters(resumed.checkpoint)
    assert final.keys() == final_resumed.keys()
    assert all(torch.equal(final[k], final_resumed[k]) for k in final)
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == ["checkpoint-0000003", "checkpoint-0000006"]


def test_old_checkpoints_are_pruned_and_no_temporary_folder_is_left(tmp_path: Path, tiny_reader_dir: Path) -> None:
    config = _config(tiny_reader_dir, steps=5, checkpoint_every=1, keep_checkpoints=2)
    train_reader(copy_task(4), tmp_path / "run", config)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checkpoint-0000004", "checkpoint-0000005"]
    assert (tmp_path / "run" / "checkpoint-0000005" / "trainer.pt").is_file()


def test_an_existing_run_is_not_overwritten_and_resume_needs_a_checkpoint(tmp_path: Path,
                                                                          tiny_reader_dir: Path) -> None:
    config = _config(tiny_reader_dir, steps=1)
    with pytest.raises(InputError, match="holds no checkpoint-\\* folder to resume from"):
        train_reader(copy_task(2), tmp_path / "run", config, resume=True)
    train_reader(copy_task(2), tmp_path / "run", config)
    with pytest.raises(ConfigError, match=re.escape("already holds checkpoint-0000001; pass --resume")):
        train_reader(copy_task(2), tmp_path / "run", config)


def test_fp16_training_is_refused(tmp_path: Path, tiny_reader_dir: Path) -> None:
    config = _config(tiny_reader_dir)
    config = replace(config, reader=replace(config.reader, precision="fp16"))
    with pytest.raises(ConfigError, match="train with bf16"):
        train_reader(copy_task(2), tmp_path / "run", config)


class _CodeRetriever:
    """Serves each question's passages by its text, as an index would; records every search."""

    def __init__(self, examples: list[Example]) -> None:
        self.by_question = {ex.question: [Hit(Passage(d.id, d.id, d.title, d.text), 0.0) for d in ex.ctxs or ()]
                            for ex in examples}
        self.calls: list[tuple[int, int]] = []

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        self.calls.append((len(queries), k))
        return [self.by_question[q][:k] for q in queries]


def test_training_fetches_contexts_from_a_retriever(tmp_path: Path, tiny_reader_dir: Path) -> None:
    tasks = copy_task(4)
    questions = [Example(ex.id, f"{ex.question} {ex.answers[0]}", ex.answers, ctxs=ex.ctxs) for ex in tasks]
    retriever = _CodeRetriever(questions)
    bare = [Example(ex.id, ex.question, ex.answers) for ex in questions]  # no ctxs: only the retriever has them
    config = _config(tiny_reader_dir, steps=3, eval_every=3)
    config = replace(config, reader=replace(config.reader, batch_size=2))
    summary = train_reader(bare, tmp_path / "run", config, dev=bare[:2], retriever=retriever)
    assert retriever.calls == [(2, 3)] * 3 + [(2, 3)]  # one search per training batch, then the dev batch
    assert summary.no_context == 0 and len(summary.losses) == 3 and summary.best is not None


def test_a_training_batch_beyond_memory_says_what_fits(tmp_path: Path, tiny_reader_dir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real_loss = FiDReader.loss

    def small_memory_loss(self: FiDReader, batch: ReaderBatch) -> torch.Tensor:
        if batch.input_ids.shape[0] * batch.input_ids.shape[1] > 6:
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")
        return real_loss(self, batch)

    monkeypatch.setattr(FiDReader, "loss", small_memory_loss)
    with pytest.raises(ResourceError, match=re.escape("8 question(s) x 3 passages x 18 tokens do not fit in memory "
                                                      "on cpu (training); 2 x 3 fits: use --batch-size 2")):
        train_reader(copy_task(8), tmp_path / "run", _config(tiny_reader_dir, steps=1))


def test_gradient_checkpointing_gives_the_same_steps(tmp_path: Path, tiny_reader_dir: Path) -> None:
    config = _config(tiny_reader_dir, steps=3)
    plain = train_reader(copy_task(8), tmp_path / "plain", config)
    recomputed = train_reader(copy_task(8), tmp_path / "ckpt", replace(config, gradient_checkpointing=True))
    assert recomputed.losses == pytest.approx(plain.losses, rel=1e-5)


def test_resuming_with_other_settings_is_refused(tmp_path: Path, tiny_reader_dir: Path) -> None:
    config = _config(tiny_reader_dir, steps=2, checkpoint_every=1)
    train_reader(copy_task(4), tmp_path / "run", config)
    changed = replace(config, seed=1, reader=replace(config.reader, batch_size=2))
    with pytest.raises(ConfigError, match=re.escape("differ from those of checkpoint-0000002: reader.batch_size 8 -> "
                                                    "2, seed 0 -> 1")) as caught:
        train_reader(copy_task(4), tmp_path / "run", changed, resume=True)
    assert "\n" not in str(caught.value)
    longer = replace(config, steps=3, eval_every=7, reader=replace(config.reader, device=None))
    assert len(train_reader(copy_task(4), tmp_path / "run", longer, resume=True).losses) == 3
