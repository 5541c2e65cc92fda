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

# The bundled benchmark: statistics beside the paper's, validation, the gold replay under both
# protocols, the reference backends over everything and the embedded model over a sized-down subset.
GEMMA_LIMIT ?= 40

reproduce: setup
	$(BIN)/apibank stats
	$(BIN)/apibank validate
	$(BIN)/apibank replay --protocol v2
	$(BIN)/apibank replay --protocol paper
	$(BIN)/apibank run --model oracle --level3 both
	$(BIN)/apibank run --model no-call --level3 both
	$(BIN)/apibank run --model heuristic --level3 both
	$(BIN)/apibank run --model llamacpp:gemma-3-270m --limit $(GEMMA_LIMIT) --level3 both --max-steps 8

test: setup
	$(BIN)/pytest -q

test-fast: setup
	$(BIN)/pytest -q -m "not slow"

benchmarks: setup
	$(BIN)/python benchmarks/replay_speed.py
	$(BIN)/python benchmarks/search_latency.py
	$(BIN)/python benchmarks/runner_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
