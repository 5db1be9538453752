"""Lazy imports of optional dependencies, with an error naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from odqa.errors import DependencyError


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` or raise :class:`DependencyError` naming ``odqa[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise DependencyError(module, extra) from exc
