package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// cosmoslag's packages under internal/: one per command, over shared ones.
var (
	commandPackages = []string{"check", "demo", "serve", "tune", "validate"}
	sharedPackages  = []string{"cli", "hpamodel", "poll", "sim", "trigger"}
	// testPackages hold helpers for tests only.
	testPackages = []string{"clitest"}
)

const internalPath = "github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/"

// internalImports lists, per package directory under internal/, the
// cosmoslag packages its files import: those of its code, and those of its
// tests.
func internalImports(t *testing.T) (code, tests map[string][]string) {
	t.Helper()
	code, tests = map[string][]string{}, map[string][]string{}
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		code[d.Name()], tests[d.Name()] = []string{}, []string{}
		files, err := filepath.Glob(filepath.Join("internal", d.Name(), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				name, ok := strings.CutPrefix(path, internalPath)
				if !ok {
					continue
				}
				into := code
				if strings.HasSuffix(file, "_test.go") {
					into = tests
				}
				if !slices.Contains(into[d.Name()], name) {
					into[d.Name()] = append(into[d.Name()], name)
				}
			}
		}
	}
	return code, tests
}

// Each command is a package of its own that imports only shared packages,
// never another command's; a shared package imports no command; only tests
// import the test helpers; and every package under internal/ is one of
// these kinds, so a new one has to be placed.
func TestCommandsImportOnlySharedPackages(t *testing.T) {
	code, tests := internalImports(t)
	for dir := range code {
		if !slices.Contains(commandPackages, dir) && !slices.Contains(sharedPackages, dir) && !slices.Contains(testPackages, dir) {
			t.Errorf("internal/%s is neither a command's package nor a shared one: add it to commandPackages or sharedPackages", dir)
		}
	}
	for _, cmd := range commandPackages {
		if _, ok := code[cmd]; !ok {
			t.Errorf("no package internal/%s for command %s", cmd, cmd)
		}
	}
	for dir, imports := range code {
		for _, imp := range imports {
			switch {
			case slices.Contains(commandPackages, imp):
				t.Errorf("internal/%s imports command package internal/%s: commands share code only through shared packages", dir, imp)
			case slices.Contains(testPackages, imp):
				t.Errorf("internal/%s imports the test helpers internal/%s outside its tests", dir, imp)
			}
		}
	}
	// Tests may run other commands (check's compare it with validate, run
	// serve to reach), but the test helpers themselves import none.
	for _, imp := range append(code["clitest"], tests["clitest"]...) {
		if slices.Contains(commandPackages, imp) {
			t.Errorf("internal/clitest imports command package internal/%s", imp)
		}
	}
}

// The rule above has something to hold: the command packages do import
// shared ones, as the layout says.
func TestCommandsUseSharedPackages(t *testing.T) {
	code, _ := internalImports(t)
	for cmd, want := range map[string][]string{
		"check": {"cli", "poll", "trigger", "hpamodel"},
		"tune":  {"cli", "poll", "trigger", "hpamodel", "sim"},
		"demo":  {"cli", "hpamodel", "sim"},
	} {
		for _, w := range want {
			if !slices.Contains(code[cmd], w) {
				t.Errorf("internal/%s does not import internal/%s (imports %q)", cmd, w, code[cmd])
			}
		}
	}
}
