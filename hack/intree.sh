#!/usr/bin/env bash
# Drops this repository's azure-cosmosdb scaler into a fresh copy of KEDA's
# source and proves it builds, lints and passes its tests there; or, through
# hack/pr/stack.sh, writes the stack of pull requests KEDA would get.
#
#   hack/intree.sh          copy, replace; go vet; build operator + adapter; KEDA's
#                           pinned golangci-lint with KEDA's .golangci.yml on the
#                           packages we touch; our unit tests; all of KEDA's tests of
#                           those packages beside ours; go vet -tags e2e of the suites;
#                           then hack/pr/spec-behaviours, the specification's diff, on
#                           the stack's head in another copy (INTREE_DIR.spec): build,
#                           vet, golangci-lint and the scaler's tests; INTREE_SPEC=0
#                           leaves it out (make intree)
#   hack/intree.sh patch    with PATCH_DIR (make intree-patch): the contribution, the
#                           stack of small edits of KEDA's own scaler that
#                           hack/pr/stack.sh applies to a fresh copy of KEDA
#                           (INTREE_DIR.stack), checks at each head (INTREE_VERIFY=build,
#                           the default) and writes into PATCH_DIR (one folder per pull
#                           request, its git format-patch and PULL_REQUEST.md; ISSUE.md),
#                           then the private advisory (hack/advisory.sh write
#                           PATCH_DIR/advisory);
#                           with PATCH alone and INTREE_SERIES=single (hack/e2e-local.sh):
#                           copy and replace as make intree does, commit this
#                           repository's in-tree files as one commit on KEDA, write it
#                           to PATCH and git am it onto another fresh copy of KEDA;
#                           with neither, refused
#   hack/intree.sh author   check the series' author (INTREE_AUTHOR, else git config) as
#                           make intree-patch does, print it, and exit
#   hack/intree.sh list     print the files that go in-tree, one per line, and check
#                           the layout (no KEDA, no compiling; tests/repo runs it)
#
# What goes in-tree (make intree, and patch with PATCH): the same paths in
# KEDA's tree as here, selected by name.
#   pkg/scalers/azure_cosmosdb_scaler.go, pkg/scalers/azure_cosmosdb_scaler_test.go
#   pkg/scalers/azure/azure_cosmosdb_*.go           flat files of KEDA's package azure
#                                                   (not *_bench_test.go)
#   tests/scalers/azure/azure_cosmosdb/,            KEDA's two e2e suites (build tag e2e),
#   tests/scalers/azure/azure_cosmosdb_aad_wi/      every file in them
#   tests/scalers/azure/helper/CosmosDBHelper.go    beside KEDA's other Azure e2e helpers
# Everything else stays home and is never named by a copied file:
# pkg/scalers/keda_adapter.go and pkg/scalers/azure/keda_adapter.go (stand-ins for
# names KEDA's scalers and azure packages already have),
# pkg/scalers/cosmoslag_*.go and pkg/scalers/azure/cosmoslag_*.go
# (what the commands read of the scaler), the benchmarks (*_bench_test.go: their
# figures live in BENCHMARKS.md), pkg/cosmostest (the emulator), tests/emulator,
# tests/local, tests/sdk, cmd.
#
# The transformation is a copy plus an import path rewrite, nothing else:
#   github.com/kedacore/keda-cosmosdb-scaler/pkg/...   -> github.com/kedacore/keda/v2/pkg/...
#   github.com/kedacore/keda-cosmosdb-scaler/tests/... -> github.com/kedacore/keda/v2/tests/...
# (gofmt then re-sorts the import blocks whose paths changed). KEDA's own
# azure-cosmosdb scaler, its unit test and its e2e suites are deleted unread;
# ours take their place. A copied file that imports or names what stays home
# (the emulator, cosmoslag, tests/local, tests/sdk, BENCHMARKS.md, a stand-in
# file), or that would need a requirement KEDA's go.mod does not have, fails
# the run.
#
# The stack: KEDA takes one pull request at a time, each an edit of its own
# scaler (08-e2e-suites: of its two e2e suites of the trigger); hack/pr/stack.sh and
# hack/pr/stack/series say how it is kept. Its rules live there and in
# tests/repo, not here: hack/pr/stack.sh verify holds every pull request, the
# first included, to at most 300 added production lines (non-test Go);
# hack/pr/stack.sh write fills each PULL_REQUEST.md from its
# hack/pr/stack/NAME/PULL_REQUEST.md.tmpl and ISSUE.md from
# hack/pr/stack/ISSUE.md.tmpl, and a placeholder or TODO left in one fails the
# run; go test ./tests/repo checks the texts (the first pull request's
# PULL_REQUEST.md.tmpl at most 80 lines) and that docs/azure-cosmosdb.md would
# make a keda-docs page of at most 300 lines. No keda-docs patch is written.
# The private advisory (hack/advisory.sh write PATCH_DIR/advisory) is for
# KEDA's maintainers, never public.

# Environment:
#   KEDA_VERSION        KEDA release to drop into (default v2.21.0)
#   INTREE_DIR          scratch copy, recreated on every run
#                       (default /tmp/keda-intree, or /tmp/keda-intree-patch for "patch";
#                       with PATCH_DIR, hack/pr/stack.sh's copy is INTREE_DIR.stack)
#   INTREE_REF          git ref of this repository to take our files from (default: the
#                       working tree; not read with PATCH_DIR: hack/pr/stack.sh and
#                       hack/advisory.sh read the working tree)
# Of make intree's checks (check; patch with PATCH and INTREE_VERIFY=build):
#   INTREE_RUN          go test -run pattern for our unit tests (default: exactly the
#                       Test, Fuzz and Example functions of our copied test files)
#   INTREE_TESTFLAGS    extra go test flags, e.g. -race
#   INTREE_FULL         1 (default): also run all of KEDA's tests of pkg/scalers and
#                       pkg/scalers/azure with our test files in those packages, to catch
#                       shared-state collisions; 0 to skip
#   INTREE_CACHE        where golangci-lint is installed and reused
#                       (default ${XDG_CACHE_HOME:-~/.cache}/keda-cosmosdb-intree)
#   INTREE_LINT         a golangci-lint binary to use instead of installing one; it must
#                       be the version KEDA's Makefile pins (GOLANGCI_VERSION);
#                       hack/pr/stack.sh verify reads it too
#   INTREE_LINT_ALL     1: lint all of KEDA (./..., as KEDA's make golangci does) instead of
#                       the packages we touch; findings in KEDA's untouched files that the
#                       release has too are reported, not counted
# For "patch":
#   PATCH_DIR           directory for the pull requests (make intree-patch's default:
#                       /tmp/keda-pr); emptied first if an earlier run made it, refused
#                       if it holds anything else. With it, PATCH and INTREE_SERIES are
#                       not read.
#   PATCH               without PATCH_DIR: the file the one commit is written to, an mbox
#                       that git am applies (relative to the directory the script was
#                       started from); needs INTREE_SERIES=single. hack/e2e-local.sh uses
#                       this form.
#   INTREE_AUTHOR       "Name <email>" (make intree-patch AUTHOR="Name <email>"): the
#                       person who authors, commits and signs off (Signed-off-by) every
#                       commit of the series; default: this repository's git config
#                       user.name and user.email. Checked before anything else: a missing
#                       identity is refused, and with PATCH_DIR a placeholder too (a name
#                       such as "Your Name" or "TODO"; an address at example.com,
#                       example.org, *.example, *.invalid, *.test, localhost ...), as
#                       KEDA's DCO check needs the sender's real one; hack/intree.sh author
#                       runs that check alone. The scratch commit of KEDA's release that
#                       the series is based on is not part of the series.
#   INTREE_SERIES       single: required with PATCH (the in-tree files as one commit);
#                       split, the default, is refused there: the stack is PATCH_DIR's
#   INTREE_VERIFY       with PATCH_DIR: build (the default) runs hack/pr/stack.sh verify
#                       on each pull request's head, any other value leaves it out; with
#                       PATCH: am (the default) checks that git am applies the file to a
#                       fresh copy of KEDA and makes the patched tree, every commit
#                       signed off by the author; build also gives the commit git am made
#                       make intree's checks (go vet, the operator and adapter built,
#                       golangci-lint, our and KEDA's tests of the packages, go vet -tags
#                       e2e)
#   INTREE_HEADS        the pull requests whose heads INTREE_VERIFY=build checks, by
#                       number ("1 8"; default all; hack/pr/stack.sh's STACK_HEADS); with
#                       PATCH the one commit is pull request 1
# The Go build cache is shared with the rest of the machine, so re-runs only
# recompile what changed.
set -uo pipefail

# The whole script is one compound command: bash parses it completely before
# running it, so editing this file while a long run is in progress is safe.
{

mode=${1:-check}
case "$mode" in
check | patch | list | author) ;;
*)
	echo "usage: $0 [check|patch|list|author]" >&2
	exit 2
	;;
esac

start_dir=$(pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keda_version=${KEDA_VERSION:-v2.21.0}
keda_module=github.com/kedacore/keda/v2
our_module=$(sed -n 's/^module[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$repo/go.mod" | head -n 1)
[ -n "$our_module" ] || {
	echo "no module line in $repo/go.mod" >&2
	exit 1
}

# What stays home: no copied file may import or name it.
home_only='cosmoslag|cosmostest|tests/emulator|tests/local|tests/sdk|BENCHMARKS\.md|keda_adapter'

# select_files SRC: the in-tree files of the tree at SRC, repository-relative,
# one per line, sorted. Fails (with the reasons on stderr) when the layout lacks
# a piece the pull request needs.
select_files() {
	local s=$1 f d bad=0 n_azure=0 n_tests=0
	{
		for f in pkg/scalers/azure_cosmosdb_scaler.go pkg/scalers/azure_cosmosdb_scaler_test.go; do
			if [ -f "$s/$f" ]; then echo "$f"; else
				echo "in-tree layout: $f is missing" >&2
				bad=1
			fi
		done
		for f in "$s"/pkg/scalers/azure/azure_cosmosdb_*.go; do
			[ -f "$f" ] || continue
			case "$f" in *_bench_test.go) continue ;; esac
			echo "pkg/scalers/azure/${f##*/}"
			case "$f" in *_test.go) ;; *) n_azure=$((n_azure + 1)) ;; esac
		done
		if [ "$n_azure" -eq 0 ]; then
			echo "in-tree layout: no pkg/scalers/azure/azure_cosmosdb_*.go (non-test) file" >&2
			bad=1
		fi
		for d in tests/scalers/azure/azure_cosmosdb tests/scalers/azure/azure_cosmosdb_aad_wi; do
			n_tests=0
			if [ -d "$s/$d" ]; then
				while IFS= read -r f; do
					echo "$f"
					case "$f" in *.go) n_tests=$((n_tests + 1)) ;; esac
				done < <(cd "$s" && find "$d" -type f | LC_ALL=C sort)
			fi
			if [ "$n_tests" -eq 0 ]; then
				echo "in-tree layout: no e2e suite in $d/ (a .go file)" >&2
				bad=1
			fi
		done
		f=tests/scalers/azure/helper/CosmosDBHelper.go
		if [ -f "$s/$f" ]; then echo "$f"; else
			echo "in-tree layout: $f is missing" >&2
			bad=1
		fi
		return $bad
	} | LC_ALL=C sort
	local ps=("${PIPESTATUS[@]}")
	return "${ps[0]}"
}

# check_sources SRC FILE...: what a copied file must not contain, before any
# rewriting: references to what stays home, and what KEDA's pre-commit hooks
# reject (trailing whitespace, a missing final newline, CRLF line endings,
# private keys, the words its language hook denies). Prints file:line: reason.
check_sources() {
	local s=$1 f
	shift
	for f in "$@"; do
		grep -n -i -E "$home_only" "$s/$f" | sed "s#^#$f:#; s#\$#   (names what stays in this repository)#"
		grep -n -E '[[:space:]]+$' "$s/$f" | cut -c1-120 | sed "s#^#$f:#; s#\$#   (trailing whitespace)#"
		grep -n $'\r' "$s/$f" | cut -d: -f1 | sed "s#^#$f:#; s#\$#: (CRLF line ending)#"
		grep -n -E 'BEGIN ((RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY' "$s/$f" | cut -c1-120 | sed "s#^#$f:#; s#\$#   (private key)#"
		grep -n -i -E '(black|white)[_-]?(list|List)' "$s/$f" | cut -c1-120 | sed "s#^#$f:#; s#\$#   (KEDA's language-matters hook)#"
		if [ -s "$s/$f" ] && [ -n "$(tail -c 1 "$s/$f")" ]; then echo "$f: no newline at the end of the file"; fi
		if [ "$(tail -c 2 "$s/$f" | od -An -c | tr -d ' ')" = '\n\n' ]; then echo "$f: blank line at the end of the file"; fi
	done
}

# The source tree: the working tree, or INTREE_REF's.
src=$repo
src_tmp=""
if [ -n "${INTREE_REF:-}" ]; then
	src_tmp=$(mktemp -d)
	src=$src_tmp
	(cd "$repo" && git archive "$INTREE_REF") | tar -x -C "$src" || {
		echo "git archive $INTREE_REF failed" >&2
		exit 1
	}
fi

# author_identity STRICT: sets author_name and author_email, the person who
# authors, commits and signs off (Signed-off-by, KEDA's DCO check) every commit
# of the series: INTREE_AUTHOR ("Name <email>", what make intree-patch
# AUTHOR=... passes), else this repository's git config user.name and
# user.email. Returns 1, with the reason on stderr, when there is no such
# identity; with STRICT=1 (the pull request), also when it is a placeholder:
# a name like "Your Name" or "TODO", or an address at a domain reserved for
# examples and tests (example.com, example.org, example.net, *.example,
# *.invalid, *.test, localhost, *.localhost, *.localdomain).
author_identity() {
	local strict=$1 source domain
	if [ -n "${INTREE_AUTHOR:-}" ]; then
		source="AUTHOR=\"$INTREE_AUTHOR\""
		if [[ "$INTREE_AUTHOR" =~ ^[[:space:]]*([^\<\>]*[^\<\>[:space:]])[[:space:]]*\<([^\<\>[:space:]]+)\>[[:space:]]*$ ]]; then
			author_name=${BASH_REMATCH[1]}
			author_email=${BASH_REMATCH[2]}
		else
			echo "$source is not of the form \"Name <email>\"" >&2
			return 1
		fi
	else
		source="git config user.name/user.email"
		author_name=$(cd "$repo" && git config user.name)
		author_email=$(cd "$repo" && git config user.email)
	fi
	local fix="give the person who sends the pull request: make intree-patch AUTHOR=\"Name <email>\" (or git config user.name and user.email)"
	if [ -z "$author_name" ] || [ -z "$author_email" ]; then
		echo "no author: $source gives no name or no e-mail address; $fix" >&2
		return 1
	fi
	case "$author_email" in
	*[[:space:]\<\>]* | @* | *@ | *@*@*) ;;
	?*@?*.?*) domain=$(echo "${author_email##*@}" | tr 'A-Z' 'a-z') ;;
	esac
	if [ -z "${domain:-}" ]; then
		echo "author address '$author_email' ($source) is not an e-mail address; $fix" >&2
		return 1
	fi
	[ "$strict" = 1 ] || return 0
	case "$domain" in
	example.com | example.org | example.net | *.example.com | *.example.org | *.example.net | example | *.example | invalid | *.invalid | test | *.test | localhost | *.localhost | localhost.* | *.localdomain | localdomain)
		echo "author address '$author_email' ($source) is a placeholder: $domain is reserved for examples and tests, and KEDA's DCO check needs the sender's real address; $fix" >&2
		return 1
		;;
	esac
	case "$(echo "$author_name" | tr 'A-Z' 'a-z' | tr -s ' ')" in
	"your name" | "your full name" | "name" | "full name" | "first last" | "firstname lastname" | "john doe" | "jane doe" | todo* | fixme* | tbd | xxx* | "author" | "author name" | "unknown" | "nobody" | "root" | "user" | "keda"*)
		echo "author name '$author_name' ($source) is a placeholder, not a person; $fix" >&2
		return 1
		;;
	esac
	return 0
}

if [ "$mode" = author ]; then
	# The identity check alone (tests/repo runs it): the pull request's rules.
	author_identity 1 || exit 1
	echo "$author_name <$author_email>"
	exit 0
fi

if [ "$mode" = list ]; then
	files=$(select_files "$src")
	status=$?
	[ -n "$files" ] && echo "$files"
	[ -n "$src_tmp" ] && rm -rf "$src_tmp"
	exit $status
fi

if [ "$mode" = patch ]; then
	scratch=${INTREE_DIR:-/tmp/keda-intree-patch}
	# The series is authored, committed and signed off by a person; checked
	# first, before any work. The pull request (PATCH_DIR) refuses placeholders;
	# a PATCH file alone (hack/e2e-local.sh; never sent) takes git's identity as
	# it is configured.
	strict_author=1
	[ -z "${PATCH_DIR:-}" ] && [ -n "${PATCH:-}" ] && strict_author=0
	author_identity "$strict_author" || {
		[ -n "$src_tmp" ] && rm -rf "$src_tmp"
		exit 1
	}
	if [ -n "${PATCH_DIR:-}" ]; then
		# The contribution: the stack of small edits of KEDA's own scaler
		# (hack/pr/stack.sh), each head checked, then the private advisory.
		case "$PATCH_DIR" in /*) out=$PATCH_DIR ;; *) out=$start_dir/$PATCH_DIR ;; esac
		if [ -e "$out" ] && [ ! -e "$out/.intree-pr" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
			echo "$out is not empty and was not made by $0; choose another PATCH_DIR" >&2
			exit 1
		fi
		rm -rf "$out" && mkdir -p "$out" && touch "$out/.intree-pr" || exit 1
		export AUTHOR="$author_name <$author_email>"
		"$repo/hack/pr/stack.sh" apply "$scratch.stack" || exit 1
		if [ "${INTREE_VERIFY:-build}" = build ]; then
			STACK_HEADS=${INTREE_HEADS:-} "$repo/hack/pr/stack.sh" verify "$scratch.stack" || exit 1
		fi
		"$repo/hack/pr/stack.sh" write "$scratch.stack" "$out" || exit 1
		"$repo/hack/advisory.sh" write "$out/advisory" || exit 1
		echo "in-tree patch: OK (pull requests and ISSUE.md in $out, the private advisory in $out/advisory)"
		exit 0
	fi
else
	scratch=${INTREE_DIR:-/tmp/keda-intree}
fi
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$start_dir/$1" ;; esac }
patch_file=""
if [ "$mode" = patch ]; then
	if [ -z "${PATCH:-}" ]; then
		echo "patch takes PATCH_DIR (the stack: make intree-patch, hack/pr/stack.sh) or PATCH with INTREE_SERIES=single (the in-tree files as one commit: hack/e2e-local.sh)" >&2
		exit 2
	fi
	patch_file=$(absolute "$PATCH")
fi
verify=${INTREE_VERIFY:-am}
case "$verify" in build | am) ;; *)
	echo "INTREE_VERIFY is build or am, not $verify" >&2
	exit 2
	;;
esac
series=${INTREE_SERIES:-split}
case "$series" in split | single) ;; *)
	echo "INTREE_SERIES is split or single, not $series" >&2
	exit 2
	;;
esac
if [ "$mode" = patch ] && [ "$series" != single ]; then
	echo "the stack is written with PATCH_DIR (make intree-patch; hack/pr/stack.sh); PATCH alone takes INTREE_SERIES=single" >&2
	exit 2
fi
cache=${INTREE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keda-cosmosdb-intree}

logdir=$scratch.logs
if [ -e "$logdir" ] && [ ! -e "$logdir/.intree-logs" ]; then
	echo "$logdir exists and was not made by $0; choose another INTREE_DIR" >&2
	exit 1
fi
rm -rf "$logdir" && mkdir -p "$logdir" && touch "$logdir/.intree-logs" || exit 1

script_start=$(date +%s)
step_name=""
step_start=0
deferred_failures=()

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
	[ -n "$src_tmp" ] && rm -rf "$src_tmp"
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

# Module check: every package our files import must come from a module KEDA's
# go.mod already requires; the patch adds no requirement (and no go.sum line).
list_errors() { # DIR TAGS PKG...
	local dir=$1 tags=$2
	shift 2
	local err status
	err=$(mktemp)
	(cd "$dir" && GOFLAGS=-mod=readonly go list -e -deps -test -tags "$tags" \
		-f '{{with .Error}}{{$.ImportPath}}: {{.Err}}{{end}}' "$@") 2>"$err" | grep -v '^$'
	status=${PIPESTATUS[0]}
	# Downloads are progress, not errors; anything else on stderr is one when go list fails.
	[ "$status" -eq 0 ] || grep -v '^go: downloading ' "$err"
	rm -f "$err"
	return 0
}
check_modules() { # LOGNAME TAGS PKG...
	local log=$logdir/modules-$1.log
	shift
	list_errors "$scratch" "$@" >"$log"
	if [ -s "$log" ]; then
		head -n 40 "$log" | sed 's/^/    | /' >&2
		if grep -q -E 'no required module provides|updates to go.mod needed|missing go.sum entry|implicitly required' "$log"; then
			grep -o -E 'no required module provides package [^;: ]*' "$log" | awk '{print $NF}' | sort -u |
				while IFS= read -r pkg; do
					echo "    needs a module KEDA's go.mod does not require: $pkg ($(cd "$repo" && go list -e -f '{{with .Module}}{{.Path}}@{{.Version}}{{end}}' "$pkg" 2>/dev/null))" >&2
				done
			fail "the patch would add a requirement to KEDA's go.mod (not allowed); use what KEDA $keda_version already requires"
		fi
		fail "packages do not load (log: $log)"
	fi
	if ! (cd "$scratch" && git diff --quiet HEAD -- go.mod go.sum); then
		(cd "$scratch" && git diff HEAD -- go.mod go.sum) | head -n 30 >&2
		fail "go.mod or go.sum changed"
	fi
	echo "    none beyond KEDA's go.mod"
}

# test_names FILE...: the Test, Fuzz and Example functions the files declare
# (TestMain is none of them).
test_names() {
	(cd "$scratch" && grep -h -o -E '^func (Test|Fuzz|Example)[A-Za-z0-9_]*\(' "$@") | sed 's/^func //; s/($//' | grep -v -x TestMain | LC_ALL=C sort -u
}

echo "in-tree $mode of $our_module in KEDA $keda_version"
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

if [ "$mode" = patch ]; then
	step "author of the series"
	echo "    author, committer and Signed-off-by of every commit: $author_name <$author_email>"
	done_step
fi

# fresh_copy DIR: DIR becomes a git repository holding KEDA's release as its
# only commit. Only ever deletes what an earlier run made.
fresh_copy() {
	local dir=$1
	if [ -e "$dir" ]; then
		grep -qs "^module $keda_module\$" "$dir/go.mod" ||
			fail "$dir exists and is not a scratch copy of KEDA; choose another INTREE_DIR"
		chmod -R u+w "$dir" 2>/dev/null
		rm -rf "$dir" || fail "cannot remove the old scratch tree $dir"
	fi
	mkdir -p "$(dirname "$dir")"
	cp -R "$keda_src" "$dir" || fail "copy"
	chmod -R u+w "$dir"
	(cd "$dir" && git init -q && git add -A -f &&
		git -c user.name="KEDA $keda_version" -c user.email=release@keda.invalid -c commit.gpgsign=false \
			commit -q -m "KEDA $keda_version") >"$logdir/git-base-${dir##*/}.log" 2>&1 ||
		fail "git init and commit of the release in $dir (log: $logdir/git-base-${dir##*/}.log)"
}

step "fresh copy into $scratch"
fresh_copy "$scratch"
base=$(cd "$scratch" && git rev-parse HEAD)
done_step

# --- 2. Our files in, KEDA's azure-cosmosdb out --------------------------------
step "replace KEDA's azure-cosmosdb scaler with ours"
if [ -n "${INTREE_REF:-}" ]; then
	echo "    our files from $INTREE_REF ($(cd "$repo" && git rev-parse --short "$INTREE_REF"))"
else
	echo "    our files from the working tree ($(cd "$repo" && git rev-parse --short HEAD)$(cd "$repo" && git diff --quiet HEAD -- pkg tests || echo ", with uncommitted changes"))"
fi
mapfile -t copied < <(select_files "$src" 2>"$logdir/select.log")
[ -s "$logdir/select.log" ] && {
	sed 's/^/    /' "$logdir/select.log" >&2
	fail "the in-tree layout is incomplete"
}
[ "${#copied[@]}" -gt 0 ] || fail "no in-tree files"

findings=$(check_sources "$src" "${copied[@]}")
if [ -n "$findings" ]; then
	echo "$findings" | sed 's/^/    /' >&2
	fail "copied files name what stays home or fail KEDA's pre-commit checks"
fi

# KEDA's files for this trigger, removed unread.
rm -f "$scratch"/pkg/scalers/azure_cosmosdb_*.go
rm -rf "$scratch"/tests/scalers/azure/azure_cosmosdb*
for f in "${copied[@]}"; do
	case "$f" in
	pkg/scalers/azure_cosmosdb_* | tests/scalers/azure/azure_cosmosdb*/*) ;;
	*) [ -e "$scratch/$f" ] && fail "$f would overwrite KEDA's file of that name" ;;
	esac
	mkdir -p "$(dirname "$scratch/$f")"
	cp "$src/$f" "$scratch/$f" || fail "copy $f"
done
# Stays home (listed so the boundary is seen on every run).
home=$(cd "$src" && {
	ls pkg/scalers/keda_adapter.go pkg/scalers/azure/keda_adapter.go pkg/scalers/cosmoslag_*.go pkg/scalers/azure/cosmoslag_*.go 2>/dev/null
	find pkg tests -name '*cosmosdb*_bench_test.go' 2>/dev/null
	find tests/scalers -mindepth 2 -maxdepth 2 -type d -name 'azure_cosmosdb*' ! -name azure_cosmosdb ! -name azure_cosmosdb_aad_wi 2>/dev/null
} | LC_ALL=C sort)
echo "    not copied (stays home): $(echo $home) pkg/cosmostest tests/emulator tests/local tests/sdk cmd"

# Import paths only.
for f in "${copied[@]}"; do
	case "$f" in *.go) ;; *) continue ;; esac
	sed -i \
		-e "s#\"$our_module/pkg/#\"$keda_module/pkg/#g" \
		-e "s#\"$our_module/tests/#\"$keda_module/tests/#g" \
		"$scratch/$f"
	if grep -q -F "$our_module" "$scratch/$f"; then
		grep -n -F "$our_module" "$scratch/$f" >&2
		fail "$f still refers to $our_module"
	fi
done
# gofmt only re-sorts import blocks whose paths changed.
mapfile -t gofiles < <(printf '%s\n' "${copied[@]}" | grep '\.go$')
unformatted=$(cd "$scratch" && gofmt -l "${gofiles[@]}")
if [ -n "$unformatted" ]; then
	echo "    gofmt re-sorted imports in:" $unformatted
	(cd "$scratch" && gofmt -w $unformatted)
fi
# No nested package, no internal/: every copied Go file is in one of the
# packages KEDA already has.
for f in "${gofiles[@]}"; do
	case "$(dirname "$f")" in
	pkg/scalers | pkg/scalers/azure | tests/scalers/azure/azure_cosmosdb | tests/scalers/azure/azure_cosmosdb_aad_wi | tests/scalers/azure/helper) ;;
	*) fail "$f is in a package KEDA's layout does not have" ;;
	esac
done
echo "    ${#copied[@]} files copied"
printf '%s\n' "${copied[@]}" | sed 's/^/      /'
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
# processorName is a required key whose value may be empty (empty selects the
# leases without a processor name prefix): the scaler refuses a trigger
# without it. The schema says "optional" of a key a trigger may leave out, so
# processorName must not carry it. The file is KEDA's generator's output from
# the keda struct tag, and KEDA's CI (make verify-scalers-schema) regenerates
# and compares it, so it is checked here, never edited: the tag is what to fix.
schema_processor=$(awk '
	/^ *- type: / { in_scaler = ($3 == "azure-cosmosdb"); in_param = 0; next }
	in_scaler && /^ *- name: / { in_param = ($3 == "processorName"); if (in_param) found = 1; next }
	in_scaler && in_param { print }
	END { if (!found) print "MISSING" }' "$scratch/schema/generated/scalers-schema.yaml")
if [ "$schema_processor" = MISSING ]; then
	fail "schema/generated/scalers-schema.yaml has no processorName for azure-cosmosdb"
elif echo "$schema_processor" | grep -q -E '^ *optional: *true *$'; then
	echo "    FAILED: schema/generated marks azure-cosmosdb's processorName optional, but the scaler refuses a trigger without it (an empty value is allowed); the generator reads the keda tag of ProcessorName in pkg/scalers/azure_cosmosdb_scaler.go: drop \"optional\" there (the run goes on and fails at the end)"
	deferred_failures+=("schema: processorName is marked optional; it is a required key that may be empty (the keda tag in pkg/scalers/azure_cosmosdb_scaler.go)")
else
	echo "    processorName: required (no \"optional\"), as the scaler requires the key"
fi
done_step

step "modules: our packages load from KEDA's go.mod alone"
check_modules unit "" ./pkg/scalers ./pkg/scalers/azure
check_modules e2e e2e ./tests/scalers/azure/azure_cosmosdb ./tests/scalers/azure/azure_cosmosdb_aad_wi ./tests/scalers/azure/helper
done_step

# Our packages, their test files, and KEDA's make golangci version.
pkgs="./pkg/scalers ./pkg/scalers/azure"
e2e_pkgs="./tests/scalers/azure/azure_cosmosdb ./tests/scalers/azure/azure_cosmosdb_aad_wi ./tests/scalers/azure/helper"
mapfile -t all_tests < <(printf '%s\n' "${copied[@]}" | grep -E '^pkg/.*_test\.go$')
our_tests=("${all_tests[@]}")

# check_tree: vet, build, KEDA's golangci-lint, our unit tests and KEDA's
# tests of the packages, in the KEDA tree at $scratch (the release commit is
# $base). make intree runs it on the copied tree; patch with PATCH and
# INTREE_VERIFY=build on the commit git am made (make intree-patch checks the
# stack with hack/pr/stack.sh verify instead). Our test files are those of
# $all_tests present there.
check_tree() {
	mapfile -t our_tests < <(cd "$scratch" && for f in "${all_tests[@]}"; do [ -f "$f" ] && echo "$f"; done)
	# --- 3. Build, lint and test in KEDA's tree -------------------------------------
	step "go vet ./pkg/scalers ./pkg/scalers/azure ./pkg/scaling (compiles with our files: no name collisions)"
	# shellcheck disable=SC2086
	run vet.log go vet $pkgs ./pkg/scaling
	done_step

	step "go build ./cmd/operator ./cmd/adapter"
	run build-cmd.log go build -o /dev/null ./cmd/operator
	run build-cmd-adapter.log go build -o /dev/null ./cmd/adapter
	done_step

	step "golangci-lint, the version KEDA's Makefile pins, with KEDA's .golangci.yml (build tag e2e)"
	lint_version=$(sed -n 's/^GOLANGCI_VERSION[[:space:]]*:\{0,1\}=[[:space:]]*\(v[0-9.]*\).*/\1/p' "$keda_src/Makefile" | head -n 1)
	[ -n "$lint_version" ] || fail "no GOLANGCI_VERSION in KEDA's Makefile"
	grep -q -E '^[[:space:]]*-[[:space:]]*e2e[[:space:]]*$' "$scratch/.golangci.yml" ||
		fail "KEDA's .golangci.yml no longer sets the e2e build tag; lint would skip the e2e suites"
	lint=${INTREE_LINT:-$cache/bin/golangci-lint}
	have=$("$lint" version --short 2>/dev/null)
	if [ "v${have#v}" != "$lint_version" ]; then
		[ -n "${INTREE_LINT:-}" ] && fail "INTREE_LINT=$INTREE_LINT is golangci-lint '${have:-?}', KEDA pins $lint_version"
		echo "    installing golangci-lint $lint_version into $cache/bin (once; a few CPU-minutes)"
		mkdir -p "$cache/bin"
		(cd "$cache" && GOBIN=$cache/bin GOFLAGS='' go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$lint_version") \
			>"$logdir/lint-install.log" 2>&1 || {
			tail -n 30 "$logdir/lint-install.log" >&2
			fail "go install golangci-lint@$lint_version"
		}
		have=$("$lint" version --short 2>/dev/null)
		[ "v${have#v}" = "$lint_version" ] || fail "installed golangci-lint reports version '$have', want $lint_version"
	fi
	echo "    $lint ($lint_version)"
	# Another run on this machine (another INTREE_DIR) holds golangci-lint's
	# lock: wait for it rather than fail.
	lint_flags=(run --allow-serial-runners --max-issues-per-linter 0 --max-same-issues 0 --output.text.print-issued-lines=false)
	if [ "${INTREE_LINT_ALL:-0}" = 1 ]; then
		lint_targets=(./...)
	else
		# shellcheck disable=SC2206
		lint_targets=($pkgs $e2e_pkgs)
	fi
	echo "    golangci-lint run ${lint_targets[*]}"
	(cd "$scratch" && "$lint" "${lint_flags[@]}" "${lint_targets[@]}") >"$logdir/lint.log" 2>&1
	lint_status=$?
	findings=$(grep -E '^[^ :]+\.go:[0-9]+(:[0-9]+)?: ' "$logdir/lint.log")
	ours=$(printf '%s\n' "$findings" | grep -F -f <(printf '%s:\n' "${copied[@]}") | grep -v '^$')
	theirs=$(printf '%s\n' "$findings" | grep -v -F -f <(printf '%s:\n' "${copied[@]}") | grep -v '^$')
	if [ -n "$theirs" ]; then
		# In KEDA's own files: ours only if the release does not have them too.
		echo "    findings in KEDA's files; linting the release itself to tell them apart"
		rm -rf "$scratch.base" && (cd "$scratch" && git worktree add -q --detach "$scratch.base" "$base") >"$logdir/lint-base.log" 2>&1 ||
			fail "git worktree for the release (log: $logdir/lint-base.log)"
		base_targets=()
		for t in "${lint_targets[@]}"; do [ -e "$scratch.base/${t%/...}" ] && base_targets+=("$t"); done
		(cd "$scratch.base" && "$lint" "${lint_flags[@]}" "${base_targets[@]}") >>"$logdir/lint-base.log" 2>&1
		released=$(grep -E '^[^ :]+\.go:[0-9]+(:[0-9]+)?: ' "$logdir/lint-base.log")
		(cd "$scratch" && git worktree remove --force "$scratch.base")
		caused=$(comm -23 <(printf '%s\n' "$theirs" | LC_ALL=C sort) <(printf '%s\n' "$released" | LC_ALL=C sort) | grep -v '^$')
		kept=$(comm -12 <(printf '%s\n' "$theirs" | LC_ALL=C sort) <(printf '%s\n' "$released" | LC_ALL=C sort) | grep -v '^$')
		[ -z "$kept" ] || {
			echo "    in KEDA $keda_version itself too (not counted):"
			echo "$kept" | sed 's/^/    | /'
		}
		ours=$(printf '%s\n%s\n' "$ours" "$caused" | grep -v '^$')
	fi
	if [ -n "$ours" ]; then
		echo "    $(echo "$ours" | wc -l) finding(s) in our change:"
		echo "$ours" | sed 's/^/    | /'
		deferred_failures+=("golangci-lint $lint_version: $(echo "$ours" | wc -l) finding(s) (log: $logdir/lint.log)")
		echo "    FAILED (the run goes on to the tests and fails at the end)"
	elif [ "$lint_status" -ne 0 ] && [ -z "$findings" ]; then
		tail -n 40 "$logdir/lint.log" >&2
		fail "golangci-lint exited $lint_status without a finding (log: $logdir/lint.log)"
	else
		echo "    0 findings in our change"
		done_step
	fi

	step "our unit tests: go test ./pkg/scalers ./pkg/scalers/azure ${INTREE_TESTFLAGS:-}"
	names=$(test_names "${our_tests[@]}")
	[ -n "$names" ] || fail "our test files declare no Test function"
	run_pattern=${INTREE_RUN:-^($(echo $names | tr ' ' '|'))\$}
	echo "    $(echo "$names" | wc -l) top-level tests in ${#our_tests[@]} files"
	# shellcheck disable=SC2086 # INTREE_TESTFLAGS is a list of flags
	(cd "$scratch" && go test -count=1 -v ${INTREE_TESTFLAGS:-} $pkgs -run "$run_pattern") >"$logdir/test.log" 2>&1
	status=$?
	passed=$(grep -cE '^[[:space:]]*--- PASS' "$logdir/test.log")
	failed=$(grep -cE '^[[:space:]]*--- FAIL' "$logdir/test.log")
	skipped=$(grep -cE '^[[:space:]]*--- SKIP' "$logdir/test.log")
	grep -E '^(ok|FAIL|---)' "$logdir/test.log" | grep -v 'no test files' | grep -v '^--- PASS' | sed 's/^/    /'
	echo "    tests: $passed passed, $failed failed, $skipped skipped (subtests included; log: $logdir/test.log)"
	if [ "$status" -ne 0 ]; then
		grep -B2 -A30 -E -- '--- FAIL|^FAIL|panic:|build failed|\[setup failed\]' "$logdir/test.log" | head -150 >&2
		fail "go test exited $status"
	fi
	if [ -z "${INTREE_RUN:-}" ]; then
		# An Example without an Output comment is compiled, not run.
		notrun=$(comm -23 <(echo "$names" | grep -v '^Example') <(sed -n 's/^=== RUN[[:space:]]*\([^/[:space:]]*\)$/\1/p' "$logdir/test.log" | LC_ALL=C sort -u))
		[ -z "$notrun" ] || fail "declared but not run: $(echo $notrun)"
	fi
	[ "$passed" -gt 0 ] || fail "the pattern $run_pattern ran no tests"
	done_step

	if [ "${INTREE_FULL:-1}" = 1 ]; then
		# Our test files join KEDA's test packages: one binary, one TestMain,
		# shared process state. Run all of KEDA's tests of those packages with
		# ours in; a failure counts against us only if it fails again with our
		# files in and passes once they are taken out.
		step "all of KEDA's go test ./pkg/scalers ./pkg/scalers/azure with our test files in the packages"
		# shellcheck disable=SC2086
		(cd "$scratch" && go test -count=1 -v $pkgs) >"$logdir/test-keda.log" 2>&1
		status=$?
		echo "    $(grep -cE '^--- PASS' "$logdir/test-keda.log") passed, $(grep -cE '^--- FAIL' "$logdir/test-keda.log") failed"
		if [ "$status" -ne 0 ]; then
			failed=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda.log" | awk '{print $3}' | sort -u)
			[ -n "$failed" ] || {
				tail -n 40 "$logdir/test-keda.log" >&2
				fail "go test exited $status without a failing test"
			}
			grep -E -B12 -A4 '^--- FAIL' "$logdir/test-keda.log" | head -80 | sed 's/^/    | /'
			# A test that passes on a second try with our files in is flaky
			# (fixed ports, wall-clock hours), not ours to answer for.
			echo "    failed: $(echo $failed); re-running them with our test files"
			# shellcheck disable=SC2086
			(cd "$scratch" && go test -count=1 -v -run "^($(echo $failed | tr ' ' '|'))\$" $pkgs) >"$logdir/test-keda-again.log" 2>&1
			again=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda-again.log" | awk '{print $3}' | sort -u)
			flaky=$(comm -23 <(echo "$failed") <(echo "$again") | grep -v '^$')
			[ -z "$flaky" ] || echo "    passed on a second try (flaky, not counted): $(echo $flaky)"
			failed=$again
			if [ -n "$failed" ]; then
				echo "    failing again: $(echo $failed); re-running them without our test files"
				mkdir -p "$logdir/aside"
				for f in "${our_tests[@]}"; do
					mkdir -p "$logdir/aside/$(dirname "$f")" && mv "$scratch/$f" "$logdir/aside/$f"
				done
				# shellcheck disable=SC2086
				(cd "$scratch" && go test -count=1 -v -run "^($(echo $failed | tr ' ' '|'))\$" $pkgs) >"$logdir/test-keda-without-ours.log" 2>&1
				for f in "${our_tests[@]}"; do mv "$logdir/aside/$f" "$scratch/$f"; done
				still=$(grep -oE '^--- FAIL: [^ ]+' "$logdir/test-keda-without-ours.log" | awk '{print $3}' | sort -u)
				ours=$(comm -23 <(echo "$failed") <(echo "$still") | grep -v '^$')
				[ -z "$still" ] || echo "    failing without our files too (KEDA's own, not counted): $(echo $still)"
				[ -z "$ours" ] || fail "KEDA tests that fail only with our test files in the package: $(echo $ours) (log: $logdir/test-keda.log)"
			fi
		fi
		done_step
	fi

	step "go vet -tags e2e $e2e_pkgs"
	# shellcheck disable=SC2086
	run vet-e2e.log go vet -tags e2e $e2e_pkgs
	done_step

}

# check_spec: the specification's diff (hack/pr/spec-behaviours) on the
# stack's head: hack/pr/stack.sh applies the stack and it to another fresh
# copy of KEDA (INTREE_DIR.spec) and verifies that head as it verifies each
# pull request's.
check_spec() {
	step "hack/pr/spec-behaviours on the stack's head, in $scratch.spec"
	(STACK_CHECK_ONLY=1 "$src/hack/pr/stack.sh" apply "$scratch.spec" &&
		STACK_HEADS=spec-behaviours STACK_BUILD=./pkg/scalers/... INTREE_LINT=$lint "$src/hack/pr/stack.sh" verify "$scratch.spec") >"$logdir/spec.log" 2>&1 || {
		tail -n 40 "$logdir/spec.log" >&2
		fail "the stack's head with hack/pr/spec-behaviours fails hack/pr/stack.sh verify (log: $logdir/spec.log)"
	}
	echo "    verified (build, vet, golangci-lint, the scaler's tests): $(grep -E '^ok' "$logdir/spec.log" | tail -n 1)"
	done_step
}

if [ "$mode" = check ]; then
	check_tree
	[ "${INTREE_SPEC:-1}" = 0 ] || check_spec
	if [ "${#deferred_failures[@]}" -gt 0 ]; then
		step_name="(earlier steps)"
		printf '    %s\n' "${deferred_failures[@]}" >&2
		fail "${#deferred_failures[@]} step(s) failed"
	fi
	# A record that this exact tree passed: $cache/passed/TREE, TREE the git
	# tree of KEDA's copy with our files in.
	tree=$(cd "$scratch" && git add -A -f && git write-tree)
	mkdir -p "$cache/passed" &&
		printf 'make intree passed on %s: golangci-lint %s (KEDA .golangci.yml) 0 findings; our unit tests %s passed; KEDA %s, in %ss\n' \
			"$(date -u +%Y-%m-%dT%H:%MZ)" "$lint_version" "$passed" "$keda_version" "$(($(date +%s) - script_start))" >"$cache/passed/$tree"
else
	# --- 3. The in-tree files as one commit (PATCH) ----------------------------------
	git_as_author() {
		(cd "$scratch" && GIT_AUTHOR_NAME=$author_name GIT_AUTHOR_EMAIL=$author_email \
			GIT_COMMITTER_NAME=$author_name GIT_COMMITTER_EMAIL=$author_email \
			git -c commit.gpgsign=false -c user.name="$author_name" -c user.email="$author_email" "$@")
	}
	# One commit of the in-tree files as they are (hack/e2e-local.sh).
	step "commit the in-tree files on KEDA $keda_version"
	run "git-add-1.log" git add -A -f
	git_as_author commit -q -s -m "azure-cosmosdb: the scaler of kedacore/keda-cosmosdb-scaler, in-tree" >"$logdir/git-commit-1.log" 2>&1 || fail "git commit (log: $logdir/git-commit-1.log)"
	run "schema-1.log" go run ./schema/generate_scaler_schema.go --keda-version main \
		--scalers-builder-file pkg/scaling/scalers_builder.go --scalers-files-dir pkg/scalers \
		--output-file-path schema/generated/ --output-file-name scalers-schema --output-file-format both
	run "git-add-1-schema.log" git add -A -f
	(cd "$scratch" && git diff --cached --quiet) || git_as_author commit -q --amend --no-edit >>"$logdir/git-commit-1.log" 2>&1 || fail "git commit (log: $logdir/git-commit-1.log)"
	done_step

	step "size of the commit (added lines)"
	(cd "$scratch" && git -c core.quotepath=off diff --numstat "$base" HEAD) | awk '
		{ if ($1 == "-") $1 = 0
		  if ($3 ~ /^pkg\// && $3 ~ /\.go$/ && $3 !~ /_test\.go$/) p += $1
		  else if ($3 ~ /^pkg\// && $3 ~ /_test\.go$/) u += $1
		  else if ($3 ~ /^tests\//) e += $1
		  else o += $1 }
		END { printf "    production +%d, unit tests +%d, e2e +%d, other +%d\n", p, u, e, o }'
	done_step

	step "write $patch_file (git format-patch --stdout)"
	mkdir -p "$(dirname "$patch_file")"
	(cd "$scratch" && git format-patch --stdout "$base..HEAD") >"$patch_file" || fail "git format-patch"
	echo "    $patch_file ($(wc -l <"$patch_file") lines, $(grep -c '^From [0-9a-f]\{40\} ' "$patch_file") commits); apply in a KEDA $keda_version checkout with: git am $(basename "$patch_file")"
	done_step

	# --- 4. The claim, tested: git am onto a pristine release -----------------------
	step "git am $(basename "$patch_file") onto a fresh git init copy of KEDA $keda_version"
	am_dir=$scratch.am
	fresh_copy "$am_dir"
	am_base=$(cd "$am_dir" && git rev-parse HEAD)
	(cd "$am_dir" && git -c user.name="$author_name" -c user.email="$author_email" -c commit.gpgsign=false am -q "$patch_file") >"$logdir/git-am-1.log" 2>&1 || {
		tail -n 30 "$logdir/git-am-1.log" >&2
		fail "git am does not apply $patch_file on KEDA $keda_version"
	}
	[ "$(cd "$am_dir" && git rev-parse 'HEAD^{tree}')" = "$(cd "$scratch" && git rev-parse 'HEAD^{tree}')" ] ||
		fail "the tree git am makes differs from the patched tree"
	commits=$(cd "$am_dir" && git rev-list --reverse "$am_base..HEAD")
	for c in $commits; do
		(cd "$am_dir" && git log -1 --format=%B "$c") | grep -q -x -F "Signed-off-by: $author_name <$author_email>" ||
			fail "commit $(cd "$am_dir" && git log -1 --format='%h %s' "$c") has no Signed-off-by: $author_name <$author_email>"
		[ "$(cd "$am_dir" && git log -1 --format='%an <%ae>|%cn <%ce>' "$c")" = "$author_name <$author_email>|$author_name <$author_email>" ] || fail "commit $c has another author or committer"
	done
	echo "    $(wc -w <<<"$commits") commit(s) applied, each signed off by $author_name <$author_email>; the tree equals the patched one"
	done_step

	if [ "$verify" = build ]; then
		# The commit as KEDA would merge it: check_tree (what make intree runs)
		# on the tree git am made; it is pull request 1 for INTREE_HEADS.
		case " ${INTREE_HEADS:-all} " in
		*" all "* | *" 1 "*)
			echo "==> pull request 1 (in-tree), head $(cd "$am_dir" && git rev-parse --short HEAD): $(cd "$am_dir" && git log -1 --format=%s HEAD)"
			scratch_tree=$scratch base_tree=$base logdir_tree=$logdir
			scratch=$am_dir base=$am_base logdir=$logdir_tree/pr-1
			mkdir -p "$logdir"
			check_tree
			scratch=$scratch_tree base=$base_tree logdir=$logdir_tree
			;;
		*) echo "==> pull request 1 (in-tree): head not checked (INTREE_HEADS=${INTREE_HEADS:-})" ;;
		esac
	fi
fi

[ -n "$src_tmp" ] && rm -rf "$src_tmp"
if [ "${#deferred_failures[@]}" -gt 0 ]; then
	step_name="(earlier steps)"
	printf '    %s\n' "${deferred_failures[@]}" >&2
	fail "${#deferred_failures[@]} check(s) failed"
fi
echo "in-tree $mode: OK in $(($(date +%s) - script_start))s (scratch tree: $scratch, logs: $logdir)"
exit 0
}
