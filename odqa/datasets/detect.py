"""Read questions from whatever a user points refine at: a crawl folder, a TimeQA file, or FiD / Atlas /
Complex-TR-style JSON(L) with candidates under ``ctxs`` or ``passages``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from odqa.datasets.timeqa import is_timeqa, load_timeqa
from odqa.errors import InputError
from odqa.io import read_fid, read_json_or_jsonl
from odqa.records import Example

__all__ = ["load_examples"]


def load_examples(path: str | Path) -> Iterator[Example]:
    """Examples from ``path``, its format detected from the folder layout or the first record."""
    path = Path(path)
    if path.is_dir():
        from odqa.crawl.export import is_crawl_dir, iter_examples  # lazily: keeps `import odqa` light

        if is_crawl_dir(path):
            yield from iter_examples(path)
            return
        raise InputError(f"{path} is a folder but not an `odqa crawl` output folder (no crawl store in it); "
                         "pass a questions file or a crawl output folder")
    if not path.is_file():
        raise InputError(f"{path}: no such file or folder")
    first = next(iter(read_json_or_jsonl(path)), None)
    if first is None:
        return
    reader = load_timeqa if is_timeqa(first[1]) else read_fid
    yield from reader(path)

