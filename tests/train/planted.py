"""A planted ranking task: each question names a rare word, and only its answer passage holds that word.

Articles are six one-passage documents of common filler words, each with one word of a small shared pool; the
answer word sits in the passage with the word the question names. A ranker that learns to match the named
word finds the answer; an untrained random model ranks near chance.
"""

from __future__ import annotations

import random
from pathlib import Path

from odqa.records import Document, Example

PASSAGES = 6
WORDS = 6  # per passage: chunk with ChunkConfig(words=WORDS) to keep one passage per document


def vocabulary(tokenizer_dir: Path) -> list[str]:
    """Whole-word entries of the tokenizer's vocabulary (each one token)."""
    from transformers import AutoTokenizer

    vocab = AutoTokenizer.from_pretrained(str(tokenizer_dir)).vocab
    return sorted(w for w in vocab if w.isalpha() and len(w) >= 5)


def planted(words: list[str], n: int, seed: int, prefix: str, marker: str | None = None) -> list[Example]:
    """``n`` questions, one article each (ids start with ``prefix``); filler and pool words fixed by the vocabulary.

    ``marker``: a word that the answer passage, and no other, also holds (a signal a small model learns fast).
    """
    fixed = random.Random(0)
    filler = fixed.sample(words, 60)
    pool = fixed.sample([w for w in words if w not in filler], 24)
    rng = random.Random(seed)
    examples = []
    for i in range(n):
        named, key, answer = rng.sample(pool, PASSAGES), rng.randrange(PASSAGES), rng.choice(filler)
        docs = []
        for j in range(PASSAGES):
            body = rng.sample([w for w in filler if w != answer], WORDS - 1)
            body.insert(rng.randrange(WORDS - 1), named[j])
            if j == key:
                body[-1 if body[-1] != named[j] else 0] = answer
                if marker is not None:
                    body[1 if body[1] not in (named[j], answer) else 2] = marker
            docs.append(Document(id=f"{prefix}{i}-{j}", title="", text=" ".join(body)))
        examples.append(Example(id=f"{prefix}q{i}", question=f"which one mentions {named[key]}?", answers=(answer,),
                                ctxs=tuple(docs)))
    return examples
