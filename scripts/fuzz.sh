#!/usr/bin/env bash
# Runs every Go fuzz target (func FuzzX in a _test.go file under cmd/,
# internal/, services/ or api/) for FUZZTIME each, one after another, and
# prints a summary (executions and result per target). Targets are
# discovered with `go test -list '^Fuzz'`, so a new FuzzX runs without
# editing this file. A crash leaves its input in the package's
# testdata/fuzz/FuzzX/ (commit it as a regression seed once fixed) and makes
# the script fail after the remaining targets ran.
#
#   FUZZTIME=10m scripts/fuzz.sh            # what `make fuzz` runs
#   FUZZTIME=6s  scripts/fuzz.sh            # what `make fuzz-short` (CI) runs
#   FUZZ_TARGETS='FuzzParse|FuzzLoad' ...   # only the targets matching a regexp
#   FUZZPARALLEL=1 ...                      # fuzzing workers (default GOMAXPROCS)
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-10m}"
# Minimizing a new input re-runs the target many times; bounded so that slow
# targets (FuzzLoad writes files) keep fuzzing.
FUZZMINIMIZETIME="${FUZZMINIMIZETIME:-5s}"
FUZZ_TARGETS="${FUZZ_TARGETS:-.}"
FUZZPARALLEL="${FUZZPARALLEL:-}"
parallel=()
[[ -z "$FUZZPARALLEL" ]] || parallel=(-parallel "$FUZZPARALLEL")

summary=()
fail=0
pkgs=$($GO list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' ./cmd/... ./internal/... ./services/... ./api/...)
while read -r pkg dir; do
	[[ -n "$pkg" ]] || continue
	grep -qs '^func Fuzz' "$dir"/*_test.go || continue
	for name in $($GO test -list '^Fuzz' "$pkg" | grep '^Fuzz' | grep -E -- "$FUZZ_TARGETS" || true); do
		echo "== $pkg $name for $FUZZTIME"
		log=$(mktemp)
		start=$(date +%s)
		result=FAIL
		for attempt in 1 2; do
			if $GO test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "${parallel[@]}" "$pkg" 2>&1 | tee "$log"; then
				result=ok
				break
			fi
			# The fuzzing engine's own deadline firing while a worker is busy
			# (no failing input written: nothing was found) is not a crash;
			# that run is repeated once. A written input always fails.
			if grep -q 'Failing input written' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
				break
			fi
			echo "== $name: the engine's deadline fired with no failing input; running it again"
		done
		[[ "$result" == ok ]] || fail=1
		execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
		summary+=("$(printf '%-4s %-20s %-45s %12s execs %5ss' "$result" "$name" "$pkg" "${execs:-?}" "$(($(date +%s) - start))")")
		rm -f "$log"
	done
done <<<"$pkgs"
echo
echo "fuzz summary (FUZZTIME=$FUZZTIME):"
printf '%s\n' "${summary[@]}"
exit "$fail"
