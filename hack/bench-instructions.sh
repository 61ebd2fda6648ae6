#!/usr/bin/env bash
# Instructions per operation of one Go benchmark, counted by valgrind's
# callgrind: unlike wall or CPU time on this shared VM (±10–30 % between runs
# of the same binary), the count moves by well under 1 % between runs, so two
# builds can be compared with one run each.
#
# Usage: hack/bench-instructions.sh PACKAGE BENCHMARK [LOW HIGH]
#   e.g. hack/bench-instructions.sh ./tests/emulator/ 'LeaseRead$' 20 120
#        hack/bench-instructions.sh ./pkg/cosmostest/ 'ServeChangeFeedRead$'
# It runs the benchmark LOW and HIGH times (defaults 1000 and 6000) under
# callgrind and prints (count(HIGH) - count(LOW)) / (HIGH - LOW): set-up and
# start-up cancel out. Binaries linked with cgo (bench/kedacompare, which
# imports all of KEDA) crash valgrind; the packages of this module do not.
# Needs valgrind (apt-get install valgrind).
set -euo pipefail
pkg=${1:?package}; bench=${2:?benchmark regexp}; low=${3:-1000}; high=${4:-6000}
command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" "$pkg"
count() {
	GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
		-test.run '^$' -test.bench "$bench" -test.benchtime "${1}x" 2>&1 |
		awk '/I[ ]+refs:/ { gsub(",", "", $NF); print $NF }'
}
lo=$(count "$low"); hi=$(count "$high")
[ -n "$lo" ] && [ -n "$hi" ] || { echo "callgrind printed no count (is $bench a benchmark of $pkg?)" >&2; exit 1; }
echo "$bench: $(( (hi - lo) / (high - low) )) instructions/op"
