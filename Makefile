# All set-up happens in a local virtual environment (.venv); nothing is installed globally.
# `make reproduce` is the main job; `make test` runs the whole test suite (CI calls it through .ci/run).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup reproduce test test-fast benchmarks clean llama-flags

setup: $(STAMP)

# llama.cpp is compiled for the CPU features /proc/cpuinfo lists, AMX left out, instead of -march=native: some
# virtual machines advertise AMX tiles that their kernel does not enable, and a native build then dies with
# SIGILL at the first matrix product. The wheel is built once per feature set into a cache outside the clone
# (WHEEL_CACHE), so that a fresh clone on the same machine does not compile it again (pip's own cache would hand
# back a native build). The multimodal library (llava/mtmd) is left out: nothing here reads images, and it is a
# good part of the compile time.
LLAMA_VERSION := 0.3.36
CPU_FLAGS     := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has            = $(filter $(1),$(CPU_FLAGS))
LLAMA_CMAKE   := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
	$(if $(call has,avx2),-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON) \
	$(if $(call has,avx_vnni),-DGGML_AVX_VNNI=ON) \
	$(if $(call has,avx512f),-DGGML_AVX512=ON) \
	$(if $(call has,avx512vbmi),-DGGML_AVX512_VBMI=ON) \
	$(if $(call has,avx512_vnni),-DGGML_AVX512_VNNI=ON) \
	$(if $(call has,avx512_bf16),-DGGML_AVX512_BF16=ON)
WHEEL_CACHE   ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/apibank_lib/wheels
LLAMA_WHEELS  := $(WHEEL_CACHE)/llama-$(shell echo '$(LLAMA_VERSION) $(LLAMA_CMAKE)' | sha256sum | cut -c1-12)

# Packages go in with uv where the registry has it (pip otherwise): the same versions from the same registries, read
# from pip's own configuration (find-links, index URLs, constraints; the best version over all of them, as pip
# chooses), but about 10 s instead of about 150 s once uv's cache outside the clone holds the wheels: pip asks the
# registry again for every package and unpacks every wheel again. The first install on a machine takes about as
# long with either.
UV_FROM_PIP := $(shell $(PYTHON) -m pip config list 2>/dev/null | \
	sed -n -E "s/^[^.]*\.(find-links|extra-index-url|index-url|constraint)='(.*)'$$/\1 \2/p" | \
	awk '{for (i = 2; i <= NF; i++) printf "--%s %s ", $$1, $$i}')
install = if [ -x $(BIN)/uv ] && \
	$(BIN)/uv pip install -q --python $(BIN)/python --index-strategy unsafe-best-match $(UV_FROM_PIP) $(1); \
	then :; else $(BIN)/pip install -q $(1); fi

# torch first, pinned to the CPU build that lies on disk here: anything that pulls torch
# unpinned would otherwise download a multi-GB CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q uv || echo "setup: no uv on the registry; installing with pip"
	$(call install,torch==2.13.0)
	ls $(LLAMA_WHEELS)/llama_cpp_python-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="$(strip $(LLAMA_CMAKE))" $(BIN)/pip wheel -q --no-deps --no-cache-dir -w $(LLAMA_WHEELS) \
		llama-cpp-python==$(LLAMA_VERSION)
	$(call install,--find-links $(LLAMA_WHEELS) -e '.[all]')
	touch $(STAMP)

# The main job on the bundled data: validation and the gold replay under both protocols, then every
# numbered notebook executed with papermill (statistics, sandbox demo, model runs, scores, errors), writing tables
# to out/results/bundled/ and figures to out/figures/bundled/ (ignored by git: the clone stays clean) and saying how
# they compare with the committed ones. REPRODUCE_ARGS="--profile standard --committed" refreshes the committed results.
REPRODUCE_ARGS ?=

reproduce: setup
	$(BIN)/apibank validate
	$(BIN)/apibank replay --protocol v2
	$(BIN)/apibank replay --protocol paper
	$(BIN)/apibank reproduce $(REPRODUCE_ARGS)

# Unit, integration and notebook tests (nbval), and the explorer in a real browser (Debian's chromium).
# The tests that start no model run in one worker per core (pytest-xdist); those that start a model or a server,
# and the notebooks (marked slow in notebooks/conftest.py), run one at a time: llama.cpp uses every core, and two
# of them at once slow each other down far more than twice.
test: setup browser
	$(BIN)/pytest -q -m "not slow" -n auto --dist loadfile tests
	$(BIN)/pytest -q -m slow --durations=15

test-fast: setup
	$(BIN)/pytest -q -m "not slow" -n auto --dist loadfile tests

benchmarks: setup
	$(BIN)/python benchmarks/replay_speed.py
	$(BIN)/python benchmarks/search_latency.py
	$(BIN)/python benchmarks/retrieval_latency.py
	$(BIN)/python benchmarks/runner_speed.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

llama-flags:
	@echo 'CMAKE_ARGS="$(strip $(LLAMA_CMAKE))" -> $(LLAMA_WHEELS)'

# Debian's Chromium for the browser test (tests/test_explorer_browser.py), installed where it is missing and we are
# root (CI's machine); Playwright drives it and never downloads a browser. Elsewhere that test skips, saying why.
CHROMIUM ?= /usr/bin/chromium
.PHONY: browser
browser:
	@if [ -x $(CHROMIUM) ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	else echo "browser: no $(CHROMIUM) and not root, so the browser test will be skipped"; fi
