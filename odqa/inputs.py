"""What a command reads its questions from: an ``odqa crawl`` output folder or a dataset file.

This sits above both :mod:`odqa.crawl` and :mod:`odqa.datasets`, so neither imports the other.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from odqa.datasets.detect import load_dataset
from odqa.datasets.hybridqa import load_hybridqa
from odqa.errors import InputError
from odqa.records import Example

__all__ = ["load_examples"]


def load_examples(path: str | Path, tables: str | Path | None = None) -> Iterator[Example]:
    """The examples of a crawl folder or a questions file (its dataset detected from its first record); with
    ``tables`` (a ``WikiTables-WithLinks`` folder), of a HybridQA questions file read with its tables
    (:func:`~odqa.datasets.hybridqa.load_hybridqa`).

    The first example is read before this returns, so a missing, unreadable or empty input fails here, before
    any slow work (a model load) starts; the rest is read lazily.
    """
    path = Path(path)
    if tables is not None:
        if not path.is_file():
            raise InputError(f"{path}: no such file; with tables, pass a HybridQA questions file (a JSON array of "
                             "{question_id, question, table_id, answer-text?})")
        examples = load_hybridqa(path, tables)
    elif path.is_dir():
        from odqa.crawl.export import is_crawl_dir, iter_examples  # lazily: keeps `import odqa` light

        if not is_crawl_dir(path):
            raise InputError(f"{path} is a folder but not an `odqa crawl` output folder (no crawl store in it); "
                             "pass a questions file or a crawl output folder")
        examples = iter_examples(path)
    elif path.is_file():
        examples = load_dataset(path)
    else:
        raise InputError(f"{path}: no such file or folder")
    first = next(examples, None)
    if first is None:
        raise InputError(f"{path} holds no questions; expected one JSON record per question, or a crawl folder "
                         "with questions in it")
    return itertools.chain([first], examples)
