#!/usr/bin/env bash
# The private advisory for KEDA's own azure-cosmosdb scaler: the fix for each
# affected release, to go to KEDA's maintainers privately.
#
#   hack/advisory.sh write DIR   write DIR/SECURITY_REPORT.md and, for each
#                                affected release, DIR/keda-<version>-azure-cosmosdb.patch,
#                                after checking that the patch applies (git apply
#                                --check) to a clean copy of that release; no build
#                                (make intree-patch calls this)
#   hack/advisory.sh check       for each affected release: copy KEDA's module tree
#                                to a scratch dir, git init, git apply the patch, go
#                                build, then go test ./pkg/scalers/ -run CosmosDB
#                                (the release's own tests of the scaler and the patch's)
#   hack/advisory.sh before      the same copies with only the patch's test file:
#                                TestCosmosDBCredentialDestinations must fail there,
#                                and its failures show what the released scaler does;
#                                TestCosmosDBWorkloadIdentityAzureStackCloud must pass
#                                there (the migration works before the upgrade)
#   hack/advisory.sh versions    the releases the Go module proxy lists from v2.20.2
#                                on, and whether each has the scaler and the same
#                                scaler files as the first affected release
#
# The patch (hack/advisory/keda-v2.21.0-azure-cosmosdb.patch) changes only
# pkg/scalers/azure_cosmosdb_scaler.go and its test file of the released
# KEDA; it is a fix to KEDA's code, written against that code. The same diff
# is the stack's first pull request (hack/pr/stack/01-*). Regenerate it from
# a scratch copy where it is applied and edited:
#   git diff >hack/advisory/keda-v2.21.0-azure-cosmosdb.patch
#
# Environment:
#   KEDA_VERSIONS    the affected releases (default "v2.21.0 v2.21.1"); v2.21.1
#                    needs Go 1.27.4, which GOTOOLCHAIN=auto fetches from the Go
#                    module proxy
#   ADVISORY_DIR     scratch copies for check/before (default /tmp/keda-advisory),
#                    one subdirectory per release, recreated
#   ADVISORY_BUILD   packages go build builds (default ./pkg/scalers/... ./cmd/...;
#                    "./..." for all of KEDA; cold, pkg/scalers alone takes tens of
#                    minutes on two cores, per release)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
versions=${KEDA_VERSIONS:-v2.21.0 v2.21.1}
patch=$src/hack/advisory/keda-v2.21.0-azure-cosmosdb.patch
template=$src/hack/advisory/SECURITY_REPORT.md.tmpl
scratch=${ADVISORY_DIR:-/tmp/keda-advisory}
build=${ADVISORY_BUILD:-./pkg/scalers/... ./cmd/...}

fail() { echo "advisory.sh: $*" >&2; exit 1; }
step() { echo "==> $*"; }

[ -f "$patch" ] || fail "no patch: $patch"

# module_dir VERSION: KEDA's module tree of VERSION in the module cache.
module_dir() {
	local modcache
	modcache=$(cd "$src" && go env GOMODCACHE)
	# A release may need a newer Go than this module: download only.
	(cd "$src" && GOFLAGS=-mod=mod go mod download "github.com/kedacore/keda/v2@$1") >/dev/null 2>&1 || true
	[ -d "$modcache/github.com/kedacore/keda/v2@$1" ] || fail "KEDA $1 is not in the module cache (go mod download github.com/kedacore/keda/v2@$1)"
	echo "$modcache/github.com/kedacore/keda/v2@$1"
}

# copy_keda VERSION DIR: a clean copy of KEDA's module tree in DIR, committed.
copy_keda() {
	local from dir=$2
	from=$(module_dir "$1")
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r "$from/." "$dir"
	chmod -R u+w "$dir"
	(cd "$dir" && git init -q && git add -A -f && git -c user.name=advisory -c user.email=advisory@invalid commit -qm "KEDA $1" --no-verify) ||
		fail "git init of the copy"
}

# In the copies, go may fetch the toolchain a release's go.mod needs.
export GOTOOLCHAIN=auto

case "${1:-}" in
write)
	out=${2:-}
	[ -n "$out" ] || fail "usage: hack/advisory.sh write DIR"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$out"
	for version in $versions; do
		copy_keda "$version" "$tmp/keda-$version" >/dev/null
		(cd "$tmp/keda-$version" && git apply --check "$patch") || fail "the patch does not apply to KEDA $version"
		cp "$patch" "$out/keda-$version-azure-cosmosdb.patch"
	done
	list=$(echo "$versions" | sed 's/ \([^ ]*\)$/ and \1/; s/ \([^ ]*\) and/, \1 and/g')
	sed "s/@@KEDA_VERSIONS@@/$list/g" "$template" >"$out/SECURITY_REPORT.md"
	! grep -q '@@[A-Z_]*@@' "$out/SECURITY_REPORT.md" || fail "SECURITY_REPORT.md still has placeholders"
	! grep -qi 'TODO' "$out/SECURITY_REPORT.md" || fail "SECURITY_REPORT.md has a TODO"
	echo "advisory for KEDA $list: $out/SECURITY_REPORT.md and one patch per release (each applies with git apply)"
	;;
check)
	for version in $versions; do
		dir=$scratch/$version
		step "clean copy of KEDA $version in $dir"
		copy_keda "$version" "$dir"
		step "git apply ${patch#"$src"/}"
		(cd "$dir" && git apply "$patch" && git diff --stat)
		step "go build $build ($(cd "$dir" && go version))"
		# shellcheck disable=SC2086 # $build is a list of packages
		(cd "$dir" && go build $build) || fail "go build failed on KEDA $version"
		step "go test ./pkg/scalers/ -run CosmosDB"
		(cd "$dir" && go test -count=1 -v -run CosmosDB ./pkg/scalers/ >"$dir/check.log" 2>&1) || { tail -50 "$dir/check.log"; fail "KEDA $version's CosmosDB tests fail with the patch (log: $dir/check.log)"; }
		grep -E '^ok|^--- (PASS|FAIL): TestCosmosDB(CredentialDestinations|WorkloadIdentityAzureStackCloud)' "$dir/check.log" || true
		echo "KEDA $version: the patch applies, builds, and its tests and the release's own CosmosDB tests pass ($(grep -c -- '^--- PASS' "$dir/check.log") top-level tests)"
	done
	;;
before)
	for version in $versions; do
		dir=$scratch/$version-before
		step "clean copy of KEDA $version in $dir, the patch's test file only"
		copy_keda "$version" "$dir"
		(cd "$dir" && git apply --include=pkg/scalers/azure_cosmosdb_scaler_test.go "$patch")
		step "go test ./pkg/scalers/ -run TestCosmosDBCredentialDestinations (must fail on the released scaler)"
		if (cd "$dir" && go test -count=1 -v -run 'TestCosmosDBCredentialDestinations' ./pkg/scalers/) >"$dir/before.log" 2>&1; then
			cat "$dir/before.log"
			fail "TestCosmosDBCredentialDestinations passes on KEDA $version without the fix: it shows nothing"
		fi
		grep -E '^\s*--- (PASS|FAIL)|scaler created' "$dir/before.log" || true
		echo "KEDA $version without the fix: the test fails as above (full log: $dir/before.log)"
		step "go test ./pkg/scalers/ -run 'TestCosmosDBWorkloadIdentityAzureStackCloud\$' (the migration must work on the released scaler)"
		(cd "$dir" && go test -count=1 -v -run 'TestCosmosDBWorkloadIdentityAzureStackCloud$' ./pkg/scalers/) >"$dir/migration.log" 2>&1 ||
			{ cat "$dir/migration.log"; fail "on KEDA $version without the fix, cloud: AzureStackCloud with workload identity does not work as the migration says"; }
		grep -E '^--- PASS' "$dir/migration.log"
		echo "KEDA $version without the fix: workload identity with cloud: AzureStackCloud and the operator's environment file works"
	done
	;;
versions)
	first=${versions%% *}
	echo "the Go module proxy's KEDA releases from v2.20.2 on:"
	(cd "$src" && GOFLAGS=-mod=mod go list -m -versions github.com/kedacore/keda/v2) | tr ' ' '\n' | sed -n '/^v2\.20\.2$/,$p' | while read -r version; do
		dir=$(module_dir "$version")
		if [ ! -f "$dir/pkg/scalers/azure_cosmosdb_scaler.go" ]; then
			echo "  $version: no azure-cosmosdb scaler"
			continue
		fi
		same=yes
		for f in pkg/scalers/azure_cosmosdb_scaler.go pkg/scalers/azure_cosmosdb_scaler_test.go pkg/scalers/azure/cloud_config.go pkg/scalers/azure/azure_cloud_environment.go pkg/scalers/azure/azure_azidentity_chain.go; do
			cmp -s "$dir/$f" "$(module_dir "$first")/$f" || same="no ($f differs)"
		done
		echo "  $version: azure-cosmosdb scaler; the same files as $first: $same"
	done
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
