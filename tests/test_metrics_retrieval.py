"""Answer recall@k over FiD records: recomputed has_answer, file flags, unanswerable questions skipped."""

from __future__ import annotations

import pytest

from odqa.errors import FormatError
from odqa.evaluate.retrieval import evaluate_retrieval
from odqa.records import Document, Example


def _doc(text: str, flag: bool | None = None) -> Document:
    return Document(id=text[:8], title="", text=text, meta={} if flag is None else {"has_answer": flag})


EXAMPLES = [
    Example(id="q1", question="Capital of France?", answers=("Paris",),
            ctxs=(_doc("Lyon is a city.", False), _doc("Paris is the capital.", True))),
    Example(id="q2", question="Where is the Louvre?", answers=("Paris",),
            ctxs=(_doc("The Parisian museum.", True), _doc("Nothing here.", False))),
    Example(id="q3", question="Unanswerable?", answers=(), ctxs=(_doc("Paris.", True),)),
    Example(id="q4", question="No passages?", answers=("x",), ctxs=()),
]


def test_recall_recomputes_has_answer_from_text() -> None:
    out = evaluate_retrieval(EXAMPLES, (1, 2, 100))
    # q1 found at rank 2; q2 never ("Parisian" is not the token "paris"); q4 has no passages
    assert out["recall@1"] == 0.0
    assert out["recall@2"] == pytest.approx(1 / 3)
    assert out["recall@100"] == pytest.approx(1 / 3)
    assert out["answerable"] == 3 and out["unanswerable_skipped"] == 1 and out["without_passages"] == 1


def test_recall_can_trust_the_file_flags() -> None:
    out = evaluate_retrieval(EXAMPLES, (1, 2), use_flags=True)
    assert out["recall@1"] == pytest.approx(1 / 3)  # q2's flag says rank 1 has the answer
    assert out["recall@2"] == pytest.approx(2 / 3)
    assert out["has_answer"] == "file flags"


def test_missing_flags_are_reported() -> None:
    example = Example(id="q", question="?", answers=("a",), ctxs=(_doc("a b c"),))
    with pytest.raises(FormatError, match="passage 0 has no boolean 'has_answer' flag"):
        evaluate_retrieval([example], use_flags=True)
