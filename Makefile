# All set-up happens in a local virtual environment (.venv); nothing is installed globally.
# `make reproduce` is the main job; `make test` runs the whole test suite (CI calls it through .ci/run).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup reproduce test test-fast benchmarks clean

setup: $(STAMP)

# torch first, pinned to the CPU build that lies on disk here: anything that pulls torch
# unpinned would otherwise download a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[all]'
	touch $(STAMP)

reproduce: setup
	$(BIN)/apibank stats
	$(BIN)/apibank replay --protocol v2
	$(BIN)/apibank replay --protocol paper

test: setup
	$(BIN)/pytest -q

test-fast: setup
	$(BIN)/pytest -q -m "not slow"

benchmarks: setup
	$(BIN)/python benchmarks/replay_speed.py
	$(BIN)/python benchmarks/search_latency.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
