"""``odqa crawl``: candidate documents for each question from Wikipedia, web search and offline sources.

Fetched politely and safely with httpx, extracted with trafilatura, stored in SQLite (``crawl.sqlite``) so
a run resumes where it stopped. ``iter_examples(run_dir)`` reads a finished (or partial) run back as Examples.
"""

from __future__ import annotations

from odqa.crawl.config import CrawlConfig
from odqa.crawl.export import export_jsonl, export_passages, is_crawl_dir, iter_examples, read_summary
from odqa.crawl.runner import run_crawl
from odqa.crawl.store import Summary

__all__ = [
    "CrawlConfig",
    "Summary",
    "export_jsonl",
    "export_passages",
    "is_crawl_dir",
    "iter_examples",
    "read_summary",
    "run_crawl",
]
