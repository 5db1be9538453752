"""Back-conversion of loaded examples to FiD JSON Lines (``{id, question, answers, ctxs: [{id, title,
text}]}``).

The record is :func:`odqa.io.example_to_fid`'s, the one ``odqa refine`` writes for retrieved hits; here the
contexts are the example's own documents or passages, in order, without scores.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from odqa.io import CtxKey, example_to_fid, write_fid
from odqa.records import Example

__all__ = ["to_fid", "write_examples_fid"]


def to_fid(example: Example, *, ctx_key: CtxKey = "ctxs") -> dict[str, Any]:
    """The FiD record of ``example``: its documents or passages as contexts, in order (no scores)."""
    record = example_to_fid(example, (), ctx_key=ctx_key)
    record[ctx_key] = [{"id": doc.id, "title": doc.title, "text": doc.text} for doc in example.ctxs or ()]
    return record


def write_examples_fid(path: str | Path, examples: Iterable[Example], *, ctx_key: CtxKey = "ctxs") -> int:
    """Atomically write ``examples`` as FiD JSON Lines; returns the number written."""
    return write_fid(path, (to_fid(e, ctx_key=ctx_key) for e in examples))
