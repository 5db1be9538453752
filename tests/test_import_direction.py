"""Imports run one way, from the command line down to records: never back up, never sideways between producers.

Read from the source (every import statement, including lazy ones inside functions), so a lazy import cannot
hide a wrong arrow.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "odqa"

# (importer, imported): no module under the first may import a module under the second.
FORBIDDEN = [
    ("odqa.records", "odqa"),  # the records every stage passes around depend on nothing of odqa
    ("odqa.datasets", "odqa.crawl"),  # loaders and the crawler are siblings: odqa.inputs sits above both
    ("odqa.crawl", "odqa.datasets"),
    ("odqa.datasets", "odqa.inputs"),
    ("odqa.crawl", "odqa.inputs"),
    ("odqa.datasets", "odqa.refine"),
    ("odqa.datasets", "odqa.pipeline"),
    ("odqa.refine", "odqa.pipeline"),  # a stage knows nothing of the run that writes its output
    ("odqa.refine", "odqa.inputs"),
    ("odqa.refine", "odqa.crawl"),
    ("odqa.refine", "odqa.datasets"),
    ("odqa.pipeline", "odqa.inputs"),  # the run takes examples; where they come from is the caller's business
    ("odqa.pipeline", "odqa.crawl"),
    ("odqa.pipeline", "odqa.datasets"),
    ("odqa.demo", "odqa.refine"),  # the demo runs what the command runs, through odqa.pipeline
    ("odqa.retrieve", "odqa.datasets"),  # retrievers know no dataset: HybridQA's linker lives with HybridQA
]


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name == "odqa" or name.startswith("odqa.")}


GRAPH = {_module(path): _imports(path) for path in sorted(PACKAGE.rglob("*.py"))}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize(("importer", "imported"), FORBIDDEN)
def test_no_import_runs_the_wrong_way(importer: str, imported: str) -> None:
    assert any(_under(m, importer) for m in GRAPH), f"no module {importer}: update the rule"
    wrong = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if _under(m, importer)
                   for t in targets if _under(t, imported))
    assert wrong == []


def test_only_the_command_line_imports_the_command_line() -> None:
    wrong = sorted(f"{m} -> {t}" for m, targets in GRAPH.items() if not _under(m, "odqa.cli")
                   for t in targets if _under(t, "odqa.cli"))
    assert wrong == []


def test_the_rule_reader_sees_lazy_imports() -> None:
    assert "odqa.crawl.export" in GRAPH["odqa.inputs"]  # imported inside load_examples only


def test_importing_the_loaders_does_not_load_the_crawler() -> None:
    code = "import sys, odqa.datasets; print(sorted(m for m in sys.modules if m.startswith('odqa.crawl')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
