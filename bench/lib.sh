# shellcheck shell=bash
# Shared by the bench scripts that start the server themselves (sourced, from the tree's root).
# shellcheck disable=SC2034 # BIN is for the script that sources this
# bench_server [BINARY]: BIN is BINARY made absolute, or the Release server built in build-bench/.
bench_server() {
	if [ -n "${1:-}" ]; then
		BIN=$(readlink -f "$1")
		return
	fi
	cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release -DERNIC_TESTS=OFF >/dev/null
	cmake --build build-bench -j "$(nproc)" --target rocm-ernic >/dev/null
	BIN=$PWD/build-bench/rocm-ernic
}
