# Two commands on a fresh machine with Python 3.11+ and make:
#   make run    the API and console on the demo corpus (embedded PostgreSQL)
#   make test   ruff, mypy and the whole test suite (both embedders, the browser tests);
#               its lanes: make test-unit, make test-db, make test-browser
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# LEXICAL=1: the demo with the lexical model alone (by default all-MiniLM-L6-v2 is beside it)
LEXICAL ?=

.PHONY: install run demo test test-unit test-db test-browser lint schema

$(VENV)/.installed: pyproject.toml
	@echo "installing into $(VENV) (the first time takes a few minutes)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

ifeq ($(LEXICAL),)
demo: install
	@echo "loading and indexing the demo corpus (the first time, MiniLM takes a minute or two)..."
	$(BIN)/similar-sessions demo
else
demo: install
	$(BIN)/similar-sessions demo --lexical-only
endif

run: demo
	$(BIN)/similar-sessions serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The whole suite, as CI runs it; the slowest tests are printed at the end.
test: lint install
	$(BIN)/python -m pytest --durations=15

# The lanes (docs/testing.md): no database, seconds; the database tests on every core;
# the console in headless Chromium.
test-unit: install
	$(BIN)/python -m pytest tests/unit -q

test-db: install
	$(BIN)/python -m pytest tests/db -q -n auto

test-browser: install
	$(BIN)/python -m pytest tests/browser -q

schema: install
	$(BIN)/strawberry export-schema schema:schema --output schema.graphql
