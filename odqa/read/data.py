"""Reader batches whose passages are retrieved on the fly, for training scripts.

``RetrievalDataset(examples, retriever, tokenizer)`` is a torch ``Dataset`` of questions; its ``collate`` asks the
retriever once per batch for each question's top passages and tokenises every (question, passage) text, so a
loop gets its contexts from any :class:`~odqa.retrieve.protocol.Retriever` (an index, a FiD file, a fake):

    data = RetrievalDataset(examples, load_retriever("indexes/wiki"), tokenizer)
    loader = DataLoader(data, batch_size=8, shuffle=True, collate_fn=data.collate)

Batches are Fusion-in-Decoder shaped: ``input_ids`` and ``attention_mask`` are ``(B, N, L)`` (N passages per
question), ``labels`` the tokenised target answers, any Hugging Face tokenizer with a padding token.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from odqa.errors import ConfigError, DependencyError
from odqa.evaluate.answers import exact_match, normalize_answer
from odqa.read.config import PASSAGE_FORMAT, SET_JOINER, AnswerKind
from odqa.records import Example, Hit
from odqa.retrieve.compose import StaticRetriever
from odqa.retrieve.protocol import Retriever

try:
    import torch
    from torch.utils.data import Dataset
except ImportError as exc:  # the reader needs torch; the rest of odqa does not
    raise DependencyError("torch", "embed") from exc

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ReaderBatch", "ReaderCollator", "ReaderFormat", "RetrievalDataset"]

PASSAGE_FIELDS = ("question", "title", "text")


@dataclass(frozen=True)
class ReaderFormat:
    """How a question and its passages become reader inputs, and its answers a target.

    ``passage_format`` may use ``{question}``, ``{title}`` and ``{text}`` (FiD's own form is the default).
    ``answers`` says what a question's gold answers are: ``"aliases"``, names of one answer (Natural Questions,
    TriviaQA, TimeQA): the target is the first, a prediction matches any; ``"set"``, every one is wanted
    (Complex-TR's multi-answer questions): the target joins them with ``answer_joiner`` and a prediction must
    list the same set.
    """

    n_passages: int = 10
    max_length: int = 256  # tokens per question + passage text
    answer_max_length: int = 32
    passage_format: str = PASSAGE_FORMAT
    answers: AnswerKind = "aliases"
    answer_joiner: str = SET_JOINER  # used for sets only

    def __post_init__(self) -> None:
        for name in ("n_passages", "max_length", "answer_max_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.answers not in get_args(AnswerKind):
            raise ConfigError(f"answers {self.answers!r} is not valid; choose one of: set, aliases")
        if not self.answer_joiner.strip():
            raise ConfigError(f"answer_joiner must hold a visible character (such as ' $and '), got "
                              f"{self.answer_joiner!r}")
        try:
            used = {field for _, field, _, _ in string.Formatter().parse(self.passage_format) if field is not None}
        except ValueError as exc:
            raise ConfigError(f"passage_format {self.passage_format!r} is not a valid format string: {exc}") from exc
        unknown = sorted(used - set(PASSAGE_FIELDS))
        if unknown:
            raise ConfigError(f"passage_format uses {unknown}; valid fields: {{question}}, {{title}}, {{text}}")

    def passage(self, question: str, title: str, text: str) -> str:
        """The reader's input text for one (question, passage) pair."""
        return self.passage_format.format(question=question, title=title, text=text)

    def target(self, answers: Sequence[str]) -> str:
        """The reader's target text for gold ``answers`` (empty when there are none): one alias, or the set."""
        if not answers:
            return ""
        return answers[0] if self.answers == "aliases" else self.answer_joiner.join(answers)

    def split(self, generated: str) -> list[str]:
        """The answers a generated target lists: itself for aliases, split on ``answer_joiner`` for a set."""
        parts = [generated] if self.answers == "aliases" else generated.split(self.answer_joiner)
        return [part.strip() for part in parts if part.strip()]

    def exact(self, generated: str, answers: Sequence[str]) -> float:
        """1.0 when ``generated`` is right: equal to one alias, or listing the gold set (SQuAD-normalised).

        A set is matched without splitting its gold members again: the prediction's parts may be regrouped, so
        a member holding the joiner ("Tom and Jerry" with " and ") is matched whole."""
        if self.answers == "aliases" or not answers:
            return exact_match(generated, list(answers) or [""])
        gold = sorted({normalize_answer(a) for a in answers})
        parts = generated.split(self.answer_joiner)
        index = {member: bit for bit, member in enumerate(gold)}
        full = (1 << len(gold)) - 1
        reach: list[set[int]] = [set() for _ in range(len(parts) + 1)]  # masks of gold members covered so far
        reach[0].add(0)
        for start in range(len(parts)):
            for mask in reach[start]:
                for end in range(start + 1, len(parts) + 1):
                    bit = index.get(normalize_answer(self.answer_joiner.join(parts[start:end])))
                    if bit is not None:
                        reach[end].add(mask | 1 << bit)
        return float(full in reach[len(parts)])


@dataclass(frozen=True)
class ReaderBatch:
    """One batch of B questions with N passages each, tokenised to at most L tokens per passage text.

    ``passage_mask`` is False where a question had fewer than N passages: those rows hold the question with an
    empty title and text, so no encoder row is fully masked. ``labels`` is ``(B, T)`` with -100 at padding.
    """

    ids: list[str]
    questions: list[str]
    hits: list[list[Hit]]
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    passage_mask: torch.Tensor
    labels: torch.Tensor

    def to(self, device: str | torch.device) -> ReaderBatch:
        """The same batch with its tensors on ``device``."""
        return ReaderBatch(self.ids, self.questions, self.hits, self.input_ids.to(device),
                           self.attention_mask.to(device), self.passage_mask.to(device), self.labels.to(device))


class ReaderCollator:
    """Turns a list of examples into a :class:`ReaderBatch`, retrieving all their passages in one ``search``.

    With ``retriever=None`` each example's own ``ctxs`` (a FiD file's) are its passages, best first.
    """

    def __init__(self, retriever: Retriever | None, tokenizer: Any, fmt: ReaderFormat | None = None) -> None:
        if getattr(tokenizer, "pad_token", None) is None:
            raise ConfigError(f"tokenizer {type(tokenizer).__name__} has no padding token; set one first "
                              "(tokenizer.pad_token = tokenizer.eos_token)")
        self.retriever = retriever
        self.tokenizer = tokenizer
        self.format = fmt or ReaderFormat()

    def __call__(self, examples: Sequence[Example]) -> ReaderBatch:
        fmt = self.format
        n = fmt.n_passages
        questions = [ex.question for ex in examples]
        if self.retriever is None:
            hits = [StaticRetriever([ex], "its own ctxs").lookup([ex.id], n)[0] for ex in examples]  # ids may repeat
        else:
            hits = [row[:n] for row in self.retriever.search(questions, n)] if examples else []
        texts = []
        for question, row in zip(questions, hits, strict=True):
            texts += [fmt.passage(question, h.passage.title, h.passage.text) for h in row]
            texts += [fmt.passage(question, "", "")] * (n - len(row))
        encoded = self._tokenize(texts, fmt.max_length)
        length = encoded["input_ids"].shape[-1]
        target = self._tokenize([fmt.target(ex.answers) for ex in examples], fmt.answer_max_length, target=True)
        labels = target["input_ids"].masked_fill(target["attention_mask"] == 0, -100)
        passage_mask = torch.tensor([[i < len(row) for i in range(n)] for row in hits], dtype=torch.bool)
        return ReaderBatch(
            ids=[ex.id for ex in examples],
            questions=questions,
            hits=hits,
            input_ids=encoded["input_ids"].view(len(examples), n, length),
            attention_mask=encoded["attention_mask"].view(len(examples), n, length),
            passage_mask=passage_mask.view(len(examples), n),
            labels=labels,
        )

    def _tokenize(self, texts: list[str], max_length: int, target: bool = False) -> Mapping[str, torch.Tensor]:
        if not texts:
            empty = torch.zeros((0, 0), dtype=torch.long)
            return {"input_ids": empty, "attention_mask": empty}
        text = {"text_target" if target else "text": texts}  # targets may be tokenised differently (mBART)
        out = self.tokenizer(**text, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        return {"input_ids": out["input_ids"], "attention_mask": out["attention_mask"]}


class RetrievalDataset(Dataset[Example]):
    """Questions for a reader; ``collate`` (a :class:`ReaderCollator`) fetches their passages per batch."""

    def __init__(self, examples: Iterable[Example], retriever: Retriever | None, tokenizer: Any,
                 fmt: ReaderFormat | None = None) -> None:
        self.examples = list(examples)
        self.collate = ReaderCollator(retriever, tokenizer, fmt)

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> Example:
        return self.examples[index]
