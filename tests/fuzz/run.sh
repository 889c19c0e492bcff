#!/usr/bin/env bash
# Fuzz campaign: tests/fuzz/run.sh SECONDS [TARGET...]
# Builds build-fuzz (CC=clang, ERNIC_FUZZ=ON) if needed, then runs each target (all by default)
# for SECONDS on one core, starting from its checked-in corpus. New inputs go to a scratch
# directory (FUZZ_WORK, default build-fuzz/fuzz-work/<target>), never into tests/fuzz/corpus;
# crashes, leaks and hangs are written there too (crash-*, leak-*, timeout-*). Prints one line per
# target: executions, coverage (cov: edges, ft: features), corpus size, and the result.
set -uo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 1 ] && [[ $1 =~ ^[0-9]+$ ]] || { echo "usage: $0 SECONDS [TARGET...]" >&2; exit 2; }
secs=$1; shift
build=${FUZZ_BUILD:-build-fuzz}
if [ ! -f "$build/CMakeCache.txt" ]; then
	CC=clang cmake -S . -B "$build" -DERNIC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
fi
cmake --build "$build" -j "${FUZZ_JOBS:-1}" >/dev/null || exit 1

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for d in tests/fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
work=${FUZZ_WORK:-$build/fuzz-work}
status=0
printf '%-16s %12s %8s %8s %8s  %s\n' target execs cov ft corpus result
for t in "${targets[@]}"; do
	bin=$build/tests/fuzz/$t
	[ -x "$bin" ] || { echo "$t: no such target" >&2; status=1; continue; }
	mkdir -p "$work/$t/new" "$work/$t/artifacts"
	log=$work/$t/fuzz.log
	# -rss_limit_mb: the ionic targets map 4 MiB of guest memory per input; ASan's quarantine adds more.
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
		-artifact_prefix="$work/$t/artifacts/" "$work/$t/new" "tests/fuzz/corpus/$t" </dev/null >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	result=ok
	if [ $rc -ne 0 ]; then
		result="FAILED ($(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|runtime error|deadly signal|timeout' "$log" || echo "exit $rc")), see $log"
		status=1
	fi
	printf '%-16s %12s %8s %8s %8s  %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result"
done
exit $status
