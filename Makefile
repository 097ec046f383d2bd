# Two commands on a fresh machine with Python 3.11+ and make:
#   make run    the API and console on the demo corpus (embedded PostgreSQL)
#   make test   ruff, mypy and the whole test suite (both embedders, the browser tests)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# LEXICAL=1: the demo with the lexical model alone (by default all-MiniLM-L6-v2 is beside it)
LEXICAL ?=

.PHONY: install run demo test lint schema

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

ifeq ($(LEXICAL),)
demo: install
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

test: lint install
	$(BIN)/python -m pytest

schema: install
	$(BIN)/strawberry export-schema schema:schema --output schema.graphql
