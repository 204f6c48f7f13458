# The two commands a newcomer runs: `make demo` and `make test`.
# Both install missing Debian packages first, then build.
JOBS ?= 2
# No "gmake[1]: Entering directory" lines from the builds make starts.
MAKEFLAGS += --no-print-directory
RELEASE := build/release
ASAN := build/asan
FUZZ := build/fuzz

PREFIX ?= /usr/local

.PHONY: deps configure writ python build demo test test-long bench fuzz-long clean format install

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(RELEASE) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Only what the demo runs: the `writ` binary and the libraries it links. Quiet unless the
# build fails (scripts/quiet-build.sh); `make build` shows every line.
writ: configure
	@echo "building writ in $(RELEASE) (a first build takes a few minutes)"
	@JOBS=$(JOBS) bash scripts/quiet-build.sh $(RELEASE) writ

# The Python package for Debian's python3, in build/release/python (docs/python.md; pip
# install is the way for a venv).
python: configure
	@cmake --build $(RELEASE) -j$(JOBS) --target writ_python

# Everything in the release build: writ, tests, examples, benchmarks.
build: configure
	@cmake --build $(RELEASE) -j$(JOBS)

# The library (libwrit.so, libwrit.a), headers, CMake package, writ.pc and writ under
# PREFIX (docs/api.md).
install: configure
	@cmake --build $(RELEASE) -j$(JOBS) --target writ writ_lib writ_static
	@cmake --install $(RELEASE) --prefix $(PREFIX)

demo: writ
	@$(RELEASE)/tools/writ/writ demo

# Normal build, ASan+UBSan build and fuzz smoke build (clang + libFuzzer), each with CTest.
test: deps
	@bash scripts/run-tests.sh

# The long fault loops in the release build: 200 kills and 200 power cuts instead of
# make test's 10, every call of every retention step failed (docs/reliability.md).
test-long: build
	@cd $(RELEASE) && WRIT_FAULT_ITERATIONS=$${WRIT_FAULT_ITERATIONS:-200} \
	  ctest -L faults --output-on-failure

bench: build
	@bash bench/run.sh

fuzz-long: deps
	@WRIT_FUZZ_SECONDS=$${WRIT_FUZZ_SECONDS:-600} bash scripts/run-tests.sh fuzz

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf build
