# The two commands of the README. Both set up .venv first (idempotent, offline-capable).
.PHONY: setup demo test lint

setup:
	bash scripts/setup.sh

demo: setup
	HF_HUB_OFFLINE=1 .venv/bin/odqa demo

test: setup
	HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q

lint:
	.venv/bin/ruff check odqa tests bench
	.venv/bin/mypy odqa
