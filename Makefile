# pagelab — every target does its own set-up on a fresh machine (Rust and Python 3 are
# expected; the virtual environment and crates/pagelab-py/requirements-test.txt are
# installed here).

VENV      ?= .venv
PYTHON    ?= python3
CARGO     ?= cargo
PAGELAB   := target/release/pagelab
# The tests build with the `ci` profile (Cargo.toml): release speed, quicker to link.
TEST_BIN  := target/ci
# The crates the Rust tests cover. The command line the Python and README tests run is
# the tests' build of it (`cargo test --no-run`: nothing to build after test-rust; a
# `cargo build` would unify features without the dev-dependencies and build it again).
TEST_PACKAGES := -p pagelab-core -p pagelab-sweep -p pagelab-repro -p pagelab-cli
DEMO_TRACE := data/traces/xz.plt

.PHONY: all build demo test test-rust test-extending test-python test-readme fuzz-build bench venv python clean browser screenshots \
	recorder recorder-deps test-recorder bench-record native test-native

all: build recorder native

build:
	$(CARGO) build --release -p pagelab-cli

# Simulate a bundled trace of a real program (xz compressing text) on the default
# machine: a 64-entry 4-way LRU TLB and an x86-64 4-level radix page table.
demo: build
	$(PAGELAB) trace info $(DEMO_TRACE)
	$(PAGELAB) simulate --trace $(DEMO_TRACE)

test: recorder native test-rust test-recorder fuzz-build test-python test-extending test-readme test-native

# The CLI's recording tests run pagelab's Valgrind tool, and `advise`'s the preload
# library: `make recorder native` come first.
test-rust:
	$(CARGO) fmt --all -- --check
	$(CARGO) test --profile ci $(TEST_PACKAGES)

# A dummy component of each kind docs/EXTENDING.md counts, added in a scratch copy by
# editing only the files it lists, must build and pass the tests that cover its kind
# (a report figure's with the compiled module test-python built: it comes after).
test-extending:
	$(PYTHON) tools/dummy_components.py

# pagelab's Valgrind tool (recorder/): Debian's valgrind package ships the headers and
# archives an out-of-tree tool links against; installed here when missing.
VG_HEADER  := /usr/include/valgrind/pub_tool_basics.h
VG_ARCHIVE := /usr/lib/x86_64-linux-gnu/valgrind/libcoregrind-amd64-linux.a
recorder-deps:
	@if [ ! -f $(VG_HEADER) ] || [ ! -f $(VG_ARCHIVE) ] || ! command -v valgrind >/dev/null || ! command -v gcc >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing valgrind and gcc (apt-get)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind gcc make libc6-dev; \
		else \
			echo "pagelab's recorder needs valgrind (with $(VG_HEADER)) and gcc: on Debian, apt-get install valgrind gcc"; exit 1; \
		fi; \
	fi

recorder: recorder-deps
	$(MAKE) -C recorder OUT=$(CURDIR)/target/valgrind

# The recorder's tests run under pytest, from the virtual environment.
test-recorder: recorder venv
	$(MAKE) -C recorder OUT=$(CURDIR)/target/valgrind PYTHON=$(CURDIR)/$(VENV)/bin/python check

# The LD_PRELOAD library that backs chosen data categories of a program with huge
# pages (native/huge*.c, described in native/huge_main.c, for `pagelab advise`), and
# two of our workloads built natively to try it on (with the recorder's client
# requests: valgrind.h).
NATIVE        := target/native
NATIVE_CFLAGS := -O2 -Wall -Wextra -Werror
NATIVE_HUGE   := $(wildcard native/huge*.c)
native: $(NATIVE)/libpagelab_huge.so $(NATIVE)/randread $(NATIVE)/smallheap $(NATIVE)/calibrate

$(NATIVE)/libpagelab_huge.so: $(NATIVE_HUGE) native/huge.h
	@mkdir -p $(@D)
	gcc $(NATIVE_CFLAGS) -fPIC -shared -o $@ $(NATIVE_HUGE)

# pagelab calibrate's measurements, run natively (no client requests).
$(NATIVE)/calibrate: native/calibrate.c
	@mkdir -p $(@D)
	gcc $(NATIVE_CFLAGS) -o $@ $<

$(NATIVE)/%: workloads/src/%.c workloads/src/hugereport.h recorder/include/pagelab.h | recorder-deps
	@mkdir -p $(@D)
	gcc $(NATIVE_CFLAGS) -I recorder/include -o $@ $<

# Huge pages where the library is asked for them and nowhere else (native/test.sh).
test-native: native
	sh native/test.sh

# The fuzz targets must build (running them needs nightly: see fuzz/README.md). Built
# into the workspace's target/, so the Python bindings' debug build reuses the core.
fuzz-build:
	CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --manifest-path fuzz/Cargo.toml

$(VENV)/.installed: crates/pagelab-py/requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -r crates/pagelab-py/requirements-test.txt
	touch $@

venv: $(VENV)/.installed

# The Python package, built into the virtual environment (release build).
python: venv
	VIRTUAL_ENV=$(CURDIR)/$(VENV) PATH=$(CURDIR)/$(VENV)/bin:$$PATH \
		$(VENV)/bin/maturin develop $(MATURIN_FLAGS) --quiet -m crates/pagelab-py/Cargo.toml

MATURIN_FLAGS ?= --release

# Debian's Chromium, for the test that opens the HTML report in a headless browser;
# installed when missing and possible (root and apt-get), else that test is skipped.
browser:
	@if ! command -v chromium >/dev/null; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing chromium (apt-get)"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null || \
				echo "chromium could not be installed: the browser test will be skipped"; \
		else \
			echo "no chromium and no apt-get as root: the browser test will be skipped"; \
		fi; \
	fi

# The tests build the bindings with the tests' profile: the sweeps they run are slow
# unoptimized, and the core is shared with the Rust tests' build.
test-python: browser
	$(MAKE) python MATURIN_FLAGS="--profile ci"
	$(CARGO) test --profile ci $(TEST_PACKAGES) --no-run
	PAGELAB_BIN=$(CURDIR)/$(TEST_BIN)/pagelab $(VENV)/bin/pytest -q crates/pagelab-py/tests

# The reports' screenshots docs/screenshots shows, taken again by the tests that open
# the reports in headless Chromium.
screenshots: browser
	$(MAKE) python MATURIN_FLAGS="--profile ci"
	$(CARGO) build --profile ci -p pagelab-cli
	PAGELAB_SCREENSHOTS=$(CURDIR)/docs/screenshots PAGELAB_BIN=$(CURDIR)/$(TEST_BIN)/pagelab \
		$(VENV)/bin/pytest -q crates/pagelab-py/tests/test_report.py -k "chromium or advise"

# The README's runnable commands, with the tests' build on PATH.
test-readme:
	$(CARGO) test --profile ci $(TEST_PACKAGES) --no-run
	PAGELAB_BIN_DIR=$(CURDIR)/$(TEST_BIN) $(PYTHON) tools/readme_check.py

# Throughput on the standard 100-million-reference trace (several GB in bench/out).
bench: build
	bench/run.sh

# Recording throughput of pagelab's Valgrind tool against lackey on a real program.
bench-record: build recorder
	bench/record.sh

clean:
	$(CARGO) clean
	rm -rf $(VENV) bench/out fuzz/target
