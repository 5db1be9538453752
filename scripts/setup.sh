#!/usr/bin/env bash
# Create .venv (if needed) and install odqa with everything the demo and the tests use.
# torch goes in first, pinned, so pip never resolves a multi-GB CUDA build behind our back;
# set ODQA_TORCH to choose another release (it must satisfy the range in pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "odqa needs Python 3.11 or newer ($PY is $("$PY" -V 2>&1)); run with PYTHON=python3.11 (or newer)" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    .venv/bin/python -m pip install -q "torch==${ODQA_TORCH:-2.13.0}"
fi
.venv/bin/python -m pip install -q -e ".[dev]"
