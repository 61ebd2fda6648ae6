#!/usr/bin/env bash
# Wall time per poll of two (or more) builds side by side, interleaved: run 1
# of every build, then run 2 of every build, and so on, so a change in the
# machine's load between runs falls on every build alike. Each run is one
# invocation of the build's test binary with -test.count 1; every benchmark it
# selects runs -test.benchtime times (default 10x) in that invocation.
#
# Usage: hack/bench-walltime.sh [-n RUNS] [-b REGEXP] [-t BENCHTIME] BUILD...
#   BUILD is a git revision of this repository or the path of a test binary
#   already built (go test -c ./tests/emulator/). A revision's scaler is
#   compiled from `git archive REV` in a temporary directory with the
#   harness of this working tree: its pkg/cosmostest (the server) and
#   tests/emulator/{main_test.go,poll_bench_test.go} (the benchmarks, which
#   use only the scaler's constructor) replace the revision's, so every
#   build runs the same benchmarks against the same server, shapes the
#   revision did not have included.
#   -n RUNS      runs per build (default 7)
#   -b REGEXP    benchmarks (default: the 100- and 1,000-lease poll, with pages
#                of 1,000 and of 100, and the floor)
#   -t BENCHTIME -test.benchtime (default 10x)
# e.g. hack/bench-walltime.sh 91e9981 HEAD
#      hack/bench-walltime.sh -b '^BenchmarkCosmosDBPoll$/^leases=1000,page=100$' 91e9981 HEAD
#      COSMOSDB_BENCH_LATENCY=10ms hack/bench-walltime.sh -n 5 old.test new.test
#
# Prints one line per run and benchmark (run, build, benchmark, ms/op, and
# in-flight where the build's benchmarks report it: requests x latency / time
# per poll), the process's wall and user+sys CPU seconds per run, and at the
# end per build and benchmark the runs' minimum, median and maximum ms/op.
# The figures are only as steady as the machine: on a shared or busy machine
# read the spreads, not one run.
set -euo pipefail
runs=7
bench='^Benchmark(CosmosDBPoll|HTTPFloor)$/^leases=(100|1000)(,page=100)?$'
benchtime=10x
while getopts 'n:b:t:' opt; do
	case $opt in
	n) runs=$OPTARG ;;
	b) bench=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	*) sed -n '2,29p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,29p' "$0" >&2; exit 2; }

root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

names=() bins=()
for build in "$@"; do
	if [ -f "$build" ] && [ -x "$build" ]; then
		names+=("$(basename "$build")")
		bins+=("$(cd "$(dirname "$build")" && pwd)/$(basename "$build")")
		continue
	fi
	rev=$(git -C "$root" rev-parse --short "$build^{commit}")
	src="$work/src-$rev"
	mkdir -p "$src"
	git -C "$root" archive "$rev" | tar -x -C "$src"
	rm -rf "$src/pkg/cosmostest" "$src"/tests/emulator/*_test.go
	cp -r "$root/pkg/cosmostest" "$src/pkg/"
	cp "$root/tests/emulator/main_test.go" "$root/tests/emulator/poll_bench_test.go" "$src/tests/emulator/"
	echo "building $build ($rev) ..." >&2
	(cd "$src" && go test -c -o "$work/$rev.test" ./tests/emulator/)
	names+=("$rev")
	bins+=("$work/$rev.test")
done
if [ "$(printf '%s\n' "${names[@]}" | sort | uniq -d)" ]; then
	echo "two builds have the same name: ${names[*]} (rename a binary)" >&2
	exit 2
fi

results="$work/results"
: >"$results"
printf '%-4s %-14s %-34s %10s %10s\n' run build benchmark ms/op in-flight
for run in $(seq 1 "$runs"); do
	for i in "${!bins[@]}"; do
		out="$work/out"
		TIMEFORMAT='%R %U %S'
		{ time "${bins[$i]}" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" \
			-test.count 1 >"$out" 2>&1; } 2>"$work/time" ||
			{ cat "$out" >&2; echo "run $run of ${names[$i]} failed" >&2; exit 1; }
		# Benchmark lines: name-GOMAXPROCS, iterations, then value-unit pairs
		# (ns/op; in-flight where the benchmark reports it; ...).
		awk -v run="$run" -v build="${names[$i]}" '
			/^Benchmark/ && $4 == "ns/op" {
				name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
				inflight = "-"
				for (f = 5; f < NF; f++) if ($(f + 1) == "in-flight") inflight = sprintf("%.1f", $f)
				printf "%-4s %-14s %-34s %10.1f %10s\n", run, build, name, $3 / 1e6, inflight
			}' "$out" | tee -a "$results"
		read -r wall user sys <"$work/time"
		printf '%-4s %-14s %-34s %s s wall, %s s user+sys\n' "$run" "${names[$i]}" "(process)" \
			"$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
	done
done

echo
printf '%-14s %-34s %5s %10s %10s %10s  (ms/op)\n' build benchmark runs min median max
for name in "${names[@]}"; do
	awk -v build="$name" '$2 == build { print $3, $4 }' "$results" | sort -k1,1 -k2,2n |
		awk -v build="$name" '
			{ v[$1, ++n[$1]] = $2; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
			END {
				for (j = 1; j <= k; j++) {
					b = order[j]; c = n[b]
					med = c % 2 ? v[b, (c + 1) / 2] : (v[b, c / 2] + v[b, c / 2 + 1]) / 2
					printf "%-14s %-34s %5d %10.1f %10.1f %10.1f\n", build, b, c, v[b, 1], med, v[b, c]
				}
			}'
done
