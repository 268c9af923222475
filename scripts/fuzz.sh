#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a short fixed time (FUZZTIME,
# default 5s each), one at a time. Used by `make fuzz` and `make test`.
#
# A failing input is written by Go to <package>/testdata/fuzz/<FuzzName>/<hash>:
# commit that file — it becomes a regression seed that every plain `go test`
# run replays from then on. The script goes on with the other targets and
# exits non-zero at the end if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
# Minimising each new interesting input may take up to 60 s by default, which
# would spend a short run minimising instead of fuzzing.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-2s}

# Packages whose test files declare fuzz targets (grep first: listing every
# package's tests would compile them all).
mapfile -t dirs < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Z0-9_]' . | xargs -r -n1 dirname | sort -u)

failed=()
start=$(date +%s)
for dir in "${dirs[@]}"; do
	mapfile -t targets < <($GO test -list '^Fuzz' "$dir" | grep '^Fuzz' || true)
	for target in "${targets[@]}"; do
		echo "fuzz: $dir $target ($FUZZTIME)"
		if ! $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$dir" >"/tmp/fuzz-$$.log" 2>&1; then
			cat "/tmp/fuzz-$$.log"
			echo "fuzz: $dir $target FAILED; the crasher is under $dir/testdata/fuzz/$target/ — commit it as a regression seed" >&2
			failed+=("$dir $target")
		else
			tail -1 "/tmp/fuzz-$$.log"
		fi
	done
done
rm -f "/tmp/fuzz-$$.log"
echo "fuzz: ${#dirs[@]} packages in $(( $(date +%s) - start ))s"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
