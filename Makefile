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
DEMO_QUERY ?= why did the deploy fail with exit code 137
RUST_SOURCES := $(shell find rust -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml

.PHONY: help install demo test test-rust test-python lint bench clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(VENV)/bin/pip:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip

$(VENV)/.installed: $(VENV)/bin/pip $(RUST_SOURCES)
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	@touch $@

install: $(VENV)/.installed ## create .venv, build the Rust core (release) and install memlane with dev tools

demo: install ## quick start: index your transcripts (or the shared samples), then search them
	$(VENV)/bin/memlane index $(DEMO_PATHS)
	$(VENV)/bin/memlane search "$(DEMO_QUERY)" -k 5
	$(VENV)/bin/memlane status

test-rust: ## cargo tests of the core (no Python)
	cargo test --release -p memlane-core

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
