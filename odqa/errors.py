"""The odqa exception tree.

Every error odqa raises on purpose derives from ``OdqaError``; the CLI catches that class only and prints
``Type: message``. Third-party errors (json, httpx, faiss, ...) are translated at the boundary with
``raise ... from exc`` so the original stays attached.

    OdqaError
    ├── ConfigError            bad option value, unknown config key, unknown preset
    │   └── IndexMismatchError an index used with another model, dimension or corpus than it was built with
    ├── InputError             unreadable or malformed input file, bad record
    │   ├── FormatError        a record that does not fit the expected schema (carries file and line)
    │   ├── NoPositiveError    training questions none of whose candidates holds a gold answer
    │   └── IndexFormatError   an index folder that is incomplete, damaged, or written by a newer odqa
    ├── OutputError            an output path that cannot be written
    ├── ModelError             a model that cannot be loaded (missing weights, no hub access)
    ├── ResourceError          work that does not fit the machine (a reader batch beyond memory); says what fits
    ├── DependencyError        an optional extra that is not installed
    └── CrawlError             a crawl run that cannot proceed (not per-page failures, which are data)
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "CrawlError",
    "DependencyError",
    "FormatError",
    "IndexFormatError",
    "IndexMismatchError",
    "InputError",
    "ModelError",
    "NoPositiveError",
    "OdqaError",
    "OutputError",
    "ResourceError",
]


class OdqaError(Exception):
    """Base class of every error odqa raises on purpose."""


class ConfigError(OdqaError):
    """An option, config file key or preset name that is not valid."""


class InputError(OdqaError):
    """An input file that cannot be read or holds nothing usable."""


class FormatError(InputError):
    """A record that does not fit its format; knows where it came from."""

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


class NoPositiveError(InputError):
    """Training data where no question has a candidate passage holding its gold answer: nothing to learn from."""


class IndexFormatError(InputError):
    """An index folder that cannot be used as it is: no manifest, missing or truncated files, a newer format."""


class IndexMismatchError(ConfigError):
    """An index asked to work with a model, dimension or corpus other than the ones it was built with."""


class OutputError(OdqaError):
    """An output path that cannot be written (missing permission, a folder in the way, disk full)."""


class ModelError(OdqaError):
    """A model that cannot be loaded."""


class ResourceError(OdqaError):
    """Work too large for the machine's memory; the message says the largest size that fits."""


class DependencyError(OdqaError):
    """An optional dependency that is missing; the message names the extra to install."""

    def __init__(self, module: str, extra: str) -> None:
        self.module = module
        self.extra = extra
        super().__init__(f"{module!r} is not installed; install it with: pip install 'odqa[{extra}]'")


class CrawlError(OdqaError):
    """A crawl run that cannot start or continue (per-page failures are recorded, not raised)."""
