#!/usr/bin/env bash
# The private advisory for KEDA's own azure-cosmosdb scaler: the fix for the
# released version, to go to KEDA's maintainers before anything public.
#
#   hack/advisory.sh write DIR   write DIR/SECURITY_REPORT.md and
#                                DIR/keda-v2.21.0-azure-cosmosdb.patch, after
#                                checking that the patch applies (git apply
#                                --check) to a clean copy of KEDA; no build
#                                (make intree-patch calls this)
#   hack/advisory.sh check       copy KEDA's module tree to a scratch dir, git init,
#                                git apply the patch, go build, then
#                                go test ./pkg/scalers/ -run CosmosDB (KEDA's own
#                                tests of the scaler and the patch's)
#   hack/advisory.sh before      the same copy with only the patch's test file:
#                                TestCosmosDBCredentialDestinations must fail there,
#                                and its failures show what the released scaler does
#
# The patch (hack/advisory/keda-v2.21.0-azure-cosmosdb.patch) changes only
# pkg/scalers/azure_cosmosdb_scaler.go and its test file of the released
# KEDA; it is a fix to KEDA's code, written against that code, and shares no
# file with this repository's scaler. Regenerate it from a scratch copy
# where it is applied and edited: git diff >hack/advisory/keda-v2.21.0-azure-cosmosdb.patch
#
# Environment:
#   KEDA_VERSION     the released KEDA the patch is for (default v2.21.0)
#   ADVISORY_DIR     scratch copy for check/before (default /tmp/keda-advisory), recreated
#   ADVISORY_BUILD   packages go build builds (default ./pkg/scalers/... ./cmd/...;
#                    "./..." for all of KEDA; cold, pkg/scalers alone takes tens of
#                    minutes on two cores)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
version=${KEDA_VERSION:-v2.21.0}
patch=$src/hack/advisory/keda-$version-azure-cosmosdb.patch
template=$src/hack/advisory/SECURITY_REPORT.md.tmpl
scratch=${ADVISORY_DIR:-/tmp/keda-advisory}
build=${ADVISORY_BUILD:-./pkg/scalers/... ./cmd/...}

fail() { echo "advisory.sh: $*" >&2; exit 1; }
step() { echo "==> $*"; }

[ -f "$patch" ] || fail "no patch for KEDA $version: $patch"

# copy_keda DIR: a clean copy of KEDA's module tree in DIR, committed.
copy_keda() {
	local modcache dir=$1
	modcache=$(cd "$src" && go env GOMODCACHE)
	(cd "$src" && go mod download "github.com/kedacore/keda/v2@$version") || fail "go mod download github.com/kedacore/keda/v2@$version"
	[ -d "$modcache/github.com/kedacore/keda/v2@$version" ] || fail "KEDA $version is not in the module cache"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r "$modcache/github.com/kedacore/keda/v2@$version/." "$dir"
	chmod -R u+w "$dir"
	(cd "$dir" && git init -q && git add -A -f && git -c user.name=advisory -c user.email=advisory@invalid commit -qm "KEDA $version" --no-verify) ||
		fail "git init of the copy"
}

case "${1:-}" in
write)
	out=${2:-}
	[ -n "$out" ] || fail "usage: hack/advisory.sh write DIR"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	copy_keda "$tmp/keda" >/dev/null
	(cd "$tmp/keda" && git apply --check "$patch") || fail "the patch does not apply to KEDA $version"
	mkdir -p "$out"
	cp "$patch" "$out/"
	sed "s/@@KEDA_VERSION@@/$version/g" "$template" >"$out/SECURITY_REPORT.md"
	! grep -q '@@[A-Z_]*@@' "$out/SECURITY_REPORT.md" || fail "SECURITY_REPORT.md still has placeholders"
	echo "advisory for KEDA $version: $out/SECURITY_REPORT.md, $out/${patch##*/} (applies with git apply)"
	;;
check)
	step "clean copy of KEDA $version in $scratch"
	copy_keda "$scratch"
	step "git apply ${patch#"$src"/}"
	(cd "$scratch" && git apply "$patch" && git diff --stat)
	step "go build $build"
	# shellcheck disable=SC2086 # $build is a list of packages
	(cd "$scratch" && go build $build) || fail "go build failed"
	step "go test ./pkg/scalers/ -run CosmosDB"
	(cd "$scratch" && go test -count=1 -run CosmosDB ./pkg/scalers/) || fail "KEDA's CosmosDB tests fail with the patch"
	(cd "$scratch" && go test -count=1 -v -run 'TestCosmosDBCredentialDestinations' ./pkg/scalers/ | grep -E '^\s*--- (PASS|FAIL)') || true
	echo "the patch applies to KEDA $version, builds, and its tests and KEDA's own CosmosDB tests pass"
	;;
before)
	step "clean copy of KEDA $version in $scratch, the patch's test file only"
	copy_keda "$scratch"
	(cd "$scratch" && git apply --include=pkg/scalers/azure_cosmosdb_scaler_test.go "$patch")
	step "go test ./pkg/scalers/ -run TestCosmosDBCredentialDestinations (must fail on the released scaler)"
	if (cd "$scratch" && go test -count=1 -v -run TestCosmosDBCredentialDestinations ./pkg/scalers/) >"$scratch/before.log" 2>&1; then
		cat "$scratch/before.log"
		fail "TestCosmosDBCredentialDestinations passes without the fix: it shows nothing"
	fi
	grep -E '^\s*--- (PASS|FAIL)|scaler built' "$scratch/before.log" || true
	echo "without the fix the test fails as above (full log: $scratch/before.log)"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
