# pagelab — every target does its own set-up on a fresh machine (Rust and Python 3 are
# expected; the virtual environment, maturin, pytest and pandas are installed here).

VENV      ?= .venv
PYTHON    ?= python3
CARGO     ?= cargo
PAGELAB   := target/release/pagelab
DEMO_TRACE := data/traces/xz.plt

.PHONY: all build demo test test-rust test-python fuzz-build bench venv python clean

all: build

build:
	$(CARGO) build --release -p pagelab-cli

# Simulate a bundled trace of a real program (xz compressing text) on the default
# machine: a 64-entry 4-way LRU TLB and an x86-64 4-level radix page table.
demo: build
	$(PAGELAB) trace info $(DEMO_TRACE)
	$(PAGELAB) simulate --trace $(DEMO_TRACE)

test: test-rust fuzz-build test-python

test-rust:
	$(CARGO) fmt --all -- --check
	$(CARGO) test --release -p pagelab-core -p pagelab-cli

# The fuzz targets must build (running them needs nightly: see fuzz/README.md).
fuzz-build:
	$(CARGO) build --manifest-path fuzz/Cargo.toml

$(VENV)/.installed:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet maturin pytest pandas
	touch $@

venv: $(VENV)/.installed

# The Python package, built into the virtual environment (release build).
python: venv
	VIRTUAL_ENV=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
		$(VENV)/bin/maturin develop $(MATURIN_FLAGS) --quiet -m crates/pagelab-py/Cargo.toml

MATURIN_FLAGS ?= --release

# The tests build the bindings unoptimized: quicker to compile, and the tests are small.
test-python:
	$(MAKE) python MATURIN_FLAGS=
	$(VENV)/bin/pytest -q crates/pagelab-py/tests

# Throughput on the standard 100-million-reference trace (several GB in bench/out).
bench: build
	bench/run.sh

clean:
	$(CARGO) clean
	rm -rf $(VENV) bench/out fuzz/target
