#!/usr/bin/env bash
# Runs every Go fuzz target of the module for a short fixed time (FUZZTIME,
# default 5s each), two packages at a time (FUZZJOBS), each fuzzing with one
# worker, so both cores fuzz while the other package builds. Used by `make fuzz`
# and `make test`.
#
# A failing input is written by Go to <package>/testdata/fuzz/<FuzzName>/<hash>:
# commit that file — it becomes a regression seed that every plain `go test`
# run replays from then on. The script goes on with the other targets and
# exits non-zero at the end if any failed. A target that fails only by Go's
# fuzz-coordinator deadline race (no input written) is run once more.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
# Minimising each new interesting input may take up to 60 s by default, which
# would spend a short run minimising instead of fuzzing.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-2s}
FUZZJOBS=${FUZZJOBS:-2}

# Packages whose test files declare fuzz targets (grep first: listing every
# package's tests would compile them all).
mapfile -t dirs < <(grep -rl --include='*_test.go' -E '^func Fuzz[A-Z0-9_]' . | xargs -r -n1 dirname | sort -u)

# crashers lists the failing inputs Go has written for a target.
crashers() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }

run_target() { # dir target log: 0 passed, 1 failed with a crasher (or an error), 2 the coordinator race
	local dir=$1 target=$2 log=$3 before
	before=$(crashers "$dir" "$target")
	if $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" -parallel 1 "$dir" >"$log" 2>&1; then
		return 0
	fi
	# go1.26's fuzz coordinator can fail a target with a bare "context deadline
	# exceeded" when -fuzztime ends while a worker is busy (go.dev/issue/75804,
	# fixed in go1.27): nothing was found and no input was written.
	if [ "$(crashers "$dir" "$target")" = "$before" ] && grep -qx '    context deadline exceeded' "$log"; then
		return 2
	fi
	return 1
}

# fuzz_package runs every target of one package in turn; its output goes to
# $work/<n>.out and the names of failed targets to $work/<n>.failed.
fuzz_package() { # n dir
	local n=$1 dir=$2 log="$work/$1.log" rc target
	local -a targets
	mapfile -t targets < <($GO test -list '^Fuzz' "$dir" | grep '^Fuzz' || true)
	for target in "${targets[@]}"; do
		echo "fuzz: $dir $target ($FUZZTIME)"
		rc=0
		run_target "$dir" "$target" "$log" || rc=$?
		if [ "$rc" = 2 ]; then
			echo "fuzz: $dir $target: the fuzz coordinator's deadline race (go.dev/issue/75804), no input written; running it again"
			rc=0
			run_target "$dir" "$target" "$log" || rc=$?
		fi
		if [ "$rc" != 0 ]; then
			cat "$log"
			echo "fuzz: $dir $target FAILED; the crasher is under $dir/testdata/fuzz/$target/ — commit it as a regression seed"
			echo "$dir $target" >>"$work/$n.failed"
		else
			tail -1 "$log"
		fi
	done >"$work/$n.out" 2>&1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
n=0
for dir in "${dirs[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$FUZZJOBS" ]; do
		wait -n || true
	done
	n=$((n + 1))
	fuzz_package "$n" "$dir" &
done
wait
failed=()
for i in $(seq 1 "$n"); do
	cat "$work/$i.out"
	if [ -f "$work/$i.failed" ]; then
		mapfile -t -O "${#failed[@]}" failed <"$work/$i.failed"
	fi
done
echo "fuzz: ${#dirs[@]} packages in $(( $(date +%s) - start ))s"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
	exit 1
fi
