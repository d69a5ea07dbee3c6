# feedbackd: two commands do all set-up on a fresh machine.
#   make run   create .venv, install, build a demo workspace in .demo/ and run the daemon there
#   make test  create .venv, install dev dependencies, run ruff, the import layers, mypy, pytest
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := .demo

.PHONY: run test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	@$(BIN)/python -m feedbackd.cli.demo $(DEMO)

test: $(STAMP) lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check daemon tests
	$(BIN)/ruff format --check daemon tests
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) $(DEMO)
