# memlane dev loop. `make help` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
# Index the user's own agent transcripts when there are any, else the shared real samples.
SAMPLES ?= ../shared/data/transcripts
USER_TRANSCRIPTS := $(wildcard $(HOME)/.claude/projects/*/*.jsonl $(HOME)/.codex/sessions/*/*/*/*.jsonl*)
DEMO_PATHS ?= $(if $(USER_TRANSCRIPTS),$(wildcard $(HOME)/.claude/projects $(HOME)/.codex/sessions),$(SAMPLES))
# The samples' question is one they answer (an aider session in them switched a test's temporary directory).
DEMO_QUERY ?= $(if $(USER_TRANSCRIPTS),what did we change in the tests and why,what should test_subtree_only use instead of IgnorantTemporaryDirectory)
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml

.PHONY: help install demo test test-rust test-python lint bench clean

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
# line says which stage it is in.
BUILD_LOG := $(VENV)/build.log
$(VENV)/.installed: $(VENV)/bin/pip $(RUST_SOURCES)
	@echo "==> Installing memlane into $(VENV): Python dependencies (~1 min), then its Rust core"
	@echo "    (release build of tantivy, usearch and ~270 crates: about 8-10 minutes on 2 cores the"
	@echo "    first time; later builds reuse ./target and take seconds). Log: $(BUILD_LOG)"
	@start=$$(date +%s); last=$$start; \
	MATURIN_PEP517_ARGS="--features dev-unify" $(VENV)/bin/pip install -v -e '.[dev]' > $(BUILD_LOG) 2>&1 & pid=$$!; \
	while kill -0 $$pid 2>/dev/null; do \
	  sleep 2; now=$$(date +%s); [ $$((now - last)) -ge 30 ] || continue; last=$$now; \
	  n=$$(grep -c '^ *Compiling ' $(BUILD_LOG)); \
	  if [ $$n -gt 0 ]; then stage="compiling the Rust core, crate $$n of ~270: $$(grep '^ *Compiling ' $(BUILD_LOG) | tail -1 | awk '{print $$2}')"; \
	  else stage="resolving and downloading Python packages"; fi; \
	  echo "    $$((now - start))s: $$stage"; \
	done; \
	if ! wait $$pid; then echo "==> install failed; the end of $(BUILD_LOG):"; tail -40 $(BUILD_LOG); exit 1; fi; \
	echo "==> memlane installed in $$(( $$(date +%s) - start ))s"
	@touch $@

install: $(VENV)/.installed ## create .venv, build the Rust core (release) and install memlane with dev tools

demo: install ## quick start: index your transcripts (or the shared samples), then search them
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

test-python: install ## the pytest suite (bindings + Python layer)
	$(PY) -m pytest -q

test: test-rust test-python ## everything CI runs

lint: install ## clippy and rustfmt
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -- -D warnings

bench: install ## speed benchmarks on a generated archive (see benches/README.md)
	$(PY) benches/bench_pipeline.py

clean: ## remove build outputs and the venv
	rm -rf target $(VENV)
