"""Typed access to the fields of a JSON record, for the loaders: a null or mistyped field raises ``ValueError``
naming the field and the JSON type found, which each loader turns into a ``FormatError`` with file and line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["json_type", "optional_string", "string", "strings"]


def json_type(value: Any) -> str:
    """How JSON names the type of ``value``: ``null``, ``a JSON number``, ``a JSON array``, ..."""
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (str, "string"), ((int, float), "number"), (list, "array"),
                       (Mapping, "object")):
        if isinstance(value, kind):
            return f"a JSON {name}"
    return type(value).__name__


def string(obj: Mapping[str, Any], key: str) -> str:
    """``obj[key]``, which must be a string."""
    if key not in obj:
        raise ValueError(f"missing '{key}'")
    value = obj[key]
    if not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string, got {json_type(value)}")
    return value


def optional_string(obj: Mapping[str, Any], key: str) -> str | None:
    """``obj[key]`` when present and not null, which must then be a string."""
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"'{key}' must be a string or absent, got {json_type(value)}")
    return value


def strings(obj: Mapping[str, Any], key: str) -> list[str]:
    """``obj[key]``, which must be a list of strings."""
    value = obj.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        shown = "null" if value is None else _short(value)
        raise ValueError(f"'{key}' must be a list of strings, got {shown}")
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
