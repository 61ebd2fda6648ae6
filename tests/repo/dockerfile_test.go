package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const dockerfile = "deploy/external-scaler.Dockerfile"

// dockerInstruction is one instruction, continuation lines joined.
type dockerInstruction struct {
	cmd  string // upper case: FROM, COPY, RUN, …
	args string
}

func parseDockerfile(t *testing.T, text string) []dockerInstruction {
	t.Helper()
	var out []dockerInstruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		cmd, args, _ := strings.Cut(line, " ")
		out = append(out, dockerInstruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
	}
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		flush()
	}
	flush()
	return out
}

// shellWords splits a RUN line the way sh would for the simple forms the
// Dockerfile uses: spaces, double and single quotes, ${VAR} and $VAR
// replaced from vars.
func shellWords(t *testing.T, s string, vars map[string]string) []string {
	t.Helper()
	expand := func(w string) string {
		return regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`).ReplaceAllStringFunc(w, func(m string) string {
			name := strings.Trim(m, "${}")
			v, ok := vars[name]
			if !ok {
				t.Fatalf("%s uses $%s, which the test does not know", dockerfile, name)
			}
			return v
		})
	}
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				t.Fatalf("unbalanced quote in %q", s)
			}
			cur.WriteString(expand(s[i+1 : i+1+j]))
			i += j + 1
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				t.Fatalf("unbalanced quote in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		default:
			k := strings.IndexAny(s[i:], " \t\"'")
			if k < 0 {
				k = len(s) - i
			}
			cur.WriteString(expand(s[i : i+k]))
			i += k - 1
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// copyTree copies src (a file or directory of the repository) to dst,
// taking only what git tracks or would track (a fresh clone's files, as
// the build context of CI and of a release).
func copyTree(t *testing.T, files []string, src, dst string) {
	t.Helper()
	src = filepath.Clean(src)
	copied := 0
	for _, f := range files {
		rel, err := filepath.Rel(src, f)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		from := filepath.Join(root, f)
		info, err := os.Lstat(from)
		if err != nil || !info.Mode().IsRegular() {
			continue // deleted in the work tree, or not a file
		}
		to := dst
		if rel != "." {
			to = filepath.Join(dst, rel)
		}
		raw, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, raw, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		copied++
	}
	if copied == 0 {
		t.Fatalf("%s: COPY %s copies nothing from the repository", dockerfile, src)
	}
}

// The Dockerfile builds: its build stage's COPY lines are reproduced in an
// empty directory, and the stage's own `go build` command (its flags and
// ldflags, build arguments filled in) builds the command there. A source
// directory the COPY lines miss fails here, not on a user's machine.
// The image side is checked by form: multi-stage, static, non-root,
// TARGETOS/TARGETARCH and version build arguments, an entrypoint.
func TestDockerfileBuildsFromItsCopyLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the external scaler")
	}
	steps := parseDockerfile(t, readRepoFile(t, dockerfile))
	files := strings.Split(strings.TrimSpace(run(t, "git", "ls-files", "--cached", "--others", "--exclude-standard")), "\n")

	var froms []string
	var stage []dockerInstruction // the first (build) stage
	var final []dockerInstruction
	for _, s := range steps {
		if s.cmd == "FROM" {
			froms = append(froms, s.args)
			continue
		}
		switch len(froms) {
		case 1:
			stage = append(stage, s)
		default:
			if len(froms) > 1 {
				final = append(final, s)
			}
		}
	}
	if len(froms) < 2 {
		t.Fatalf("%s has %d stages, want a build stage and a runtime stage", dockerfile, len(froms))
	}
	if !strings.Contains(froms[0], "--platform=$BUILDPLATFORM") {
		t.Errorf("the build stage %q should run on $BUILDPLATFORM and cross-compile", froms[0])
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))
	if goVersion == nil || !strings.Contains(froms[0], "golang:"+goVersion[1]) {
		t.Errorf("the build stage %q does not use the Go of go.mod (%v)", froms[0], goVersion)
	}

	ctx := t.TempDir()
	workdir := ctx
	vars := map[string]string{"VERSION": "v0.0.0-dockerfile-test", "COMMIT": "0123456789abcdef0123456789abcdef01234567"}
	var args []string
	var built string
	for _, s := range stage {
		switch s.cmd {
		case "ARG":
			name, value, _ := strings.Cut(s.args, "=")
			args = append(args, name)
			if _, set := vars[name]; !set {
				vars[name] = value
			}
		case "WORKDIR":
			workdir = filepath.Join(ctx, s.args)
			if err := os.MkdirAll(workdir, 0o755); err != nil {
				t.Fatal(err)
			}
		case "COPY":
			f := strings.Fields(s.args)
			if len(f) < 2 || strings.HasPrefix(f[0], "--") {
				t.Fatalf("COPY %s: the test reads only COPY <src>... <dest>", s.args)
			}
			dest := filepath.Join(workdir, f[len(f)-1])
			for _, src := range f[:len(f)-1] {
				to := dest
				if strings.HasSuffix(f[len(f)-1], "/") {
					to = filepath.Join(dest, filepath.Base(src))
				}
				copyTree(t, files, src, to)
			}
		case "RUN":
			if !strings.Contains(s.args, "go build") {
				continue // go mod download: the module cache already has it
			}
			// The build targets this machine, so the test can run the result.
			vars["TARGETOS"], vars["TARGETARCH"] = runtime.GOOS, runtime.GOARCH
			words := shellWords(t, s.args, vars)
			var env []string
			for len(words) > 0 && strings.Contains(words[0], "=") {
				env = append(env, words[0])
				words = words[1:]
			}
			if len(words) < 2 || words[0] != "go" || words[1] != "build" {
				t.Fatalf("RUN %s: expected [VAR=value...] go build ...", s.args)
			}
			if !slices.Contains(env, "CGO_ENABLED=0") {
				t.Errorf("the go build runs with %v, want CGO_ENABLED=0 (a static binary)", env)
			}
			buildArgs := words[2:]
			if i := slices.Index(buildArgs, "-o"); i >= 0 && i+1 < len(buildArgs) {
				built = buildArgs[i+1]
				buildArgs[i+1] = filepath.Join(ctx, "out", filepath.Base(built))
			} else {
				t.Fatalf("RUN %s: no -o", s.args)
			}
			goBuild(t, workdir, env, buildArgs...)
		}
	}
	for _, want := range []string{"TARGETOS", "TARGETARCH", "VERSION", "COMMIT"} {
		if !slices.Contains(args, want) {
			t.Errorf("the build stage has no ARG %s", want)
		}
	}
	if built == "" {
		t.Fatal("the build stage has no go build")
	}
	bin := filepath.Join(ctx, "out", filepath.Base(built))
	got := runVersion(t, bin)
	if want := "cosmosdb-external-scaler " + vars["VERSION"] + " commit 0123456789ab"; !strings.HasPrefix(got, want) {
		t.Errorf("the binary built as the Dockerfile builds it prints %q, want %q…", got, want)
	}

	var user, entrypoint string
	copiedBinary := false
	for _, s := range final {
		switch s.cmd {
		case "USER":
			user = s.args
		case "ENTRYPOINT":
			entrypoint = s.args
		case "COPY":
			copiedBinary = copiedBinary || strings.Contains(s.args, "--from=") && strings.Contains(s.args, built)
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "0" || u == "root" {
		t.Errorf("the runtime stage runs as %q, want a non-root numeric user", user)
	}
	if !copiedBinary || !strings.Contains(entrypoint, "cosmosdb-external-scaler") {
		t.Errorf("the runtime stage does not copy %s from the build stage and run it (ENTRYPOINT %s)", built, entrypoint)
	}
}
