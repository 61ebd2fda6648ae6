#!/usr/bin/env bash
# Drops this repository's azure-cosmosdb scaler into a fresh copy of KEDA's
# source and proves it builds and passes its tests there.
#
#   hack/intree.sh          copy, replace, build operator + adapter, run the scaler tests,
#                           run KEDA's own scaler tests beside ours, vet the e2e tests
#                           (make intree)
#   hack/intree.sh patch    copy and replace only, then write the change as a patch
#                           against KEDA's release (make intree-patch)
#
# Environment:
#   KEDA_VERSION      KEDA release to drop into (default v2.21.0)
#   INTREE_DIR        scratch copy, recreated on every run
#                     (default /tmp/keda-intree, or /tmp/keda-intree-patch for "patch")
#   INTREE_REF        git ref of this repository to take our files from (default: the working tree)
#   INTREE_RUN        go test -run pattern (default CosmosDB: every scaler test is TestCosmosDB...)
#   INTREE_TESTFLAGS  extra go test flags, e.g. -race
#   INTREE_LINT       path to golangci-lint (KEDA uses v2.13.2) to lint our files with KEDA's
#                     configuration; unset (default) to skip
#   INTREE_FULL       1 (default): also run all of KEDA's pkg/scalers tests with our test
#                     files in the package, to catch shared-state collisions; 0 to skip
#   PATCH             patch file for "patch" (default keda-azure-cosmosdb.patch, relative to
#                     the directory the script was started from)
#
# Only import paths are rewritten. KEDA's own azure-cosmosdb scaler, its unit
# test and its e2e tests are deleted unread; ours take their place:
#   pkg/scalers/azure_cosmosdb_scaler.go        -> pkg/scalers/azure_cosmosdb_scaler.go
#   pkg/scalers/azure_cosmosdb_*_test.go        -> pkg/scalers/ (not the benchmarks)
#   pkg/scalers/cosmosdb/{account,rest,changefeed,lag,lease}
#                                               -> pkg/scalers/azure/cosmosdb/...
#   pkg/cosmostest (non-test files), its internal packages and entraidtest
#                                               -> pkg/scalers/azure/cosmosdb/cosmostest/...
#   tests/scalers/azure/azure_cosmosdb*         -> tests/scalers/azure/ (e2e tests)
#   tests/scalers/azure/helper/CosmosDBHelper.go -> beside KEDA's other Azure test helpers
# Placement: KEDA keeps what its Azure scalers share under pkg/scalers/azure
# (auth, clouds, the Event Hubs checkpoint readers) and gives larger helpers of
# one vendor a directory under pkg/scalers (aws, gcp, kafka). Our support
# packages are Azure Cosmos DB's, so they go to pkg/scalers/azure/cosmosdb/:
# where a maintainer looks for Azure code, apart from package azure itself (no
# name can collide with its files) and imported one way, by the scaler only.
# The test server the scaler's unit tests use sits beside the packages it tests.
# Not copied: pkg/scalers/keda_adapter.go and pkg/scalers/azure_cosmosdb_inspect.go
# (this repository's stand-ins for names KEDA's scalers package already has);
# the benchmarks (*_bench_test.go: their figures live in BENCHMARKS.md);
# what only this repository's tools use: the control API of cosmoslag serve
# (pkg/cosmostest/control), the CONNECT proxy of the Entra ID test issuer
# (entraidtest/connectproxy: the scaler's bearer tests use cloud: Private,
# which needs no instance discovery), tests/local (the e2e-local harness, its
# own module) and tests/sdk; and pkg/cosmostest's own tests (they need
# azcosmos and goleak, which KEDA's module does not require, and exercise the
# test server, not the scaler).
# The Go build cache is shared with the rest of the machine, so re-runs only
# recompile what changed.
set -uo pipefail

# The whole script is one compound command: bash parses it completely before
# running it, so editing this file while a long run is in progress is safe.
{

mode=${1:-check}
case "$mode" in
check | patch) ;;
*)
	echo "usage: $0 [patch]" >&2
	exit 2
	;;
esac

start_dir=$(pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keda_version=${KEDA_VERSION:-v2.21.0}
if [ "$mode" = patch ]; then
	scratch=${INTREE_DIR:-/tmp/keda-intree-patch}
else
	scratch=${INTREE_DIR:-/tmp/keda-intree}
fi
run_pattern=${INTREE_RUN:-CosmosDB}
patch_file=${PATCH:-keda-azure-cosmosdb.patch}
case "$patch_file" in
/*) ;;
*) patch_file="$start_dir/$patch_file" ;;
esac

keda_module=github.com/kedacore/keda/v2
our_module=$(cd "$repo" && go list -m)
logdir=$scratch.logs
if [ -e "$logdir" ] && [ ! -e "$logdir/.intree-logs" ]; then
	echo "$logdir exists and was not made by $0; choose another INTREE_DIR" >&2
	exit 1
fi
rm -rf "$logdir" && mkdir -p "$logdir" && touch "$logdir/.intree-logs" || exit 1

script_start=$(date +%s)
step_name=""
step_start=0
modules_added=0

step() {
	step_name=$1
	step_start=$(date +%s)
	echo "==> [$(date +%H:%M:%S)] $step_name"
}

done_step() {
	echo "    ok ($(($(date +%s) - step_start))s)"
}

fail() {
	echo "FAILED at step: $step_name ($(($(date +%s) - step_start))s into the step, $(($(date +%s) - script_start))s in total)" >&2
	[ $# -gt 0 ] && echo "    $*" >&2
	echo "    logs: $logdir; scratch tree: $scratch" >&2
	exit 1
}

# run LOG CMD...: runs CMD in the scratch tree, output to LOG; on failure
# shows the end of the log and fails the step.
run() {
	local log=$logdir/$1
	shift
	if ! (cd "$scratch" && "$@") >"$log" 2>&1; then
		tail -n 60 "$log" >&2
		fail "command failed: $*"
	fi
}

# Module check. A package our code imports from a module that KEDA's go.mod
# does not require is added to the scratch go.mod and reported (the patch
# then carries it): modules already in KEDA's module graph at the version the
# graph selects, others with go get at the version this repository uses.
list_errors() {
	(cd "$scratch" && go list -e -deps -test -tags "${TAGS:-}" \
		-f '{{with .Error}}{{$.ImportPath}}: {{.Err}}{{end}}' "$@") 2>&1 | grep -v '^$'
}
gomod_changes() {
	(cd "$scratch" && git diff -U0 HEAD -- go.mod) | grep -E '^[+-][^+-]' || true
}
ensure_modules() {
	local log=$logdir/modules-$1.log
	shift
	local before missing pkg module
	before=$(gomod_changes)
	list_errors "$@" >"$log"
	if grep -q 'updates to go.mod needed' "$log"; then
		# No network: only requirements the module graph already holds are added.
		(cd "$scratch" && GOPROXY=off go list -mod=mod -e -deps -test -tags "${TAGS:-}" -f '' "$@") >"$log.mod" 2>&1
		list_errors "$@" >"$log"
	fi
	missing=$(grep -o 'no required module provides package [^;: ]*' "$log" | awk '{print $NF}' | sort -u)
	for pkg in $missing; do
		module=$(cd "$repo" && go list -e -f '{{with .Module}}{{.Path}}@{{.Version}}{{end}}' "$pkg" 2>/dev/null)
		echo "    missing module for $pkg: go get ${module:-$pkg}"
		run "go-get-${pkg//\//_}.log" go get "${module:-$pkg}"
	done
	[ -z "$missing" ] || list_errors "$@" >"$log"
	if [ -s "$log" ]; then
		head -n 40 "$log" >&2
		fail "packages do not load"
	fi
	if [ "$(gomod_changes)" != "$before" ]; then
		modules_added=1
		echo "    ADDED to KEDA's go.mod:"
		diff <(echo "$before") <(gomod_changes) | sed -n 's/^> /      /p'
	else
		echo "    none missing"
	fi
}

echo "in-tree check of $our_module in KEDA $keda_version (mode: $mode)"
echo "    go: $(go version); GOCACHE=$(go env GOCACHE)"

# --- 1. KEDA's source --------------------------------------------------------
step "locate KEDA $keda_version in the module cache"
keda_json=$(go mod download -json "$keda_module@$keda_version" 2>&1) || {
	echo "$keda_json" >&2
	fail "go mod download $keda_module@$keda_version"
}
keda_src=$(printf '%s\n' "$keda_json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -d "$keda_src/pkg/scalers" ] || fail "no KEDA source directory in: $keda_json"
echo "    $keda_src"
done_step

step "fresh copy into $scratch"
if [ -e "$scratch" ]; then
	# Only ever delete what an earlier run made.
	grep -qs "^module $keda_module\$" "$scratch/go.mod" ||
		fail "$scratch exists and is not a scratch copy of KEDA; choose another INTREE_DIR"
	chmod -R u+w "$scratch" 2>/dev/null
	rm -rf "$scratch" || fail "cannot remove the old scratch tree"
fi
mkdir -p "$(dirname "$scratch")"
cp -R "$keda_src" "$scratch" || fail "copy"
chmod -R u+w "$scratch"
# A baseline commit, so the change can be shown as a patch against the release.
run git-init.log git init -q
run git-add-base.log git add -A -f
run git-commit-base.log git -c user.name=intree -c user.email=intree@localhost -c commit.gpgsign=false \
	commit -q -m "KEDA $keda_version"
done_step

# --- 2. Our files in, KEDA's azure-cosmosdb out --------------------------------
step "replace KEDA's azure-cosmosdb scaler with ours"
src=$repo
if [ -n "${INTREE_REF:-}" ]; then
	src=$logdir/src
	mkdir -p "$src"
	(cd "$repo" && git archive "$INTREE_REF") | tar -x -C "$src" || fail "git archive $INTREE_REF"
	echo "    our files from $INTREE_REF ($(cd "$repo" && git rev-parse --short "$INTREE_REF"))"
else
	echo "    our files from the working tree ($(cd "$repo" && git rev-parse --short HEAD)$(cd "$repo" && git diff --quiet HEAD -- pkg tests || echo ", with uncommitted changes"))"
fi
[ -f "$src/pkg/scalers/azure_cosmosdb_scaler.go" ] || fail "no pkg/scalers/azure_cosmosdb_scaler.go in $src"

# KEDA's files for this trigger, removed unread.
rm -f "$scratch"/pkg/scalers/azure_cosmosdb_*.go
rm -rf "$scratch"/tests/scalers/azure/azure_cosmosdb*
support=pkg/scalers/azure/cosmosdb # where our support packages go in KEDA's tree
[ -e "$scratch/$support" ] && fail "KEDA already has $support; our support packages would collide"

copied=()
copy() { # copy SRC DST
	mkdir -p "$(dirname "$scratch/$2")"
	cp "$src/$1" "$scratch/$2" || fail "copy $1"
	copied+=("$2")
}
# copy_tree DIR DST [find options]: DIR's .go files, except benchmarks, to DST.
copy_tree() {
	local dir=$1 dst=$2 f
	shift 2
	while IFS= read -r f; do
		copy "$f" "$dst${f#"$dir"}"
	done < <(cd "$src" && find "$dir" "$@" -name '*.go' ! -name '*_bench_test.go' | sort)
}
copy pkg/scalers/azure_cosmosdb_scaler.go pkg/scalers/azure_cosmosdb_scaler.go
for f in "$src"/pkg/scalers/azure_cosmosdb_*_test.go; do
	case "$f" in *_bench_test.go) continue ;; esac
	copy "pkg/scalers/$(basename "$f")" "pkg/scalers/$(basename "$f")"
done
copy_tree pkg/scalers/cosmosdb "$support"
# The test server: the core package with its internal packages, and the
# Entra ID issuer the bearer tests use; no tests of its own, no control API,
# no proxy.
copy_tree pkg/cosmostest "$support/cosmostest" -maxdepth 1 ! -name '*_test.go'
copy_tree pkg/cosmostest/entraidtest "$support/cosmostest/entraidtest" -maxdepth 1 ! -name '*_test.go'
# Of its internal packages, those the two import.
internal_pkgs=$(cd "$src" && go list -deps -f '{{.ImportPath}}' ./pkg/cosmostest ./pkg/cosmostest/entraidtest |
	sed -n "s#^$our_module/\(pkg/cosmostest/internal/.*\)#\1#p") || fail "go list the test server's internal packages"
for dir in $internal_pkgs; do
	copy_tree "$dir" "$support/cosmostest/${dir#pkg/cosmostest/}" -maxdepth 1 ! -name '*_test.go'
done
# The e2e tests, and their helper beside KEDA's other Azure test helpers.
if [ -d "$src/tests/scalers" ]; then
	while IFS= read -r f; do
		case "$f" in
		tests/scalers/azure/azure_cosmosdb*/*) ;;
		*) [ -e "$scratch/$f" ] && fail "$f would overwrite KEDA's file of that name" ;;
		esac
		copy "$f" "$f"
	done < <(cd "$src" && find tests/scalers -name '*.go' | sort)
fi

# Import paths only: the support packages and the test server move under
# $support; everything else keeps its path below the module root.
for f in "${copied[@]}"; do
	sed -i \
		-e "s#\"$our_module/pkg/cosmostest\([/\"]\)#\"$keda_module/$support/cosmostest\1#g" \
		-e "s#\"$our_module/pkg/scalers/cosmosdb/#\"$keda_module/$support/#g" \
		-e "s#\"$our_module/pkg/#\"$keda_module/pkg/#g" \
		-e "s#\"$our_module/tests/#\"$keda_module/tests/#g" \
		"$scratch/$f"
	if grep -q "$our_module" "$scratch/$f"; then
		grep -n "$our_module" "$scratch/$f" >&2
		fail "$f still refers to $our_module"
	fi
done
# gofmt only re-sorts imports whose paths changed.
unformatted=$(cd "$scratch" && gofmt -l "${copied[@]}")
if [ -n "$unformatted" ]; then
	echo "    gofmt re-sorted imports in:" $unformatted
	(cd "$scratch" && gofmt -w $unformatted)
fi
echo "    ${#copied[@]} files copied"
done_step

step "registration in pkg/scaling/scalers_builder.go"
if ! grep -A1 '^[[:space:]]*case "azure-cosmosdb":' "$scratch/pkg/scaling/scalers_builder.go" |
	grep -q 'scalers\.NewAzureCosmosDBScaler(config)'; then
	fail "pkg/scaling/scalers_builder.go no longer maps azure-cosmosdb to scalers.NewAzureCosmosDBScaler(config)"
fi
echo "    azure-cosmosdb -> scalers.NewAzureCosmosDBScaler(config)"
done_step

step "scaler schema (schema/generated, as make generate-scalers-schema)"
run schema.log go run ./schema/generate_scaler_schema.go --keda-version main \
	--scalers-builder-file pkg/scaling/scalers_builder.go --scalers-files-dir pkg/scalers \
	--output-file-path schema/generated/ --output-file-name scalers-schema --output-file-format both
(cd "$scratch" && git diff --stat -- schema/generated) | sed 's/^/    /'
done_step

step "modules: what our code needs beyond KEDA's go.mod"
ensure_modules scaler "./$support/..." ./pkg/scalers
done_step

if [ "$mode" = check ]; then
	# --- 3. Build and test in KEDA's tree ---------------------------------------
	step "go vet our packages (scaler package compiles: no name collisions)"
	run vet-support.log go vet "./$support/..."
	run build-scalers.log go build ./pkg/scalers
	done_step

	step "go build ./cmd/operator ./cmd/adapter"
	run build-cmd.log go build ./cmd/operator ./cmd/adapter
	done_step

	step "go test ./pkg/scalers/... -run $run_pattern ${INTREE_TESTFLAGS:-}"
	# shellcheck disable=SC2086 # INTREE_TESTFLAGS is a list of flags
	(cd "$scratch" && go test -count=1 -v ${INTREE_TESTFLAGS:-} ./pkg/scalers/... -run "$run_pattern") >"$logdir/test.log" 2>&1
	status=$?
	passed=$(grep -cE '^[[:space:]]*--- PASS' "$logdir/test.log")
	failed=$(grep -cE '^[[:space:]]*--- FAIL' "$logdir/test.log")
	skipped=$(grep -cE '^[[:space:]]*--- SKIP' "$logdir/test.log")
	grep -E '^(ok|FAIL|---)' "$logdir/test.log" | grep -v 'no test files' | grep -v '^--- PASS' | sed 's/^/    /'
	echo "    tests: $passed passed, $failed failed, $skipped skipped (log: $logdir/test.log)"
	if [ "$status" -ne 0 ]; then
		grep -B2 -A30 -E -- '--- FAIL|^FAIL|panic:|build failed|\[setup failed\]' "$logdir/test.log" | head -150 >&2
		fail "go test exited $status"
	fi
	[ "$passed" -gt 0 ] || fail "the pattern $run_pattern ran no tests"
	done_step

	if [ -d "$scratch/tests/scalers/azure/azure_cosmosdb" ]; then
		step "go vet -tags e2e ./tests/scalers/azure/azure_cosmosdb... ./tests/scalers/azure/helper"
		TAGS=e2e ensure_modules e2e ./tests/scalers/azure/azure_cosmosdb...
		run vet-e2e.log go vet -tags e2e ./tests/scalers/azure/azure_cosmosdb... ./tests/scalers/azure/helper
		done_step
	fi

	if [ -n "${INTREE_LINT:-}" ]; then
		# KEDA's own lint configuration (.golangci.yml, e2e tag included), on our changes only.
		step "golangci-lint (KEDA's configuration) on our files"
		(cd "$scratch" && "$INTREE_LINT" run --new-from-rev HEAD ./pkg/scalers/... ./tests/scalers/azure/...) >"$logdir/lint.log" 2>&1 || {
			sed 's/^/    | /' "$logdir/lint.log" | tail -n 80
			fail "golangci-lint found issues (log: $logdir/lint.log)"
		}
		done_step
	fi

	if [ "${INTREE_FULL:-1}" = 1 ]; then
		# Our test files join KEDA's pkg/scalers test package: one binary, one
		# TestMain, shared process state. Run all of KEDA's scaler tests with
		# ours in; a failure counts against us only if it fails again with our
		# files in and passes once they are taken out.
		step "all of KEDA's go test ./pkg/scalers with our test files in the package"
		(cd "$scratch" && go test -count=1 -v ./pkg/scalers/) >"$logdir/test-keda.log" 2>&1
		status=$?
		echo "    $(grep -cE '^--- PASS' "$logdir/test-keda.log") passed, $(grep -cE '^--- FAIL' "$logdir/test-keda.log") failed"
		if [ "$status" -ne 0 ]; then
			failed=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda.log" | awk '{print $3}' | sort -u)
			[ -n "$failed" ] || {
				tail -n 40 "$logdir/test-keda.log" >&2
				fail "go test ./pkg/scalers exited $status without a failing test"
			}
			grep -E -B12 -A4 '^--- FAIL' "$logdir/test-keda.log" | head -80 | sed 's/^/    | /'
			# A test that passes on a second try with our files in is flaky
			# (fixed ports, wall-clock hours), not ours to answer for.
			echo "    failed: $(echo $failed); re-running them with our test files"
			(cd "$scratch" && go test -count=1 -v -run "^($(echo $failed | tr ' ' '|'))\$" ./pkg/scalers/) >"$logdir/test-keda-again.log" 2>&1
			again=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda-again.log" | awk '{print $3}' | sort -u)
			flaky=$(comm -23 <(echo "$failed") <(echo "$again") | grep -v '^$')
			[ -z "$flaky" ] || echo "    passed on a second try (flaky, not counted): $(echo $flaky)"
			failed=$again
			if [ -n "$failed" ]; then
				echo "    failing again: $(echo $failed); re-running them without our test files"
				mkdir -p "$logdir/aside"
				mv "$scratch"/pkg/scalers/azure_cosmosdb_*_test.go "$logdir/aside/"
				(cd "$scratch" && go test -count=1 -v -run "^($(echo $failed | tr ' ' '|'))\$" ./pkg/scalers/) >"$logdir/test-keda-without-ours.log" 2>&1
				mv "$logdir"/aside/*.go "$scratch/pkg/scalers/"
				still=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda-without-ours.log" | awk '{print $3}' | sort -u)
				ours=$(comm -23 <(echo "$failed") <(echo "$still") | grep -v '^$')
				[ -z "$still" ] || echo "    failing without our files too (KEDA's own, not counted): $(echo $still)"
				[ -z "$ours" ] || fail "KEDA tests that fail only with our test files in the package: $(echo $ours) (log: $logdir/test-keda.log)"
			fi
		fi
		done_step
	fi
else
	# The e2e tests' modules belong in the patch too.
	if [ -d "$scratch/tests/scalers/azure/azure_cosmosdb" ]; then
		step "modules for the e2e tests"
		TAGS=e2e ensure_modules e2e ./tests/scalers/azure/azure_cosmosdb...
		done_step
	fi
	step "write the patch against KEDA $keda_version"
	run git-add-change.log git add -A -f
	(cd "$scratch" && git -c core.quotepath=off diff --cached --stat HEAD) | sed 's/^/    /'
	# KEDA's release notes are generated from PR titles (Component:
	# Description), so the change travels as a commit whose subject is that
	# title: git am keeps it, git apply ignores it.
	run git-commit-change.log git -c user.name=intree -c user.email=intree@localhost -c commit.gpgsign=false \
		commit -q -F "$src/hack/intree-commit-message.txt"
	(cd "$scratch" && git format-patch -1 --stdout HEAD) >"$patch_file" || fail "git format-patch"
	echo "    $patch_file ($(wc -l <"$patch_file") lines); apply in a KEDA $keda_version checkout with: git am $(basename "$patch_file") (or git apply)"
	done_step
fi

if [ "$modules_added" = 1 ]; then
	echo "modules added to KEDA's go.mod (go.sum too):"
	gomod_changes | sed 's/^/    /'
fi
echo "in-tree $mode: OK in $(($(date +%s) - script_start))s (scratch tree: $scratch, logs: $logdir)"
exit 0
}
