#!/usr/bin/env bash
# Drops this repository's azure-cosmosdb scaler into a fresh copy of KEDA's
# source and proves it builds, lints and passes its tests there; or writes the
# change as the stack of pull requests KEDA would get.
#
#   hack/intree.sh          copy, replace; go vet; build operator + adapter; KEDA's
#                           pinned golangci-lint with KEDA's .golangci.yml on the
#                           packages we touch; our unit tests; all of KEDA's tests of
#                           those packages beside ours; go vet -tags e2e of the suites
#                           (make intree)
#   hack/intree.sh patch    with PATCH_DIR (make intree-patch): the contribution, the
#                           stack of small edits of KEDA's own scaler that
#                           hack/pr/stack.sh applies to a fresh copy of KEDA, checks
#                           at each head (INTREE_VERIFY=build, the default) and
#                           writes into PATCH_DIR (one folder per pull request, its
#                           git format-patch and PULL_REQUEST.md; ISSUE.md), then the
#                           private advisory (hack/advisory.sh write PATCH_DIR/advisory);
#                           with PATCH alone and INTREE_SERIES=single (hack/e2e-local.sh):
#                           this repository's in-tree files as one commit on KEDA
#   hack/intree.sh author   check the series' author (INTREE_AUTHOR, else git config) as
#                           make intree-patch does, print it, and exit
#   hack/intree.sh list     print the files that go in-tree, one per line, and check
#                           the layout (no KEDA, no compiling; tests/repo runs it)
#
# What goes in-tree: the same paths in KEDA's tree as here, selected by name.
#   pkg/scalers/azure_cosmosdb_scaler.go, pkg/scalers/azure_cosmosdb_scaler_test.go
#   pkg/scalers/azure/azure_cosmosdb_*.go           flat files of KEDA's package azure
#                                                   (not *_bench_test.go)
#   tests/scalers/azure/azure_cosmosdb/,            KEDA's two e2e suites (build tag e2e),
#   tests/scalers/azure/azure_cosmosdb_aad_wi/      every file in them
#   tests/scalers/azure/helper/CosmosDBHelper.go    beside KEDA's other Azure e2e helpers
# Everything else stays home and is never named by the patch:
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
# scaler (the last, of its two e2e suites of the trigger); hack/pr/stack.sh and
# hack/pr/stack/series say how it is kept.

# Environment:
#   KEDA_VERSION        KEDA release to drop into (default v2.21.0)
#   INTREE_DIR          scratch copy, recreated on every run
#                       (default /tmp/keda-intree, or /tmp/keda-intree-patch for "patch")
#   INTREE_REF          git ref of this repository to take our files from (default: the working tree)
#   INTREE_RUN          go test -run pattern for our unit tests (default: exactly the
#                       Test, Fuzz and Example functions of our copied test files)
#   INTREE_TESTFLAGS    extra go test flags, e.g. -race
#   INTREE_FULL         1 (default): also run all of KEDA's tests of pkg/scalers and
#                       pkg/scalers/azure with our test files in those packages, to catch
#                       shared-state collisions; 0 to skip
#   INTREE_CACHE        where golangci-lint is installed and reused
#                       (default ${XDG_CACHE_HOME:-~/.cache}/keda-cosmosdb-intree)
#   INTREE_LINT         a golangci-lint binary to use instead of installing one; it must
#                       be the version KEDA's Makefile pins (GOLANGCI_VERSION)
#   INTREE_LINT_ALL     1: lint all of KEDA (./..., as KEDA's make golangci does) instead of
#                       the packages we touch; findings in KEDA's untouched files that the
#                       release has too are reported, not counted
# For "patch":
#   PATCH_DIR           directory for the pull request (default /tmp/keda-pr; emptied
#                       first if an earlier run made it, refused if it holds anything else)
#   PATCH               also (or, without PATCH_DIR, only) write the series as one mbox
#                       file that git am applies (relative to the directory the script
#                       was started from). hack/e2e-local.sh uses this form.
#   INTREE_AUTHOR       "Name <email>" (make intree-patch AUTHOR="Name <email>"): the
#                       person who authors, commits and signs off (Signed-off-by) every
#                       commit of the series; default: this repository's git config
#                       user.name and user.email. Checked before anything else: with
#                       PATCH_DIR a missing identity or a placeholder (a name such as
#                       "Your Name" or "TODO"; an address at example.com, example.org,
#                       *.example, *.invalid, *.test, localhost ...) is refused, as KEDA's
#                       DCO check needs the sender's real one; hack/intree.sh author runs
#                       that check alone. The scratch commit of KEDA's release that the
#                       series is based on is not part of the series.
#   INTREE_SERIES       split (default): the stack; single: the last pull request's
#                       tree in one pull request's commits (only with PATCH alone, for
#                       local e2e runs)
#   INTREE_VERIFY       build (default with PATCH_DIR): after git am, each pull
#                       request's head gets make intree's checks (go vet, the operator
#                       and adapter built, golangci-lint, our and KEDA's tests of the
#                       packages, go vet -tags e2e), a commit inside a pull request go
#                       vet and a build; am (default with only PATCH): git am and
#                       compare the trees only
#   INTREE_HEADS        the pull requests whose heads INTREE_VERIFY=build checks, by
#                       number ("1 8"; default all)
#   KEDA_ISSUE          the number of the kedacore/keda issue opened from ISSUE.md
#   KEDA_DOCS_DIR       a kedacore/keda-docs clone (bare or not) to base keda-docs.patch on
#                       and to check the page's relative links against; without it the
#                       patch creates the page from nothing
#   KEDA_DOCS_VERSION   docs version directory of the page (default 2.22)
# keda-docs.patch is docs/azure-cosmosdb.md with its "See [x](local.md) ..."
# sentences and its <!-- repo-only --> ... <!-- /repo-only --> spans left out;
# a page that still names this repository's tools, or whose links or anchors
# keda-docs cannot resolve, fails the run.
# Each PULL_REQUEST.md is its hack/pr/stack/NAME/PULL_REQUEST.md.tmpl with its
# @@NAME@@ placeholders filled (a TODO left in one fails the run); ISSUE.md, the
# issue proposing the series, from hack/pr/stack/ISSUE.md.tmpl (KEDA_ISSUE=N,
# the issue's number once opened, makes the pull requests link it). The private
# advisory is hack/advisory.sh's (hack/advisory.sh write PATCH_DIR/advisory), when
# the tree has it: for KEDA's maintainers, never public.
# Size limits (checked in "patch" with PATCH_DIR; an exceeded limit fails the
# run at the end, after everything is written):
#   added production lines (non-test Go under pkg/): the first pull request
#   1,000, each other 300
#   each PULL_REQUEST.md: 80 lines, HTML comments left out
#   the keda-docs page: 300 lines
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

# Size limits of each pull request, in added production lines (non-test Go
# under pkg/): the first, and each other.
limit_prod_core=1000
limit_prod_other=300
# ... of PULL_REQUEST.md (lines, HTML comments left out) and of the docs page (lines).
limit_pr_body=80
limit_docs_page=300

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

# read_series DIR: the stack of pull requests of the tree at DIR
# (hack/pr/stack/series): stack_names, stack_diffs (index 0 is the first pull
# request, whose diff is "-"), n_prs. Fails the run on a malformed series.
read_series() {
	local dir=$1 name diff rest k
	stack_names=()
	stack_diffs=()
	[ -f "$dir/hack/pr/stack/series" ] || {
		echo "no hack/pr/stack/series in $dir" >&2
		exit 1
	}
	while read -r name diff rest; do
		case "$name" in '' | '#'*) continue ;; esac
		stack_names+=("$name")
		stack_diffs+=("$diff")
	done <"$dir/hack/pr/stack/series"
	n_prs=${#stack_names[@]}
	if [ "$n_prs" -lt 1 ] || [ "${stack_diffs[0]}" != - ]; then
		echo "hack/pr/stack/series: the first pull request's DIFF must be -" >&2
		exit 1
	fi
	for ((k = 0; k < n_prs; k++)); do
		for f in commit-1.txt PULL_REQUEST.md.tmpl; do
			[ -f "$dir/hack/pr/stack/${stack_names[k]}/$f" ] || {
				echo "hack/pr/stack/series: no hack/pr/stack/${stack_names[k]}/$f" >&2
				exit 1
			}
		done
		if [ "$k" -gt 0 ] && [ ! -s "$dir/${stack_diffs[k]}" ]; then
			echo "hack/pr/stack/series: ${stack_names[k]}: no diff ${stack_diffs[k]}" >&2
			exit 1
		fi
	done
}

# stack_git DIR ARGS...: git in a stack repository, with a fixed identity.
stack_git() {
	local dir=$1
	shift
	(cd "$dir" && git -c user.name="stack" -c user.email="stack@keda.invalid" -c commit.gpgsign=false "$@")
}

# stack_trees SRC OUT LOG: OUT becomes a git repository of the in-tree files
# of the tree at SRC (its first commit: the last pull request), then one
# commit per earlier pull request, each the one after it with that one's diff
# (stack_diffs, read from SRC) reversed. Sets stack_tree[K] and
# stack_commit[K] (K = 0 the first pull request). Returns 1 with the reason in
# stack_error when a diff does not apply in reverse or touches another file.
stack_trees() {
	local s=$1 out=$2 log=$3 k f
	stack_error=""
	rm -rf "$out" && mkdir -p "$out" || return 1
	mapfile -t stack_files < <(select_files "$s" 2>/dev/null)
	(cd "$s" && tar -cf - "${stack_files[@]}") | tar -xf - -C "$out" || {
		stack_error="cannot copy the in-tree files of $s"
		return 1
	}
	stack_git "$out" init -q && stack_git "$out" add -A && stack_git "$out" commit -q -m "${stack_names[n_prs - 1]}" || {
		stack_error="git init in $out"
		return 1
	}
	stack_commit[n_prs - 1]=$(stack_git "$out" rev-parse HEAD)
	stack_tree[n_prs - 1]=$(stack_git "$out" rev-parse 'HEAD^{tree}')
	for ((k = n_prs - 1; k >= 1; k--)); do
		for f in $(cd "$out" && git apply --numstat "$s/${stack_diffs[k]}" 2>/dev/null | cut -f3); do
			[[ "$f" =~ $in_tree_pattern ]] || {
				stack_error="${stack_diffs[k]} changes $f, which is not an in-tree file"
				return 1
			}
		done
		stack_git "$out" apply -R "$s/${stack_diffs[k]}" >"$log/stack-reverse-$((k + 1)).log" 2>&1 || {
			sed 's/^/    | /' "$log/stack-reverse-$((k + 1)).log" >&2
			stack_error="${stack_diffs[k]} (pull request $((k + 1)), ${stack_names[k]}) does not apply in reverse to what the pull requests after it leave of the tree: it is out of date; regenerate the stack: hack/intree.sh stack"
			return 1
		}
		stack_git "$out" add -A && stack_git "$out" commit -q --allow-empty -m "${stack_names[k - 1]}" || {
			stack_error="git commit in $out"
			return 1
		}
		stack_commit[k - 1]=$(stack_git "$out" rev-parse HEAD)
		stack_tree[k - 1]=$(stack_git "$out" rev-parse 'HEAD^{tree}')
	done
	return 0
}

# The paths a stack diff may change (this repository's, which are KEDA's).
in_tree_pattern='^(pkg/scalers/azure_cosmosdb_scaler(_test)?\.go|pkg/scalers/azure/azure_cosmosdb_[a-z0-9_]+\.go|tests/scalers/azure/azure_cosmosdb(_aad_wi)?/[^/]+|tests/scalers/azure/helper/CosmosDBHelper\.go)$'
in_tree_pathspec=(':(glob)pkg/scalers/azure_cosmosdb_scaler*.go' ':(glob)pkg/scalers/azure/azure_cosmosdb_*.go' ':(exclude,glob)**/*_bench_test.go' 'tests/scalers/azure')

# stack_write DIR: writes the stack's diffs from the git repository DIR,
# whose HEAD is the first pull request's tree, HEAD~1 the second's, ...,
# HEAD~(n-1) the last's (what hack/intree.sh stack makes). The last diff (the
# series' last line's) is kept as it is: it is regenerated on its own (the
# header's procedure) and must already be the change between the last two
# trees.
stack_write() {
	local dir=$1 k
	[ "$(stack_git "$dir" rev-list --count HEAD)" -ge "$n_prs" ] || {
		echo "$dir holds fewer than $n_prs commits" >&2
		return 1
	}
	for ((k = 1; k < n_prs; k++)); do
		if [ "$k" -eq $((n_prs - 1)) ]; then
			if ! stack_git "$dir" diff --no-color --no-ext-diff --no-renames "HEAD~$((k - 1))" "HEAD~$k" | diff -q - "$repo/${stack_diffs[k]}" >/dev/null &&
				! (stack_git "$dir" diff --no-color --no-ext-diff --no-renames "HEAD~$((k - 1))" "HEAD~$k" | git apply --numstat - | sort) | diff -q - <(cd "$repo" && git apply --numstat "${stack_diffs[k]}" | sort) >/dev/null; then
				echo "the last two trees differ by other lines than ${stack_diffs[k]} holds" >&2
				return 1
			fi
			continue
		fi
		stack_git "$dir" diff --no-color --no-ext-diff --no-renames "HEAD~$((k - 1))" "HEAD~$k" >"$repo/${stack_diffs[k]}" || return 1
		echo "    wrote ${stack_diffs[k]} ($(cd "$repo" && git apply --numstat "${stack_diffs[k]}" | awk '{a += $1; d += $2} END {printf "+%d -%d", a, d}'))"
	done
}

# write_texts: each pull request's PULL_REQUEST.md (from
# hack/pr/stack/NAME/PULL_REQUEST.md.tmpl), ISSUE.md (from
# hack/pr/stack/ISSUE.md.tmpl), and the private advisory (hack/advisory.sh
# when this tree has it), into patch_dir. Placeholders @@NAME@@ are filled
# from fragments in $frag.
write_texts() {
	local k f n names tmpl
	rm -rf "$frag" && mkdir -p "$frag"
	echo "$keda_version" >"$frag/KEDA_VERSION"
	echo "$n_prs" >"$frag/TOTAL"
	# The issue the series is proposed in: its number once opened
	# (KEDA_ISSUE=1234), else its title (ISSUE.md's first heading).
	if [ -n "${KEDA_ISSUE:-}" ]; then
		echo "#${KEDA_ISSUE#\#}" >"$frag/ISSUE"
	else
		echo "the issue \"$(sed -n 's/^# //p' "$src/hack/pr/stack/ISSUE.md.tmpl" | head -n 1)\"" >"$frag/ISSUE"
	fi
	# How the overlap with #8088's author is settled.
	echo "Before pull request 3 is opened, the sender asks #8088's author on that issue whether they would rather open it themselves from this branch, co-author it (a \`Co-authored-by\` trailer on its commit) or review it, and follows their answer." >"$frag/OVERLAP"
	echo "$docs_page" >"$frag/DOCS_PAGE"
	{
		echo "The scaler's reference page, \`$docs_page\` of kedacore/keda-docs, is in the docs pull request made from \`keda-docs.patch\`${docs_on:+ (based on $docs_on)}; it describes the scaler as the last pull request of the series leaves it."
		[ -n "${docs_note:-}" ] && printf '\n%s\n' "$docs_note"
	} >"$frag/DOCS"
	# The series, for ISSUE.md and each pull request.
	for ((k = 0; k < n_prs; k++)); do
		read -r sp su se so <"$logdir/size-$((k + 1))"
		from=$base
		[ "$k" -gt 0 ] && from=${pr_head[k - 1]}
		echo "$((k + 1)). $(cd "$scratch" && git log --reverse --format=%s "$from..${pr_head[k]}" | head -n 1 | sed 's/^/**/; s/$/**/') — production +$sp, unit tests +$su, e2e +$se lines"
	done >"$frag/SERIES"
	for ((k = 0; k < n_prs; k++)); do
		pr=$patch_dir/${stack_names[k]}/PULL_REQUEST.md
		from=$base
		[ "$k" -gt 0 ] && from=${pr_head[k - 1]}
		(cd "$scratch" && git log --reverse --format=%s "$from..${pr_head[k]}" | head -n 1) >"$frag/TITLE"
		(cd "$scratch" && git log --reverse --format='%s' "$from..${pr_head[k]}") | awk '{ printf "%d. %s\n", NR, $0 }' >"$frag/COMMITS"
		echo "$((k + 1))" >"$frag/NUMBER"
		if [ "$k" -gt 0 ]; then
			(cd "$scratch" && git log -1 --format=%s "${pr_head[k - 1]}") >"$frag/PREVIOUS"
		else
			echo "(none)" >"$frag/PREVIOUS"
		fi
		read -r sp su se so <"$logdir/size-$((k + 1))"
		echo "production +$sp, unit tests +$su, e2e +$se lines" >"$frag/SIZE"
		# The unit tests as this pull request leaves them, and those it adds or changes.
		for f in "${all_tests[@]}"; do
			(cd "$scratch" && git cat-file -e "${pr_head[k]}:$f" 2>/dev/null) || continue
			names=$(cd "$scratch" && git show "${pr_head[k]}:$f" | grep -o -E '^func (Test|Fuzz|Example)[A-Za-z0-9_]*\(' | sed 's/^func //; s/($//' | sort -u)
			n=$(echo "$names" | grep -c .)
			echo "- \`$f\`: $n $([ "$n" -eq 1 ] && echo test || echo tests) ($(echo $names | sed 's/ /, /g'))"
		done >"$frag/TESTS"
		# A hunk inside a test names it in its header (git's funcname); a hunk
		# that adds or removes a test function names that one instead.
		(cd "$scratch" && git diff -U0 "$from" "${pr_head[k]}" -- 'pkg/*_test.go') | awk '
			function add(t) { if (t != "" && !seen[file SUBSEP t]++) list[file] = list[file] (list[file] ? ", " : "") t }
			function flush() { if (own) { split(own, ts, " "); for (i in ts) add(ts[i]) } else add(header); header = ""; own = "" }
			function name(s) { match(s, /func (Test|Fuzz)[A-Za-z0-9_]*/); return substr(s, RSTART + 5, RLENGTH - 5) }
			/^\+\+\+ b\// { flush(); file = substr($0, 7); next }
			/^@@ / { flush(); if ($0 ~ /@@ func (Test|Fuzz)[A-Za-z0-9_]*\(/) header = name($0); next }
			/^[-+]func (Test|Fuzz)[A-Za-z0-9_]*\(/ { own = own " " name($0) }
			END { flush(); for (f in list) printf "- `%s`: %s\n", f, list[f] }' | LC_ALL=C sort >"$frag/CHANGED_TESTS"
		[ -s "$frag/CHANGED_TESTS" ] || echo "- none" >"$frag/CHANGED_TESTS"
		checked=$logdir/checked-$((k + 1))
		{
			if [ -f "$checked" ]; then
				echo "\`make intree-patch\` (kedacore/keda-cosmosdb-scaler) applied this pull request with \`git am\` on the ones before it, on a \`git init\` copy of KEDA $keda_version, and at its head ran \`go vet\`, built the operator and adapter, ran KEDA's pinned golangci-lint with KEDA's \`.golangci.yml\` (0 findings in the change), the unit tests above and all of KEDA's tests of \`pkg/scalers\` and \`pkg/scalers/azure\`, and \`go vet -tags e2e\` of the e2e suites; it adds no requirement to KEDA's \`go.mod\`."
			else
				echo "This pull request applies with \`git am\` on the ones before it, on KEDA $keda_version; it adds no requirement to KEDA's \`go.mod\`."
			fi
		} >"$frag/CHECKS"
		for f in "$frag"/*; do
			awk 'NF { if (blank) print ""; blank = 0; print; seen = 1; next } seen { blank = 1 }' "$f" >"$f.trim" && mv "$f.trim" "$f"
		done
		fill_template "$src/hack/pr/stack/${stack_names[k]}/PULL_REQUEST.md.tmpl" "$pr"
		pr_body=$(perl -0 -p -e 's/^[ \t]*<!--(?:(?!-->).)*-->[ \t]*\n//gms; s/<!--.*?-->//gs' "$pr" | wc -l)
		echo "    $pr ($pr_body lines without HTML comments, limit $limit_pr_body)"
		if [ "$pr_body" -gt "$limit_pr_body" ]; then
			deferred_failures+=("${stack_names[k]}/PULL_REQUEST.md: $pr_body lines without HTML comments, limit $limit_pr_body")
		fi
	done
	tmpl=$src/hack/pr/stack/ISSUE.md.tmpl
	[ -f "$tmpl" ] || fail "no hack/pr/stack/ISSUE.md.tmpl"
	fill_template "$tmpl" "$patch_dir/ISSUE.md"
	echo "    $patch_dir/ISSUE.md ($(wc -l <"$patch_dir/ISSUE.md") lines): the issue proposing the series, to open before the first pull request"
	# The private advisory (KEDA's SECURITY.md: reported privately first).
	if [ -x "$src/hack/advisory.sh" ]; then
		(cd "$src" && KEDA_VERSION="$keda_version" hack/advisory.sh write "$patch_dir/advisory") >"$logdir/advisory.log" 2>&1 || {
			tail -n 30 "$logdir/advisory.log" >&2
			fail "hack/advisory.sh (log: $logdir/advisory.log)"
		}
		echo "    $patch_dir/advisory/ (hack/advisory.sh): $(ls "$patch_dir/advisory" | tr '\n' ' ')— private, for KEDA's maintainers, before the endpoint rule's pull request"
	else
		echo "    no hack/advisory.sh in this tree: the private advisory folder is not written"
	fi
}

# fill_template TEMPLATE OUT: @@NAME@@ on a line of its own is replaced by
# the fragment $frag/NAME; inline, by its first line.
fill_template() {
	[ -f "$1" ] || fail "no $1"
	awk -v dir="$frag" '
		/^@@[A-Z_]+@@$/ { name = substr($0, 3, length($0) - 4); f = dir "/" name
			if ((getline line < f) <= 0) { print "unknown placeholder " $0 > "/dev/stderr"; exit 3 }
			print line; while ((getline line < f) > 0) print line; close(f); next }
		{ while (match($0, /@@[A-Z_]+@@/)) { name = substr($0, RSTART + 2, RLENGTH - 4); f = dir "/" name
				if ((getline line < f) <= 0) { print "unknown placeholder @@" name "@@" > "/dev/stderr"; exit 3 }
				close(f); $0 = substr($0, 1, RSTART - 1) line substr($0, RSTART + RLENGTH) }
		  print }' "$1" >"$2" || fail "${2##*/}: a placeholder of ${1#"$src"/} has no value"
	grep -q '@@[A-Z_]*@@' "$2" && fail "${2##*/} still has placeholders: $(grep -o '@@[A-Z_]*@@' "$2" | sort -u | tr '\n' ' ')"
	grep -n -E '\bTODO\b' "$2" >/dev/null && fail "${2##*/} says TODO: $(grep -n -E '\bTODO\b' "$2" | head -3)"
	return 0
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
patch_dir=""
if [ "$mode" = patch ]; then
	[ -n "${PATCH:-}" ] && patch_file=$(absolute "$PATCH")
	if [ -n "${PATCH_DIR:-}" ] || [ -z "$patch_file" ]; then
		patch_dir=$(absolute "${PATCH_DIR:-/tmp/keda-pr}")
	fi
fi
if [ -n "$patch_dir" ]; then verify=${INTREE_VERIFY:-build}; else verify=${INTREE_VERIFY:-am}; fi
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
docs_version=${KEDA_DOCS_VERSION:-2.22}
docs_page=content/docs/$docs_version/scalers/azure-cosmosdb.md

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
# $base). make intree runs it on the copied tree; make intree-patch on each
# pull request's head. Our test files are those of $all_tests present there.
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

if [ "$mode" = check ]; then
	check_tree
	if [ "${#deferred_failures[@]}" -gt 0 ]; then
		step_name="(earlier steps)"
		printf '    %s\n' "${deferred_failures[@]}" >&2
		fail "${#deferred_failures[@]} step(s) failed"
	fi
	# What make intree-patch can quote: this exact tree passed.
	tree=$(cd "$scratch" && git add -A -f && git write-tree)
	mkdir -p "$cache/passed" &&
		printf 'make intree passed on %s: golangci-lint %s (KEDA .golangci.yml) 0 findings; our unit tests %s passed; KEDA %s, in %ss\n' \
			"$(date -u +%Y-%m-%dT%H:%MZ)" "$lint_version" "$passed" "$keda_version" "$(($(date +%s) - script_start))" >"$cache/passed/$tree"
else
	# --- 3. The pull requests: a stack KEDA takes one at a time --------------------
	git_as_author() {
		(cd "$scratch" && GIT_AUTHOR_NAME=$author_name GIT_AUTHOR_EMAIL=$author_email \
			GIT_COMMITTER_NAME=$author_name GIT_COMMITTER_EMAIL=$author_email \
			git -c commit.gpgsign=false -c user.name="$author_name" -c user.email="$author_email" "$@")
	}
	if [ "$series" = single ]; then
		# One commit of the in-tree files as they are (hack/e2e-local.sh).
		step "commit the in-tree files on KEDA $keda_version"
		run "git-add-1.log" git add -A -f
		git_as_author commit -q -s -m "azure-cosmosdb: the scaler of kedacore/keda-cosmosdb-scaler, in-tree" >"$logdir/git-commit-1.log" 2>&1 || fail "git commit (log: $logdir/git-commit-1.log)"
		run "schema-1.log" go run ./schema/generate_scaler_schema.go --keda-version main \
			--scalers-builder-file pkg/scaling/scalers_builder.go --scalers-files-dir pkg/scalers \
			--output-file-path schema/generated/ --output-file-name scalers-schema --output-file-format both
		run "git-add-1-schema.log" git add -A -f
		(cd "$scratch" && git diff --cached --quiet) || git_as_author commit -q --amend --no-edit >>"$logdir/git-commit-1.log" 2>&1 || fail "git commit (log: $logdir/git-commit-1.log)"
		pr_head=("$(cd "$scratch" && git rev-parse HEAD)")
		stack_names=(in-tree)
		n_prs=1
		done_step
	else
	step "the stack's trees: hack/pr/stack/series, its diffs reversed from the last"
	read_series "$src"
	final_tree=$(cd "$scratch" && git add -A -f && git write-tree && git reset -q) || fail "git write-tree"
	stack_dir=$scratch.stack
	stack_trees "$src" "$stack_dir" "$logdir" || fail "$stack_error"
	for ((k = 0; k < n_prs; k++)); do
		echo "    $((k + 1)). ${stack_names[k]}: $(cd "$stack_dir" && git diff --shortstat "${stack_tree[k]}" "${stack_tree[n_prs - 1]}" | sed 's/^ *//') before the last"
	done
	done_step

	step "commit the stack on KEDA $keda_version"
	# sync_pr K: the scratch tree's in-tree files become pull request K's
	# (import paths rewritten, imports re-sorted, the schema regenerated).
	sync_pr() {
		local k=$1 f
		rm -f "$scratch"/pkg/scalers/azure_cosmosdb_*.go "$scratch"/pkg/scalers/azure/azure_cosmosdb_*.go "$scratch/tests/scalers/azure/helper/CosmosDBHelper.go"
		rm -rf "$scratch"/tests/scalers/azure/azure_cosmosdb*
		(cd "$stack_dir" && git archive "${stack_tree[k]}") | tar -x -C "$scratch" || fail "git archive of pull request $((k + 1))'s tree"
		mapfile -t pr_files < <(cd "$stack_dir" && git ls-tree -r --name-only "${stack_tree[k]}" | grep '\.go$')
		for f in "${pr_files[@]}"; do
			sed -i -e "s#\"$our_module/pkg/#\"$keda_module/pkg/#g" -e "s#\"$our_module/tests/#\"$keda_module/tests/#g" "$scratch/$f"
		done
		(cd "$scratch" && gofmt -l "${pr_files[@]}" | xargs -r gofmt -w)
		run "schema-$((k + 1)).log" go run ./schema/generate_scaler_schema.go --keda-version main \
			--scalers-builder-file pkg/scaling/scalers_builder.go --scalers-files-dir pkg/scalers \
			--output-file-path schema/generated/ --output-file-name scalers-schema --output-file-format both
	}
	(cd "$scratch" && git reset -q --hard "$base" && git clean -q -f -d -x) || fail "git reset of $scratch"
	pr_head=()
	for ((k = 0; k < n_prs; k++)); do
		d=$src/hack/pr/stack/${stack_names[k]}
		if [ "$series" = single ]; then sync_pr $((n_prs - 1)); else sync_pr "$k"; fi
		if [ "$k" -eq 0 ] && [ -f "$d/commit-2.txt" ]; then
			# The first pull request: the scaler, then its e2e suites.
			run "git-add-$((k + 1)).log" git add -A -f -- . ':!tests'
			git_as_author commit -q -s -F "$d/commit-1.txt" >"$logdir/git-commit-$((k + 1)).log" 2>&1 || fail "git commit (log: $logdir/git-commit-$((k + 1)).log)"
			run "git-add-$((k + 1))-e2e.log" git add -A -f
			(cd "$scratch" && git diff --cached --quiet) && fail "no e2e suite to commit"
			git_as_author commit -q -s -F "$d/commit-2.txt" >>"$logdir/git-commit-$((k + 1)).log" 2>&1 || fail "git commit (log: $logdir/git-commit-$((k + 1)).log)"
		else
			run "git-add-$((k + 1)).log" git add -A -f
			(cd "$scratch" && git diff --cached --quiet) && fail "${stack_names[k]} changes nothing"
			git_as_author commit -q -s -F "$d/commit-1.txt" >"$logdir/git-commit-$((k + 1)).log" 2>&1 || fail "git commit (log: $logdir/git-commit-$((k + 1)).log)"
		fi
		pr_head[k]=$(cd "$scratch" && git rev-parse HEAD)
		echo "    $((k + 1)). ${stack_names[k]}: $(cd "$scratch" && git log --format='%h %s' "${pr_base:-$base}..HEAD" | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
		pr_base=${pr_head[k]}
		[ "$series" = single ] && break
	done
	[ "$(cd "$scratch" && git rev-parse 'HEAD^{tree}')" = "$final_tree" ] || fail "the stack does not end in the copied files"
	others=$(cd "$scratch" && git log --format='%h %an <%ae>|%cn <%ce>|%(trailers:key=Signed-off-by,valueonly,separator=;)' "$base..HEAD" |
		grep -v -x -F -f <(cd "$scratch" && git log --format="%h $author_name <$author_email>|$author_name <$author_email>|$author_name <$author_email>" "$base..HEAD"))
	[ -n "$others" ] && fail "the series carries another identity than $author_name <$author_email>: $others"
	(cd "$scratch" && git status --porcelain | grep -q .) && fail "files left out of the series: $(cd "$scratch" && git status --porcelain | head -5)"
	done_step
	fi

	step "size of each pull request (added lines)"
	# pr_size K: "prod unit e2e other" added lines of pull request K.
	pr_size() {
		local from=$base
		[ "$1" -gt 0 ] && from=${pr_head[$1 - 1]}
		(cd "$scratch" && git -c core.quotepath=off diff --numstat "$from" "${pr_head[$1]}") | awk '
			{ if ($1 == "-") $1 = 0
			  if ($3 ~ /^pkg\// && $3 ~ /\.go$/ && $3 !~ /_test\.go$/) p += $1
			  else if ($3 ~ /^pkg\// && $3 ~ /_test\.go$/) u += $1
			  else if ($3 ~ /^tests\//) e += $1
			  else o += $1 }
			END { printf "%d %d %d %d\n", p, u, e, o }'
	}
	printf '    %-32s %10s %10s %10s %10s  %s\n' "" production "unit tests" e2e other "production limit"
	for ((k = 0; k < ${#pr_head[@]}; k++)); do
		read -r sp su se so < <(pr_size "$k")
		limit=$limit_prod_other
		[ "$k" -eq 0 ] && limit=$limit_prod_core
		verdict=ok
		if [ "$series" = split ] && [ "$sp" -gt "$limit" ]; then
			verdict=OVER
			deferred_failures+=("size: ${stack_names[k]} adds $sp production lines, limit $limit")
		fi
		printf '    %-32s %+10d %+10d %+10d %+10d  %d %s\n' "$((k + 1)). ${stack_names[k]}" "$sp" "$su" "$se" "$so" "$limit" "$verdict"
		echo "$sp $su $se $so" >"$logdir/size-$((k + 1))"
	done
	done_step

	step "write the pull requests"
	if [ -n "$patch_dir" ]; then
		if [ -e "$patch_dir" ]; then
			if [ -e "$patch_dir/.intree-pr" ]; then
				rm -rf "$patch_dir" || fail "cannot empty $patch_dir"
			elif [ -n "$(ls -A "$patch_dir" 2>/dev/null)" ]; then
				fail "$patch_dir is not empty and was not made by $0; choose another PATCH_DIR"
			fi
		fi
		mkdir -p "$patch_dir" && touch "$patch_dir/.intree-pr" || fail "mkdir $patch_dir"
		from=$base
		for ((k = 0; k < n_prs; k++)); do
			(cd "$scratch" && git format-patch -q -o "$patch_dir/${stack_names[k]}" "$from..${pr_head[k]}") >>"$logdir/format-patch.log" 2>&1 ||
				fail "git format-patch (log: $logdir/format-patch.log)"
			from=${pr_head[k]}
			echo "    $patch_dir/${stack_names[k]}/: $(cd "$patch_dir/${stack_names[k]}" && ls ./*.patch | sed 's#^\./##' | tr '\n' ' ')"
		done
	fi
	if [ -n "$patch_file" ]; then
		mkdir -p "$(dirname "$patch_file")"
		(cd "$scratch" && git format-patch --stdout "$base..HEAD") >"$patch_file" || fail "git format-patch"
		echo "    $patch_file ($(wc -l <"$patch_file") lines, $(grep -c '^From [0-9a-f]\{40\} ' "$patch_file") commits); apply in a KEDA $keda_version checkout with: git am $(basename "$patch_file")"
	fi

	if [ -n "$patch_dir" ]; then
		# keda-docs.patch: the scaler's page, from docs/azure-cosmosdb.md.
		page=$logdir/azure-cosmosdb.md
		doc=$src/docs/azure-cosmosdb.md
		[ -f "$doc" ] || fail "no docs/azure-cosmosdb.md"
		if head -n 1 "$doc" | grep -q '^+++$'; then
			cp "$doc" "$page"
		else
			# A page that starts with "# Title": keda-docs' front matter instead.
			title=$(sed -n '1s/^# //p' "$doc")
			[ -n "$title" ] || fail "docs/azure-cosmosdb.md starts with neither +++ front matter nor a # title"
			{
				printf '+++\ntitle = "%s"\navailability = "v2.21+"\nmaintainer = "Microsoft"\ncategory = "Data & Storage"\n' "$title"
				printf 'description = "Scale Azure Cosmos DB change feed processors on the work still waiting in their partitions."\ngo_file = "azure_cosmosdb_scaler"\n+++\n'
				tail -n +2 "$doc"
			} >"$page"
		fi
		front=$(awk 'NR == 1 { next } /^\+\+\+$/ { exit } { print }' "$page")
		for key in title availability maintainer category description go_file; do
			echo "$front" | grep -q "^$key = \"..*\"$" || fail "the page's front matter has no $key (keda-docs needs title, availability, maintainer, category, description, go_file)"
		done
		echo "$front" | grep -q '^go_file = "azure_cosmosdb_scaler"$' || fail "the page's go_file is not azure_cosmosdb_scaler"
		# Links to pages of this repository mean nothing on keda.sh: a
		# sentence "See [x](y.md) ..." pointing at one is dropped; any other
		# is an error.
		perl -0 -p -i -e 's/ ?See \[[^\]]*\]\([a-z0-9_-]+\.md(#[^)]*)?\)[^.]*\.//g' "$page" || fail "perl"
		# Text about this repository's own tools is wrapped in
		# <!-- repo-only --> ... <!-- /repo-only --> (it may span lines) and
		# left out; anything else that names them fails.
		perl -0 -p -i -e 's/[ \t]*<!-- repo-only -->.*?<!-- \/repo-only -->//gs' "$page" || fail "perl"
		home_lines=$(grep -n -i -E "$home_only|keda-cosmosdb-scaler|repo-only" "$page")
		[ -z "$home_lines" ] || {
			echo "    the docs page names what only this repository has:"
			echo "$home_lines" | cut -c1-160 | sed 's/^/    | /'
			echo "    FAILED: wrap such text in docs/azure-cosmosdb.md in <!-- repo-only --> ... <!-- /repo-only --> (the run goes on and fails at the end)"
			deferred_failures+=("keda-docs.patch: $(echo "$home_lines" | wc -l) line(s) of the page name this repository's tools (docs/azure-cosmosdb.md lines $(echo "$home_lines" | cut -d: -f1 | tr '\n' ' '| sed 's/ $//'), counted on the generated page)")
		}
		local_links=$(grep -n -o -E '\]\([^)]+\)' "$page" | grep -v -E '\]\((#|https?://|\./\.\./|\.\./)' || true)
		[ -z "$local_links" ] || fail "links on the page that keda-docs cannot resolve: $(echo $local_links)"
		# Anchors: Hugo's heading ids (GitHub's rule: lower case, punctuation
		# dropped, spaces to hyphens).
		slugs() { sed -n 's/^#\{1,6\} \{1,\}//p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'; }
		missing=$(grep -o -E '\]\(#[^)]+\)' "$page" | sed -E 's/^\]\(#//; s/\)$//' | sort -u | grep -v -x -F -f <(slugs "$page"))
		[ -z "$missing" ] || fail "anchors on the page with no heading: $(echo $missing)"
		docs_git=$logdir/keda-docs
		rm -rf "$docs_git"
		docs_on=""
		if [ -n "${KEDA_DOCS_DIR:-}" ]; then
			git clone -q --shared "$KEDA_DOCS_DIR" "$docs_git" >"$logdir/docs-clone.log" 2>&1 || fail "git clone $KEDA_DOCS_DIR (log: $logdir/docs-clone.log)"
			docs_base="kedacore/keda-docs at $(cd "$docs_git" && git log -1 --format='%h (%cs)')"
			docs_on=$docs_base
			# Relative links resolve against the docs version; a version that does
			# not exist yet is checked against the newest one that does.
			check_ver=$docs_version
			if [ ! -d "$docs_git/content/docs/$docs_version" ]; then
				check_ver=$(cd "$docs_git/content/docs" && ls -d [0-9]* | sort -V | tail -n 1)
				docs_note="content/docs/$docs_version does not exist in $docs_base yet (keda-docs' CONTRIBUTING, \"Preparing a new version\": it is copied from the current version); the page's links were checked against content/docs/$check_ver."
				echo "    $docs_note"
			fi
			grep -o -E '\]\(\.{1,2}/[^)]+\)' "$page" | sed -E 's/^\]\(//; s/\)$//' | sort -u | while IFS= read -r l; do
				target=$(realpath -m "$docs_git/content/docs/$check_ver/scalers/${l%%#*}")
				if [ ! -f "$target" ]; then
					echo "$l"
				elif [ "$l" != "${l%%#*}" ] && ! slugs "$target" | grep -q -x -F "${l#*#}"; then
					echo "$l (no such heading)"
				fi
			done >"$logdir/docs-broken-links"
			[ -s "$logdir/docs-broken-links" ] && fail "links on the page with no target in keda-docs: $(cat "$logdir/docs-broken-links" | tr '\n' ' ')"
		else
			git init -q "$docs_git" || fail "git init"
			docs_base="nothing (KEDA_DOCS_DIR unset: the patch creates the page; links not checked)"
		fi
		mkdir -p "$docs_git/$(dirname "$docs_page")"
		cp "$page" "$docs_git/$docs_page"
		(cd "$docs_git" && git add "$docs_page" &&
			GIT_AUTHOR_NAME=$author_name GIT_AUTHOR_EMAIL=$author_email GIT_COMMITTER_NAME=$author_name GIT_COMMITTER_EMAIL=$author_email \
				git -c commit.gpgsign=false -c user.name="$author_name" -c user.email="$author_email" commit -q -s -F - <<EOF
Azure Cosmos DB Scaler: the page of the scaler that replaces v2.21.0's

$(sections=$(sed -n 's/^###\{0,1\} \{1,\}//p' "$page" | paste -s -d ';' | sed 's/;/; /g')
echo "The page of the azure-cosmosdb scaler that the kedacore/keda pull requests from \"$(head -n 1 "$src/hack/pr/stack/${stack_names[0]}/commit-1.txt")\" on put in place, as the last of them leaves it.${sections:+ Its sections: $sections.}" | fold -s -w 72 | sed 's/ *$//')
EOF
		) >"$logdir/docs-commit.log" 2>&1 || fail "keda-docs commit (log: $logdir/docs-commit.log)"
		if (cd "$docs_git" && git rev-parse -q --verify HEAD~1 >/dev/null); then
			(cd "$docs_git" && git format-patch --stdout HEAD~1..HEAD) >"$patch_dir/keda-docs.patch"
		else
			(cd "$docs_git" && git format-patch --stdout --root HEAD) >"$patch_dir/keda-docs.patch"
		fi
		[ -s "$patch_dir/keda-docs.patch" ] || fail "keda-docs.patch is empty"
		page_lines=$(wc -l <"$page")
		echo "    $patch_dir/keda-docs.patch: $docs_page ($page_lines lines, limit $limit_docs_page), on $docs_base"
		if [ "$page_lines" -gt "$limit_docs_page" ]; then
			echo "    FAILED: the page is $page_lines lines, over $limit_docs_page (the run goes on and fails at the end)"
			deferred_failures+=("keda-docs.patch: the page is $page_lines lines, limit $limit_docs_page (docs/azure-cosmosdb.md, counted on the generated page)")
		fi
	fi
	done_step

	# --- 4. The claim, tested: git am onto a pristine release -----------------------
	step "git am the pull requests, in order, onto a fresh git init copy of KEDA $keda_version"
	am_dir=$scratch.am
	fresh_copy "$am_dir"
	am_base=$(cd "$am_dir" && git rev-parse HEAD)
	am_head=()
	for ((k = 0; k < ${#pr_head[@]}; k++)); do
		if [ -n "$patch_dir" ]; then am_input=("$patch_dir/${stack_names[k]}"/[0-9][0-9][0-9][0-9]-*.patch); else am_input=("$patch_file"); fi
		(cd "$am_dir" && git -c user.name="$author_name" -c user.email="$author_email" -c commit.gpgsign=false am -q "${am_input[@]}") >"$logdir/git-am-$((k + 1)).log" 2>&1 || {
			tail -n 30 "$logdir/git-am-$((k + 1)).log" >&2
			fail "git am does not apply ${stack_names[k]} on the pull requests before it"
		}
		am_head[k]=$(cd "$am_dir" && git rev-parse HEAD)
		[ -z "$patch_dir" ] && break
		[ "$(cd "$am_dir" && git rev-parse 'HEAD^{tree}')" = "$(cd "$scratch" && git rev-parse "${pr_head[k]}^{tree}")" ] ||
			fail "the tree git am makes of ${stack_names[k]} differs from the pull request's"
	done
	[ "$(cd "$am_dir" && git rev-parse 'HEAD^{tree}')" = "$(cd "$scratch" && git rev-parse 'HEAD^{tree}')" ] ||
		fail "the tree git am makes differs from the patched tree"
	commits=$(cd "$am_dir" && git rev-list --reverse "$am_base..HEAD")
	for c in $commits; do
		(cd "$am_dir" && git log -1 --format=%B "$c") | grep -q -x -F "Signed-off-by: $author_name <$author_email>" ||
			fail "commit $(cd "$am_dir" && git log -1 --format='%h %s' "$c") has no Signed-off-by: $author_name <$author_email>"
		[ "$(cd "$am_dir" && git log -1 --format='%an <%ae>|%cn <%ce>' "$c")" = "$author_name <$author_email>|$author_name <$author_email>" ] || fail "commit $c has another author or committer"
	done
	echo "    $(echo $commits | wc -w) commit(s) in ${#am_head[@]} pull request(s) applied, each signed off by $author_name <$author_email>; each pull request's tree equals the patched one"
	done_step

	if [ "$verify" = build ]; then
		# Each pull request's head, as KEDA would merge it: vet, build, lint,
		# our tests and KEDA's (check_tree, what make intree runs); a commit
		# inside a pull request (the first's scaler before its e2e suites):
		# go vet and build.
		scratch_tree=$scratch
		scratch=$am_dir base=$am_base
		for c in $commits; do
			k=-1
			for ((i = 0; i < ${#am_head[@]}; i++)); do [ "${am_head[i]}" = "$c" ] && k=$i; done
			subject=$(cd "$am_dir" && git log -1 --format=%s "$c")
			(cd "$am_dir" && git checkout -q --detach "$c") || fail "git checkout $c"
			if [ "$k" -lt 0 ]; then
				step "commit $(cd "$am_dir" && git rev-parse --short "$c") (inside a pull request) builds: $subject"
				run "verify-$c.log" go vet $pkgs ./pkg/scaling
				run "verify-build-$c.log" go build -o /dev/null ./cmd/operator
				echo "    go vet $pkgs ./pkg/scaling; go build ./cmd/operator: ok"
				done_step
				continue
			fi
			case " ${INTREE_HEADS:-all} " in *" all "* | *" $((k + 1)) "*) ;; *)
				echo "==> pull request $((k + 1)) (${stack_names[k]}): head not checked (INTREE_HEADS=${INTREE_HEADS:-})"
				continue
				;;
			esac
			echo "==> pull request $((k + 1)) (${stack_names[k]}), head $(cd "$am_dir" && git rev-parse --short "$c"): $subject"
			logdir_tree=$logdir
			logdir=$logdir_tree/pr-$((k + 1)) && mkdir -p "$logdir"
			check_tree
			echo "pull request $((k + 1)): $passed unit tests passed" >"$logdir_tree/checked-$((k + 1))"
			logdir=$logdir_tree
		done
		scratch=$scratch_tree base=$(cd "$scratch" && git rev-list --max-parents=0 HEAD)
	fi

	if [ -n "$patch_dir" ]; then
		step "PULL_REQUEST.md of each pull request, ISSUE.md, the private advisory"
		frag=$logdir/pr
		write_texts
		done_step
	fi
fi

[ -n "$src_tmp" ] && rm -rf "$src_tmp"
if [ "${#deferred_failures[@]}" -gt 0 ]; then
	step_name="(earlier steps)"
	printf '    %s\n' "${deferred_failures[@]}" >&2
	fail "${#deferred_failures[@]} check(s) failed"
fi
echo "in-tree $mode: OK in $(($(date +%s) - script_start))s (scratch tree: $scratch, logs: $logdir${patch_dir:+, pull request: $patch_dir})"
exit 0
}
