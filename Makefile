# memlane dev loop. `make help` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
# `make demo` indexes the user's own agent transcripts when there are any; else the real samples
# in ../shared (optional: evaluation data kept beside the clone, never needed); else a small
# archive it generates with benches/archive.py. Each source gets a question it answers (an aider
# session in the samples switched a test's temporary directory; the archive talks of billing).
SAMPLES ?= ../shared/data/transcripts
DEMO_ARCHIVE := $(VENV)/demo-archive
USER_TRANSCRIPTS := $(wildcard $(HOME)/.claude/projects/*/*.jsonl $(HOME)/.codex/sessions/*/*/*/*.jsonl*)
ifneq ($(USER_TRANSCRIPTS),)
DEMO_PATHS ?= $(HOME)/.claude/projects $(HOME)/.codex/sessions
DEMO_QUERY ?= what did we change in the tests and why
else ifneq ($(wildcard $(SAMPLES)),)
DEMO_PATHS ?= $(SAMPLES)
DEMO_QUERY ?= what should test_subtree_only use instead of IgnorantTemporaryDirectory
else
DEMO_PATHS ?= $(DEMO_ARCHIVE)
DEMO_QUERY ?= which database does billing use now?
endif
# Crates the release build compiles (`grep -c Compiling $(BUILD_LOG)` after a first build, or
# `cargo tree -p memlane-py --features dev-unify -e normal,build --prefix none | sort -u | wc -l`).
RUST_CRATES := 196
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml

.PHONY: help install browser demo test test-rust test-python lint bench clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

# The dev build of the extension enables memlane-py's `dev-unify` feature: it adds memlane-core's
# test-only dependencies, so cargo resolves the same features for the extension as for
# `cargo test -p memlane-core` (proptest and criterion otherwise switch on features of rand,
# getrandom, serde, zerocopy… that tantivy builds on, and the test run would compile tantivy,
# usearch and ~200 crates a second time). pip runs quietly into $(BUILD_LOG); every 30 s a
# line says which of pip's stages it is in: the build tool (maturin), resolving and downloading
# the Python dependencies, compiling the Rust core, then installing it all into the venv.
BUILD_LOG := $(VENV)/build.log
$(VENV)/.installed: $(VENV)/bin/pip $(RUST_SOURCES)
	@echo "==> Installing memlane into $(VENV), in four stages: the build tool (maturin); the Python"
	@echo "    dependencies resolved and downloaded (~1 min; no torch, no CUDA); the Rust core compiled"
	@echo "    (release build of tantivy, usearch and ~$(RUST_CRATES) crates: about 8-10 minutes on 2 cores the"
	@echo "    first time, later builds reuse ./target and take seconds); then everything installed."
	@echo "    Log: $(BUILD_LOG)"
	@start=$$(date +%s); last=$$start; \
	MATURIN_PEP517_ARGS="--features dev-unify" $(VENV)/bin/pip install -v -e '.[dev]' > $(BUILD_LOG) 2>&1 & pid=$$!; \
	while kill -0 $$pid 2>/dev/null; do \
	  sleep 2; now=$$(date +%s); [ $$((now - last)) -ge 30 ] || continue; last=$$now; \
	  n=$$(grep -c '^ *Compiling ' $(BUILD_LOG)); \
	  if grep -q '^Installing collected packages' $(BUILD_LOG); then stage="installing the packages into $(VENV)"; \
	  elif [ $$n -gt 0 ]; then stage="compiling the Rust core, crate $$n of ~$(RUST_CRATES): $$(grep '^ *Compiling ' $(BUILD_LOG) | tail -1 | awk '{print $$2}')"; \
	  elif grep -q 'Preparing editable metadata.*done' $(BUILD_LOG); then stage="resolving and downloading the Python dependencies"; \
	  else stage="installing the build tool (maturin)"; fi; \
	  echo "    $$((now - start))s: $$stage"; \
	done; \
	if ! wait $$pid; then echo "==> install failed; the end of $(BUILD_LOG):"; tail -40 $(BUILD_LOG); exit 1; fi; \
	echo "==> memlane installed in $$(( $$(date +%s) - start ))s"
	@touch $@

install: $(VENV)/.installed ## create .venv, build the Rust core (release) and install memlane with dev tools

# A small Claude Code archive (12 sessions, deterministic) for machines without transcripts; the
# README's Python example indexes it too. Written aside, then moved: a killed run leaves none.
$(DEMO_ARCHIVE): | $(VENV)/.installed
	@rm -rf $@.tmp
	@$(PY) -c 'import sys; sys.path.insert(0, "benches"); from pathlib import Path; from archive import generate; generate(Path(sys.argv[1]), files=12, pairs_per_file=6)' $@.tmp
	@mv $@.tmp $@

demo: install $(DEMO_ARCHIVE) ## quick start: index your transcripts (else ../shared's samples, else a generated archive), then search them
	@echo "==> memlane index $(DEMO_PATHS)"
	@echo "    (keywords first, then local vectors; the first run also builds the model graph, 10-20 s)"
	@$(VENV)/bin/memlane index $(DEMO_PATHS)
	@echo "==> memlane search \"$(DEMO_QUERY)\" -k 3"
	@$(VENV)/bin/memlane search "$(DEMO_QUERY)" -k 3
	@echo "==> memlane status"
	@$(VENV)/bin/memlane status

# memlane-py is selected too (it has no tests of its own) so that its dependencies' features are
# unified as in the extension build: then this reuses every dependency `make install` compiled.
test-rust: install ## cargo tests of the core (no Python), reusing the extension's build
	cargo test --release -p memlane-core -p memlane-py --features memlane-py/dev-unify

test-python: install browser ## the pytest suite (bindings + Python layer, the viewer in a real browser)
	$(PY) -m pytest -q

# The viewer's browser tests drive Debian's chromium through its chromedriver (selenium, from the
# dev extras): a browser a tool downloads at run time cannot be fetched on these machines.
browser: ## install chromium and chromedriver with apt when absent (the viewer's browser tests)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  echo "==> Installing chromium and chromium-driver (apt) for the viewer's browser tests"; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

test: lint test-rust test-python ## everything CI runs: the gate, then the tests

# The Python gate first (seconds), then the Rust one: clippy builds its own check-mode copy of the
# dependencies (a few minutes the first time). stubtest imports the built extension and holds
# python/memlane/_core.pyi to what it really exports.
lint: install ## the gate: ruff (lint, format), mypy, stubtest of memlane._core, rustfmt, clippy
	$(VENV)/bin/ruff check python tests benches
	$(VENV)/bin/ruff format --check python tests benches
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest memlane._core
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: install ## speed benchmarks on a generated archive (see benches/README.md)
	$(PY) benches/bench_pipeline.py

clean: ## remove build outputs and the venv
	rm -rf target $(VENV)
