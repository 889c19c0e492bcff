#!/usr/bin/env bash
# Run every test: install what is missing, build the normal and the ASan+UBSan flavours,
# and run the whole CTest suite against each (the ASan build without the tests labelled no-asan:
# guest tests in which no guest uses a server of ours, the long frame-loss run, and the guest tests
# whose server code other tests run under ASan: docs/testing.md); then the fuzz build (clang, libFuzzer) replays
# every fuzz target's corpus and fuzzes each briefly. Exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh || exit 1
jobs=$(nproc)
status=0

build() { # dir cmake-args...
	local dir=$1; shift
	cmake -S . -B "$dir" "$@" >/dev/null && cmake --build "$dir" -j "$jobs"
}

build build || exit 1
build build-asan -DERNIC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug || exit 1
CC=clang build build-fuzz -DERNIC_FUZZ=ON || exit 1

echo "== tests (normal build)"
ctest --test-dir build --output-on-failure -j "$jobs" || status=1
echo "== tests (ASan+UBSan build)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE no-asan || status=1
echo "== fuzz targets (corpus replay, then 8 s of fuzzing each)"
ctest --test-dir build-fuzz --output-on-failure -j "$jobs" || status=1
exit $status
