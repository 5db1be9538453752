"""The copy task the reader tests train on, a word-level tokenizer for it, and a FiD file writer."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from odqa.records import Document, Example

CODES = ["apple", "tiger", "river", "stone", "cloud", "maple", "falcon", "harbor", "lantern", "meadow"]
COLORS = ["red", "blue", "green", "amber", "violet", "cyan", "olive", "coral", "ivory", "pearl"]
QUESTION = "what is the code?"


def word_tokenizer(texts: list[str]) -> Any:
    """A lowercasing word-level tokenizer over the words of ``texts``; </s> ends each input, <unk> the rest."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    pre = pre_tokenizers.Whitespace()
    words = sorted({w for text in texts for w, _ in pre.pre_tokenize_str(text.lower())})
    vocab = {w: i for i, w in enumerate(["<pad>", "<unk>", "</s>", *words])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre
    backend.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 2)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", eos_token="</s>")


def copy_task(n: int, seed: int = 0, distractors: int = 2, two_answers: int = 0) -> list[Example]:
    """``n`` questions "what is the code?" whose answer is in one passage among ``distractors`` colour passages,
    shuffled; the last ``two_answers`` questions have two codes in two passages (answers joined by " and ")."""
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        codes = [CODES[i % len(CODES)]] + ([CODES[(i + 3) % len(CODES)]] if i >= n - two_answers else [])
        ctxs = [Document(f"{i}-code{j}", "code", f"the code is {code} .") for j, code in enumerate(codes)]
        ctxs += [Document(f"{i}-color{j}", "color", f"the color is {rng.choice(COLORS)} .")
                 for j in range(distractors)]
        rng.shuffle(ctxs)
        examples.append(Example(f"q{i}", QUESTION, tuple(codes), ctxs=tuple(ctxs)))
    return examples


def vocabulary_texts() -> list[str]:
    return [f"question: {QUESTION} title: code color context: the code is color . and", *CODES, *COLORS]


def write_fid(path: Path, examples: list[Example]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for ex in examples:
            ctxs = [{"id": d.id, "title": d.title, "text": d.text} for d in ex.ctxs or ()]
            fh.write(json.dumps({"id": ex.id, "question": ex.question, "answers": list(ex.answers), "ctxs": ctxs})
                     + "\n")
    return path
