# The two commands of the README. Both set up .venv first (idempotent, offline-capable).
# `make test` is also what CI runs (.ci/run): the tests, then ruff and mypy; the first failure fails it.
.PHONY: setup demo test lint

define lint_commands
.venv/bin/ruff check odqa tests bench examples
.venv/bin/mypy odqa
endef

setup:
	bash scripts/setup.sh

demo: setup
	HF_HUB_OFFLINE=1 .venv/bin/odqa demo

test: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q
	$(lint_commands)

lint: setup
	$(lint_commands)
