"""The Fusion-in-Decoder model: the fusion itself, masks, and the errors a user can hit loading or running it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from reader_tasks import copy_task

from odqa.errors import ConfigError, InputError, ModelError, ResourceError
from odqa.read.config import ReadConfig
from odqa.read.data import ReaderBatch, ReaderCollator, ReaderFormat
from odqa.read.infer import ReadStats, predict, read
from odqa.read.model import FiDReader, fused_mask
from odqa.records import Document, Example


@pytest.fixture
def reader(tiny_reader_dir: Path) -> FiDReader:
    reader = FiDReader.load(str(tiny_reader_dir), device="cpu")
    reader.model.eval()
    return reader


def _batch(reader: FiDReader, examples: list[Example], n: int) -> ReaderBatch:
    return ReaderCollator(None, reader.tokenizer, ReaderFormat(n_passages=n, max_length=32))(examples)


def test_fid_over_one_passage_is_plain_t5(reader: FiDReader) -> None:
    batch = _batch(reader, copy_task(3), n=1)
    ids, mask = batch.input_ids[:, 0], batch.attention_mask[:, 0]
    plain = reader.model(input_ids=ids, attention_mask=mask, labels=batch.labels)
    fused = reader.loss(batch)
    torch.testing.assert_close(fused, plain.loss, rtol=0, atol=1e-6)
    states, fmask = reader.encode(batch.input_ids, batch.attention_mask, batch.passage_mask)
    fid_logits = reader.model(encoder_outputs=(states,), attention_mask=fmask, labels=batch.labels).logits
    torch.testing.assert_close(fid_logits, plain.logits, rtol=0, atol=1e-5)
    generated = reader.model.generate(input_ids=ids, attention_mask=mask, num_beams=2, max_new_tokens=5,
                                      do_sample=False)
    plain_texts = [t.strip() for t in reader.tokenizer.batch_decode(generated, skip_special_tokens=True)]
    assert reader.generate(batch, num_beams=2, max_length=5) == plain_texts


def test_passage_order_does_not_change_each_passages_encoder_states(reader: FiDReader) -> None:
    example = copy_task(1, distractors=3)[0]
    reversed_example = Example(example.id, example.question, example.answers, ctxs=tuple(reversed(example.ctxs or ())))
    forward = _batch(reader, [example], n=4)
    backward = _batch(reader, [reversed_example], n=4)
    states, _ = reader.encode(forward.input_ids, forward.attention_mask)
    states_rev, _ = reader.encode(backward.input_ids, backward.attention_mask)
    length = forward.input_ids.shape[-1]
    per_passage = states.view(4, length, -1)
    per_passage_rev = states_rev.view(4, length, -1)
    for i in range(4):
        torch.testing.assert_close(per_passage[i], per_passage_rev[3 - i], rtol=0, atol=1e-6)
    assert not torch.allclose(per_passage[0], per_passage[1])  # the passages do differ


def test_decoder_mask_hides_filler_rows_but_keeps_the_question_when_there_is_no_passage() -> None:
    attention = torch.ones((2, 3, 2), dtype=torch.long)
    passages = torch.tensor([[True, False, False], [False, False, False]])
    assert fused_mask(attention, passages).tolist() == [[1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]]


def test_empty_ctxs_answer_from_the_question_alone(reader: FiDReader) -> None:
    empty = Example("e", "what is the code?", ("apple",), ctxs=())
    batch = _batch(reader, [empty, *copy_task(1)], n=3)
    assert batch.passage_mask[0].tolist() == [False, False, False]
    texts = reader.generate(batch, max_length=3)
    alone = reader.generate(_batch(reader, [Example("e", "what is the code?", ctxs=())], n=1), max_length=3)
    assert texts[0] == alone[0]


def test_a_model_that_is_not_an_encoder_decoder_is_refused(tmp_path: Path, tokenizer: Any) -> None:
    from transformers import BertConfig, BertModel

    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path)
    with pytest.raises(ModelError, match=r"is a bert model, not an encoder-decoder; .*T5-family") as caught:
        FiDReader.load(str(tmp_path))
    assert "\n" not in str(caught.value)


def test_a_missing_model_names_the_id_and_the_way_out() -> None:
    with pytest.raises(ModelError, match=re.escape("reader model 'no-such/t5-reader' is not a local folder and "
                                                   "could not be fetched from the Hugging Face hub")) as caught:
        FiDReader.load("no-such/t5-reader")
    assert "local folder holding a T5-family checkpoint" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_fp16_on_cpu_is_refused(tiny_reader_dir: Path) -> None:
    with pytest.raises(ConfigError, match="fp16 needs a GPU"):
        FiDReader.load(str(tiny_reader_dir), device="cpu", precision="fp16")


def test_bf16_runs_the_model_in_bf16_where_the_cpu_computes_it(tiny_reader_dir: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.embed.openvino as openvino

    monkeypatch.setattr(openvino, "cpu_bf16", lambda: True)  # a CPU with AVX-512 BF16 / AMX
    seen: dict[str, list[torch.dtype]] = {"bf16": [], "fp32": []}
    for precision in ("bf16", "fp32"):
        reader = FiDReader.load(str(tiny_reader_dir), device="cpu", precision=precision)  # type: ignore[arg-type]
        dense = [m for m in reader.model.modules() if isinstance(m, torch.nn.Linear)]
        for module in dense:
            module.register_forward_hook(lambda _m, _i, out, p=precision: seen[p].append(out.dtype))
        batch = _batch(reader, copy_task(2), n=3)
        assert torch.isfinite(reader.loss(batch))
        assert len(reader.generate(batch, max_length=3)) == 2
        assert next(reader.model.parameters()).dtype == torch.float32  # weights stay fp32 under autocast
    assert seen["bf16"] and set(seen["bf16"]) == {torch.bfloat16}  # every matmul of the forward ran in bf16
    assert set(seen["fp32"]) == {torch.float32}


def test_bf16_is_refused_where_the_cpu_would_emulate_it(tiny_reader_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import odqa.embed.openvino as openvino

    monkeypatch.setattr(openvino, "cpu_bf16", lambda: False)  # an AVX2-only CPU, such as this build machine
    with pytest.raises(ConfigError, match="bf16 would run emulated on this CPU") as caught:
        FiDReader.load(str(tiny_reader_dir), device="cpu", precision="bf16")
    assert "\n" not in str(caught.value)


def test_a_tokenizer_that_cannot_encode_the_input_is_an_input_error(reader: FiDReader) -> None:
    foreign = Example("ja", "コードは何ですか", ctxs=(Document("d", "コード", "コードは林檎です"),))
    collate = ReaderCollator(None, reader.tokenizer, ReaderFormat(n_passages=1))
    with pytest.raises(InputError, match=r"question 'ja': the tokenizer of .* maps \d+ of \d+ tokens of its "
                                         r"question to "
                                         r"'<unk>'.*mT5") as caught:
        predict(reader, collate, [foreign])
    assert "\n" not in str(caught.value)


def test_read_records_a_question_it_cannot_encode_and_goes_on(reader: FiDReader, tiny_reader_dir: Path) -> None:
    tasks = copy_task(3)
    foreign = Example("ja", "コードは何ですか", answers=("林檎",), ctxs=(Document("d", "コード", "コードは林檎です"),))
    examples = [tasks[0], foreign, tasks[1], tasks[2]]
    stats = ReadStats()
    config = ReadConfig(model=str(tiny_reader_dir), n_context=3, max_length=24, batch_size=2, device="cpu")
    predictions = list(read(examples, config, reader=reader, stats=stats))
    assert [p.id for p in predictions] == ["q0", "ja", "q1", "q2"]  # input order, nobody dropped
    alone = [next(read([ex], config, reader=reader)) for ex in tasks]  # each read in a batch of its own
    assert [p.prediction for p in predictions if p.id != "ja"] == [p.prediction for p in alone]
    skipped = predictions[1]
    assert skipped.prediction == "" and skipped.answers == () and skipped.error is not None
    assert "maps" in skipped.error and "'<unk>'" in skipped.error
    assert skipped.to_json()["error"] == skipped.error and "error" not in predictions[0].to_json()
    assert stats.questions == 4 and stats.unreadable == 1 and stats.passages == 9


class _SmallMemoryReader(FiDReader):
    """Runs out of memory above ``limit`` encoder rows, as a GPU would."""

    limit = 4

    def generate(self, batch: ReaderBatch, *, num_beams: int = 1, max_length: int = 32) -> list[str]:
        b, n, _ = batch.input_ids.shape
        if b * n > self.limit:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return super().generate(batch, num_beams=num_beams, max_length=max_length)


@pytest.mark.parametrize(("batch_size", "n", "fix"), [
    (4, 1, None),  # 4 rows fit
    (4, 2, "2 x 2 fits: use --batch-size 2"),
    (1, 10, "1 x 2 fits: use --batch-size 1 --n-context 2"),  # halvings of 10: 5, 2
])
def test_a_batch_beyond_memory_says_what_fits(reader: FiDReader, batch_size: int, n: int, fix: str | None) -> None:
    small = _SmallMemoryReader(reader.model, reader.tokenizer, device="cpu", name="tiny")
    collate = ReaderCollator(None, small.tokenizer, ReadConfig(n_context=n, max_length=32).reader_format())
    examples = copy_task(batch_size, distractors=n - 1) if n > 1 else copy_task(batch_size, distractors=0)
    if fix is None:
        assert len(predict(small, collate, examples)) == batch_size
        return
    with pytest.raises(ResourceError, match=re.escape(fix)) as caught:
        predict(small, collate, examples)
    assert "do not fit in memory on cpu (reading)" in str(caught.value) and "\n" not in str(caught.value)


def test_examples_with_a_repeated_id_each_read_their_own_passages(reader: FiDReader) -> None:
    first, second = copy_task(2)
    twin = Example(first.id, second.question, second.answers, ctxs=second.ctxs)
    batch = _batch(reader, [first, twin], n=3)
    assert [h.passage.id for h in batch.hits[1]] == [d.id for d in second.ctxs or ()]


def test_reading_pads_to_the_passages_a_batch_has_not_to_n_context(reader: FiDReader) -> None:
    shapes: list[tuple[int, ...]] = []
    generate = reader.generate

    def recording(batch: ReaderBatch, **kwargs: Any) -> list[str]:
        shapes.append(tuple(batch.input_ids.shape[:2]))
        return generate(batch, **kwargs)

    reader.generate = recording  # type: ignore[method-assign]
    examples = [*copy_task(3, distractors=2), Example("none", "what is the code?", ctxs=())]
    config = ReadConfig(model="tiny", n_context=100, max_length=32, answer_max_length=3, batch_size=2)
    wide = [p.prediction for p in read(examples, config, reader=reader)]
    assert shapes == [(2, 3), (2, 3)]
    narrow = [p.prediction for p in read(examples, replace(config, n_context=3), reader=reader)]
    assert wide == narrow
