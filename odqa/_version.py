"""The package version: its one definition, read by pyproject.toml and imported without loading anything else."""

__version__ = "0.1.0"
