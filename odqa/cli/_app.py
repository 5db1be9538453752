"""The typer app shared by every command module, and the error boundary of the CLI."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from odqa.errors import OdqaError

__all__ = ["app", "console", "guarded"]

app = typer.Typer(
    name="odqa",
    help="Open-domain QA research toolkit, one command per stage: crawl, refine, index, retrieve (fused, --rerank), "
         "read, train-reader, train-retriever, train-reranker, eval, report; and bench, cache, generate, demo.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")


def guarded(func: Callable[P, R]) -> Callable[P, R]:
    """Turn an :class:`OdqaError` into one ``Type: message`` line on stderr and exit status 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except OdqaError as exc:
            console.print(f"[bold red]{type(exc).__name__}[/]: {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper
