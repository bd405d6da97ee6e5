# The two commands a user needs: `make demo` and `make test`. Both install missing
# Debian packages first (tools/install-deps), then configure and build with CMake.
BUILD ?= build
JOBS ?= $(shell nproc)
# OpenBLAS threads spin after each call and starve whatever runs next; make them sleep soon.
export OPENBLAS_THREAD_TIMEOUT ?= 4

.PHONY: all deps configure build test demo bench clean

all: build

deps:
	tools/install-deps

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	tools/demo $(BUILD)

bench: build
	cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	bench/run-all $(BUILD)

clean:
	rm -rf $(BUILD)
