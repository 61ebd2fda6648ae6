#!/usr/bin/env bash
# The pull requests KEDA gets: small edits of KEDA v2.21.0's own azure-cosmosdb
# scaler (pkg/scalers/azure_cosmosdb_scaler.go and its test file), one after
# the other, in the order of hack/pr/stack/series; one of them (08-e2e-suites)
# edits KEDA's two e2e suites of the trigger instead.
#
#   hack/pr/stack.sh apply DIR      a clean copy of KEDA v2.21.0 in DIR (a git
#                                   repository), each pull request's change.patch
#                                   applied and committed in order, with its
#                                   commit.txt as message and AUTHOR as author
#   hack/pr/stack.sh verify DIR     each pull request's head in DIR: go build of
#                                   ./pkg/scalers/... ./cmd/..., go vet and KEDA's
#                                   golangci-lint of ./pkg/scalers/ with KEDA's .golangci.yml
#                                   (INTREE_LINT, else the one make intree installed under
#                                   ~/.cache/keda-cosmosdb-intree/bin), go test of
#                                   every test of the scaler's test file (-run CosmosDB
#                                   leaves out v2.21.0's TestExtractLSNFromSessionToken and
#                                   TestExtractItemLSN, so they are named too); its added production lines (non-test
#                                   Go) at most 300; every test function of v2.21.0's
#                                   azure_cosmosdb_scaler_test.go still defined, and
#                                   changed only where its changed-tests file names it;
#                                   go vet -tags e2e of the two e2e suites
#                                   (tests/scalers/azure/azure_cosmosdb and
#                                   azure_cosmosdb_aad_wi: compiled, never run here, as
#                                   they need a cluster and an Azure account), every
#                                   function of v2.21.0's two suite files still defined,
#                                   and golangci-lint of them (--build-tags e2e) where
#                                   the pull request changes them
#   hack/pr/stack.sh save DIR       write each commit of DIR after the base (HEAD's
#                                   history, in order: the series, then spec-behaviours)
#                                   back to its change.patch, and tag it with its name
#                                   again (edit the stack in DIR with git rebase -i, then
#                                   save; a rebase moves commits, not tags)
#   hack/pr/stack.sh write DIR OUT  OUT/NN-name/: the pull request's git format-patch
#                                   and PULL_REQUEST.md; OUT/ISSUE.md
#
# After the last pull request, apply, verify and save also take
# hack/pr/spec-behaviours: the two behaviours of this scaler's specification
# that KEDA decided otherwise (ISSUE.md asks about both), as one commit on the
# stack's head, tagged spec-behaviours. verify checks it as it checks a pull
# request (its changed-tests names the tests of v2.21.0 it changes); write
# never writes it: it stays in this repository.
#
# Each pull request is a directory hack/pr/stack/NN-name with change.patch (a
# git diff in KEDA's paths against the pull request before it), commit.txt (its
# commit message: the first line is the subject), PULL_REQUEST.md.tmpl and, when
# it changes tests of v2.21.0 on purpose, changed-tests (one test function name a
# line; PULL_REQUEST.md says why). The first one's change.patch is the private
# advisory's patch (hack/advisory): the stack's first pull request is the
# security fix, opened when KEDA publishes the advisory.
#
# Environment:
#   AUTHOR          "Name <email>": author, committer and Signed-off-by of every
#                   commit (apply); default git config user.name/user.email
#   KEDA_VERSION    the release the stack starts from (default v2.21.0)
#   STACK_HEADS     verify only these heads, by number or name ("1 3",
#                   "spec-behaviours"; default all)
#   STACK_CHECK_ONLY 1: apply commits as a fixed local identity instead of
#                   AUTHOR's (a copy that is checked, never written: make intree)
#   STACK_LINT      0: verify without golangci-lint (run it apart, on each head)
#   STACK_BUILD     the packages go build builds at each head (default
#                   ./pkg/scalers/... ./cmd/...)
#   INTREE_LINT     KEDA's pinned golangci-lint; default the one make intree
#                   installed under ${XDG_CACHE_HOME:-~/.cache}/keda-cosmosdb-intree
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
stack=$src/hack/pr/stack
version=${KEDA_VERSION:-v2.21.0}
limit_prod=300

fail() { echo "stack.sh: $*" >&2; exit 1; }
step() { echo "==> $*"; }

# series: the pull requests' directory names, in order.
series() { grep -v '^#' "$stack/series" | awk 'NF { print $1 }'; }

# The specification's diff on the stack's head (kept here, never sent).
spec=spec-behaviours
spec_dir=$src/hack/pr/$spec

# heads: the series, then the specification's diff.
heads() { series; echo "$spec"; }

# pr_dir NAME: the directory of a pull request or of the specification's diff.
pr_dir() { if [ "$1" = "$spec" ]; then echo "$spec_dir"; else echo "$stack/$1"; fi; }

# author: the series' person, checked as make intree-patch checks it
# (hack/intree.sh author refuses placeholders).
# STACK_CHECK_ONLY=1 (make intree's copy, never written): a fixed local identity.
author() {
	if [ "${STACK_CHECK_ONLY:-0}" = 1 ]; then
		echo "stack check <stack-check@keda.invalid>"
		return
	fi
	INTREE_AUTHOR=${AUTHOR:-} "$src/hack/intree.sh" author
}

# func_body NAME: the text of top-level function NAME in the Go source on stdin.
func_body() { awk -v name="$1" '$0 ~ "^func " name "\\(" { on = 1 } on { print } on && /^}/ { exit }'; }

# test_functions FILE: the test functions a test file defines, one a line.
test_functions() { grep -oE '^func (Test|Fuzz|Example)[A-Za-z0-9_]*' "$1" | sed 's/^func //' | sort; }

# top_functions FILE: the top-level functions a Go file defines, one a line.
top_functions() { grep -oE '^func [A-Za-z0-9_]+' "$1" | sed 's/^func //' | sort; }

# The e2e suites of the trigger in KEDA's tree, and their packages.
e2e_suites="tests/scalers/azure/azure_cosmosdb/azure_cosmosdb_test.go tests/scalers/azure/azure_cosmosdb_aad_wi/azure_cosmosdb_aad_wi_test.go"
e2e_pkgs="./tests/scalers/azure/azure_cosmosdb/... ./tests/scalers/azure/azure_cosmosdb_aad_wi/..."

case "${1:-}" in
apply)
	dir=${2:?usage: hack/pr/stack.sh apply DIR}
	who=$(author)
	modcache=$(cd "$src" && go env GOMODCACHE)
	(cd "$src" && go mod download "github.com/kedacore/keda/v2@$version")
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r "$modcache/github.com/kedacore/keda/v2@$version/." "$dir"
	chmod -R u+w "$dir"
	cd "$dir"
	git init -q
	git add -A -f
	git -c user.name=base -c user.email=base@invalid commit -qm "KEDA $version" --no-verify
	git tag base
	for pr in $(heads); do
		git apply --index "$(pr_dir "$pr")/change.patch" || fail "$pr: change.patch does not apply on the pull request before it"
		name=${who% <*}
		email=${who##*<}
		email=${email%>}
		{ cat "$(pr_dir "$pr")/commit.txt"; printf '\nSigned-off-by: %s\n' "$who"; } |
			GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email git commit -q --no-verify -F -
		git tag -f "$pr" >/dev/null
		echo "$pr: $(git diff --shortstat HEAD~1)"
	done
	;;
verify)
	dir=${2:?usage: hack/pr/stack.sh verify DIR}
	cd "$dir"
	lint=${INTREE_LINT:-}
	if [ -z "$lint" ]; then
		lint=${XDG_CACHE_HOME:-$HOME/.cache}/keda-cosmosdb-intree/bin/golangci-lint
		[ -x "$lint" ] || lint=
	fi
	base_tests=$(git show base:pkg/scalers/azure_cosmosdb_scaler_test.go | test_functions /dev/stdin)
	declare -A base_e2e
	for f in $e2e_suites; do
		base_e2e[$f]=$(git show "base:$f" | top_functions /dev/stdin)
	done
	n=0
	bad=0
	for pr in $(heads); do
		n=$((n + 1))
		if [ -n "${STACK_HEADS:-}" ] && ! [[ " $STACK_HEADS " == *" $n "* || " $STACK_HEADS " == *" $pr "* ]]; then
			continue
		fi
		step "$pr"
		git checkout -q "$pr"
		prod=$(git diff --numstat "$pr~1" "$pr" -- '*.go' ':!*_test.go' | awk '{ s += $1 } END { print s + 0 }')
		echo "   added production lines: $prod (limit $limit_prod); $(git diff --shortstat "$pr~1" "$pr")"
		[ "$prod" -le "$limit_prod" ] || { echo "   over the limit" >&2; bad=1; }
		changed=$(cat "$(pr_dir "$pr")/changed-tests" 2>/dev/null || true)
		now=$(test_functions pkg/scalers/azure_cosmosdb_scaler_test.go)
		for t in $base_tests; do
			grep -qx "$t" <<<"$now" || { echo "   v2.21.0's $t is no longer defined" >&2; bad=1; }
		done
		for t in $base_tests; do
			if [ "$(git show "$pr~1:pkg/scalers/azure_cosmosdb_scaler_test.go" | func_body "$t")" != "$(func_body "$t" <pkg/scalers/azure_cosmosdb_scaler_test.go)" ] &&
				! grep -qx "$t" <<<"$changed"; then
				echo "   changes v2.21.0's $t, which its changed-tests does not name" >&2
				bad=1
			fi
		done
		for f in $e2e_suites; do
			now=$(top_functions "$f")
			for fn in ${base_e2e[$f]}; do
				grep -qx "$fn" <<<"$now" || { echo "   v2.21.0's $f defines $fn, which is no longer defined" >&2; bad=1; }
			done
		done
		e2e_changed=0
		# shellcheck disable=SC2086 # a list of files
		git diff --quiet "$pr~1" "$pr" -- $e2e_suites || e2e_changed=1
		# shellcheck disable=SC2086 # a list of packages
		go build ${STACK_BUILD:-./pkg/scalers/... ./cmd/...} || { echo "   go build failed" >&2; bad=1; continue; }
		go vet ./pkg/scalers/ || bad=1
		# shellcheck disable=SC2086 # a list of packages
		go vet -tags e2e $e2e_pkgs || { echo "   go vet -tags e2e of the e2e suites failed" >&2; bad=1; }
		echo "   e2e suites: vetted (-tags e2e); not run (they need a cluster and an Azure account)"
		if [ "${STACK_LINT:-1}" = 0 ]; then
			echo "   golangci-lint: not run here (STACK_LINT=0)"
		elif [ -n "$lint" ]; then
			"$lint" run --allow-serial-runners --timeout 20m ./pkg/scalers/ || { echo "   golangci-lint found problems" >&2; bad=1; }
			if [ "$e2e_changed" = 1 ]; then
				# shellcheck disable=SC2086 # a list of packages
				"$lint" run --allow-serial-runners --timeout 20m --build-tags e2e $e2e_pkgs || { echo "   golangci-lint found problems in the e2e suites" >&2; bad=1; }
			fi
		else
			echo "   golangci-lint: not installed (make intree installs KEDA's pinned one); skipped" >&2
			bad=1
		fi
		go test -count=1 -run 'CosmosDB|TestExtractLSNFromSessionToken|TestExtractItemLSN' ./pkg/scalers/ || { echo "   go test of the scaler's tests failed" >&2; bad=1; }
	done
	git checkout -q "$spec"
	[ "$bad" = 0 ] || fail "a pull request's head failed a check (above)"
	echo "every head checked builds, vets (the e2e suites with -tags e2e), lints (unless STACK_LINT=0) and passes the scaler's tests"
	;;
save)
	dir=${2:?usage: hack/pr/stack.sh save DIR}
	cd "$dir"
	# The commits after base, in order, are the heads in order (a rebase
	# moves them but not their tags): each is tagged again, then saved.
	mapfile -t names < <(heads)
	mapfile -t commits < <(git rev-list --reverse base..HEAD)
	[ "${#commits[@]}" = "${#names[@]}" ] || fail "$dir has ${#commits[@]} commits after base, the series and $spec ${#names[@]}"
	prev=base
	for i in "${!names[@]}"; do
		pr=${names[i]}
		git tag -f "$pr" "${commits[i]}" >/dev/null
		git diff --no-color --no-ext-diff "$prev" "$pr" >"$(pr_dir "$pr")/change.patch"
		prev=$pr
	done
	cp "$stack/$(series | head -n 1)/change.patch" "$src/hack/advisory/keda-$version-azure-cosmosdb.patch"
	echo "saved $(heads | wc -l) change.patch files (the last, hack/pr/$spec's) and the advisory's patch"
	;;
write)
	dir=${2:?usage: hack/pr/stack.sh write DIR OUT}
	out=${3:?usage: hack/pr/stack.sh write DIR OUT}
	mkdir -p "$out"
	prev=base
	n=0
	total=$(series | wc -l)
	for pr in $(series); do
		n=$((n + 1))
		mkdir -p "$out/$pr"
		git -C "$dir" format-patch -q -o "$(cd "$out/$pr" && pwd)" "$prev..$pr"
		sed -e "s/@@N@@/$n/g" -e "s/@@PREV@@/$((n - 1))/g" -e "s/@@TOTAL@@/$total/g" -e "s/@@KEDA_VERSION@@/$version/g" \
			-e "s/@@SIZE@@/$(git -C "$dir" diff --shortstat "$prev" "$pr" | sed 's/^ //')/" \
			"$stack/$pr/PULL_REQUEST.md.tmpl" >"$out/$pr/PULL_REQUEST.md"
		! grep -qE '@@[A-Z_]+@@|TODO' "$out/$pr/PULL_REQUEST.md" || fail "$pr: PULL_REQUEST.md has a placeholder or TODO left"
		prev=$pr
	done
	sed -e "s/@@KEDA_VERSION@@/$version/g" -e "s/@@TOTAL@@/$total/g" "$stack/ISSUE.md.tmpl" >"$out/ISSUE.md"
	! grep -qE '@@[A-Z_]+@@|TODO' "$out/ISSUE.md" || fail "ISSUE.md has a placeholder or TODO left"
	echo "wrote $total pull requests and ISSUE.md to $out"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
