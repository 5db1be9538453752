"""Reader batches retrieved on the fly: shapes, texts, targets, one search per batch, any tokenizer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from torch.utils.data import DataLoader

from odqa.errors import ConfigError
from odqa.read.data import ReaderBatch, ReaderCollator, ReaderFormat, RetrievalDataset
from odqa.records import Example, Hit, Passage

PASSAGES = [
    Passage("p0", "d0", "Carlos", "Carlos played for Real Madrid from 1996 to 1999."),
    Passage("p1", "d1", "Carlos", "In 1999 Carlos moved to Inter Milan, where he stayed two seasons."),
    Passage("p2", "d2", "Board", "Anne Smith chaired the board from 2001 to 2006."),
    Passage("p3", "d3", "Board", "Mark Lee followed Anne Smith as chair in 2006."),
    Passage("p4", "d4", "Weather", "The region has mild, wet winters."),
]
EXAMPLES = [
    Example("q0", "Which team did Carlos play for in 1998?", ("Real Madrid",)),
    Example("q1", "Who chaired the board in 2004?", ("Anne Smith", "A. Smith")),
    Example("q2", "What are the winters like?", ()),
    Example("q3", "Which clubs did Carlos play for?", ("Real Madrid", "Inter Milan")),
    Example("q4", "Who followed Anne Smith?", ("Mark Lee",)),
]


class OverlapRetriever:
    """Ranks PASSAGES by shared lowercase words (a deterministic stand-in for an index); records each call."""

    def __init__(self, passages: Sequence[Passage] = PASSAGES) -> None:
        self.passages = passages
        self.calls: list[tuple[list[str], int]] = []

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        self.calls.append((list(queries), k))
        out = []
        for query in queries:
            words = set(query.lower().split())
            scored = [Hit(p, float(len(words & set(f"{p.title} {p.text}".lower().split())))) for p in self.passages]
            out.append(sorted(scored, key=lambda h: -h.score)[:k])
        return out


@pytest.fixture(scope="module")
def tokenizer(minilm_path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


def _tokens(tokenizer: Any, text: str, max_length: int) -> list[int]:
    return list(tokenizer(text, truncation=True, max_length=max_length)["input_ids"])


def _unpadded(ids: Any, mask: Any) -> list[int]:
    return [int(i) for i, m in zip(ids, mask, strict=True) if m]


def test_batch_shapes_and_texts(tokenizer: Any) -> None:
    fmt = ReaderFormat(n_passages=3, max_length=64)
    retriever = OverlapRetriever()
    batch = ReaderCollator(retriever, tokenizer, fmt)(EXAMPLES[:2])
    assert isinstance(batch, ReaderBatch)
    b, n, length = batch.input_ids.shape
    assert (b, n) == (2, 3) and length <= 64
    assert batch.attention_mask.shape == batch.input_ids.shape
    assert batch.passage_mask.tolist() == [[True] * 3, [True] * 3]
    assert batch.ids == ["q0", "q1"]
    expected_hits = retriever.search([ex.question for ex in EXAMPLES[:2]], 3)
    assert batch.hits == expected_hits
    for row, (example, hits) in enumerate(zip(EXAMPLES[:2], expected_hits, strict=True)):
        for i, hit in enumerate(hits):
            text = f"question: {example.question} title: {hit.passage.title} context: {hit.passage.text}"
            assert _unpadded(batch.input_ids[row, i], batch.attention_mask[row, i]) == _tokens(tokenizer, text, 64)


def test_one_search_per_batch_through_a_dataloader(tokenizer: Any) -> None:
    retriever = OverlapRetriever()
    data = RetrievalDataset(EXAMPLES, retriever, tokenizer, ReaderFormat(n_passages=2))
    batches = list(DataLoader(data, batch_size=2, collate_fn=data.collate))
    assert len(data) == 5 and data[1] == EXAMPLES[1]
    assert [batch.ids for batch in batches] == [["q0", "q1"], ["q2", "q3"], ["q4"]]
    assert retriever.calls == [([ex.question for ex in EXAMPLES[i:i + 2]], 2) for i in (0, 2, 4)]
    assert [tuple(batch.input_ids.shape[:2]) for batch in batches] == [(2, 2), (2, 2), (1, 2)]


def test_targets_join_answers_and_pad_with_minus_100(tokenizer: Any) -> None:
    batch = ReaderCollator(OverlapRetriever(), tokenizer, ReaderFormat(n_passages=1))(EXAMPLES[:3])
    rows = [[int(t) for t in row if t != -100] for row in batch.labels]
    assert rows[0] == _tokens(tokenizer, "Real Madrid", 32)
    assert rows[1] == _tokens(tokenizer, "Anne Smith", 32)  # aliases of one answer (the default): the first
    assert rows[2] == _tokens(tokenizer, "", 32)  # no gold answers: an empty target
    assert (batch.labels == -100).sum() > 0 and int(batch.labels.min()) == -100


def test_a_set_joins_its_answers_and_aliases_keep_the_first(tokenizer: Any) -> None:
    def first_target(fmt: ReaderFormat) -> list[int]:
        labels = ReaderCollator(OverlapRetriever(), tokenizer, fmt)([EXAMPLES[3]]).labels[0]
        return [int(t) for t in labels if t != -100]

    assert first_target(ReaderFormat(answers="set", answer_joiner=", ")) == _tokens(tokenizer,
                                                                                     "Real Madrid, Inter Milan", 32)
    assert first_target(ReaderFormat(answers="aliases")) == _tokens(tokenizer, "Real Madrid", 32)
    assert len(first_target(ReaderFormat(answer_max_length=3))) == 3


def test_passage_format_is_configurable_and_truncated(tokenizer: Any) -> None:
    fmt = ReaderFormat(n_passages=1, max_length=8, passage_format="{title}. {text} [Q] {question}")
    batch = ReaderCollator(OverlapRetriever(), tokenizer, fmt)(EXAMPLES[:1])
    hit = batch.hits[0][0]
    text = f"{hit.passage.title}. {hit.passage.text} [Q] {EXAMPLES[0].question}"
    assert batch.input_ids.shape[-1] == 8
    assert _unpadded(batch.input_ids[0, 0], batch.attention_mask[0, 0]) == _tokens(tokenizer, text, 8)


def test_questions_with_fewer_passages_get_blank_rows(tokenizer: Any) -> None:
    class Sparse:
        def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
            return [[Hit(PASSAGES[0], 1.0)], []][: len(queries)]

    batch = ReaderCollator(Sparse(), tokenizer, ReaderFormat(n_passages=3))(EXAMPLES[:2])
    assert batch.input_ids.shape[:2] == (2, 3)
    assert batch.passage_mask.tolist() == [[True, False, False], [False, False, False]]
    blank = f"question: {EXAMPLES[1].question} title:  context: "
    for i in range(3):
        assert _unpadded(batch.input_ids[1, i], batch.attention_mask[1, i]) == _tokens(tokenizer, blank, 256)
    assert bool(batch.attention_mask.sum(-1).gt(0).all())  # no fully masked encoder row
    assert batch.hits == [[Hit(PASSAGES[0], 1.0)], []]


def test_a_retriever_returning_too_many_hits_is_cut_to_n(tokenizer: Any) -> None:
    class Greedy:
        def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
            return [[Hit(p, 1.0) for p in PASSAGES] for _ in queries]

    batch = ReaderCollator(Greedy(), tokenizer, ReaderFormat(n_passages=2))(EXAMPLES[:1])
    assert batch.input_ids.shape[:2] == (1, 2) and len(batch.hits[0]) == 2


def test_to_moves_every_tensor(tokenizer: Any) -> None:
    batch = ReaderCollator(OverlapRetriever(), tokenizer, ReaderFormat(n_passages=2))(EXAMPLES[:2])
    moved = batch.to("meta")
    assert {t.device.type for t in (moved.input_ids, moved.attention_mask, moved.passage_mask, moved.labels)} \
        == {"meta"}
    assert moved.ids == batch.ids and moved.hits == batch.hits


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_passages": 0}, "n_passages must be >= 1"),
    ({"max_length": 0}, "max_length must be >= 1"),
    ({"passage_format": "q: {query} p: {text}"}, r"uses \['query'\]; valid fields"),
    ({"passage_format": "q: {question"}, "not a valid format string"),
])
def test_bad_formats_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReaderFormat(**kwargs)


def test_a_tokenizer_without_padding_is_refused() -> None:
    class NoPad:
        pad_token = None

    with pytest.raises(ConfigError, match="no padding token"):
        ReaderCollator(OverlapRetriever(), NoPad())


def test_batches_from_a_fid_file_through_load_retriever(tokenizer: Any) -> None:
    from odqa import load_examples, load_retriever

    path = Path(__file__).parents[1] / "examples" / "data" / "timeqa_bm25_top5.jsonl"
    examples = list(load_examples(path))[:3]
    data = RetrievalDataset(examples, load_retriever(path), tokenizer, ReaderFormat(n_passages=4))
    batch = next(iter(DataLoader(data, batch_size=3, collate_fn=data.collate)))
    assert batch.input_ids.shape[:2] == (3, 4)
    assert [[h.passage.text for h in row] for row in batch.hits] == \
        [[doc.text for doc in (ex.ctxs or ())][:4] for ex in examples]
    assert batch.passage_mask.all()
