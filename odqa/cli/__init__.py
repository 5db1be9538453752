"""The ``odqa`` command line. Each command lives in its own module and imports heavy libraries lazily."""

from __future__ import annotations

from odqa.cli import bench as _bench  # noqa: F401
from odqa.cli import cache as _cache  # noqa: F401
from odqa.cli import crawl as _crawl  # noqa: F401
from odqa.cli import demo as _demo  # noqa: F401
from odqa.cli import eval as _eval  # noqa: F401
from odqa.cli import generate as _generate  # noqa: F401
from odqa.cli import index as _index  # noqa: F401
from odqa.cli import read as _read  # noqa: F401
from odqa.cli import refine as _refine  # noqa: F401
from odqa.cli import report as _report  # noqa: F401
from odqa.cli import retrieve as _retrieve  # noqa: F401
from odqa.cli import train as _train  # noqa: F401
from odqa.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app()
