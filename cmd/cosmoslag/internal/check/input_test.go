package check

import (
	"os"
	"strings"
	"testing"

	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/cli"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/clitest"
	"github.com/kedacore/keda-cosmosdb-scaler/cmd/cosmoslag/internal/trigger"
)

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// -f - reads standard input; a kind: List's items and a file's documents
// are all read; a bare triggers: fragment (a list, or a mapping with
// triggers:) is read as a ScaledObject's triggers, with a note.
func TestCheckInputForms(t *testing.T) {
	const wantTotal = "Total lag          155 over 3 lease(s)"
	fragment := `- type: azure-cosmosdb
  metadata:
    databaseId: shop
    containerId: orders
    leaseDatabaseId: shop
    leaseContainerId: leases
    processorName: order-projector
`
	item := func(doc string) string { return "  - " + strings.TrimPrefix(indent(doc, "    "), "    ") }
	list := "apiVersion: v1\nkind: List\nitems:\n" + item(clitest.ScaledObjectYAML) + item(clitest.TriggerAuthYAML)
	for _, tc := range []struct {
		name, input string
		stdin       bool
		note        string
	}{
		{"stdin, two documents", clitest.ScaledObjectYAML + "---\n" + clitest.TriggerAuthYAML, true, ""},
		{"kind: List", list, false, ""},
		{"kind: List on stdin", list, true, ""},
		{"fragment: a list of triggers", fragment, false, "bare triggers: fragment"},
		{"fragment: triggers:", "triggers:\n" + indent(fragment, "  "), true, "bare triggers: fragment"},
	} {
		args := []string{"check", "--emulator", "-f"}
		if tc.stdin {
			trigger.Stdin = strings.NewReader(tc.input)
			args = append(args, "-")
		} else {
			args = append(args, clitest.WriteFile(t, t.TempDir(), "in.yaml", tc.input))
		}
		code, stdout, stderr := runCmd(t, args...)
		trigger.Stdin = os.Stdin
		if code != cli.ExitOK || !strings.Contains(stdout, wantTotal) {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", tc.name, code, stdout, stderr)
			continue
		}
		if tc.note != "" && !strings.Contains(stderr, "note: "+"standard input") && !strings.Contains(stderr, "note: /") {
			t.Errorf("%s: the note does not name the input: %q", tc.name, stderr)
		}
		if !strings.Contains(stderr, tc.note) {
			t.Errorf("%s: stderr has no note %q: %q", tc.name, tc.note, stderr)
		}
		if tc.note == "" && strings.Contains(stderr, "fragment") {
			t.Errorf("%s: unexpected fragment note: %q", tc.name, stderr)
		}
	}
}
