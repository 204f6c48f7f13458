# The two commands a newcomer runs: `make demo` and `make test`.
# Both install missing Debian packages first, then build.
JOBS ?= 2
RELEASE := build/release
ASAN := build/asan
FUZZ := build/fuzz

PREFIX ?= /usr/local

.PHONY: deps configure writ build demo test bench fuzz-long clean format install

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(RELEASE) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Only what the demo runs: the `writ` binary and the libraries it links.
writ: configure
	@cmake --build $(RELEASE) -j$(JOBS) --target writ

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

# Normal build, fuzz smoke build (clang + libFuzzer) and ASan+UBSan build, each with CTest.
test: deps
	@bash scripts/run-tests.sh

bench: build
	@bash bench/run.sh

fuzz-long: deps
	@WRIT_FUZZ_SECONDS=$${WRIT_FUZZ_SECONDS:-600} bash scripts/run-tests.sh fuzz

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf build
