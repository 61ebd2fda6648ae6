package redact

import (
	"strings"
	"testing"
)

func TestSecretsRedact(t *testing.T) {
	var s Secrets
	s.Add("", "abc=", "AccountEndpoint=https://a.documents.azure.com/;AccountKey=a2V5LWZvci10ZXN0cw==;", "ab")
	for _, tc := range []struct{ in, want string }{
		{"key abc=, again abc=", "key [redacted], again [redacted]"},
		{"conn AccountEndpoint=https://a.documents.azure.com/;AccountKey=a2V5LWZvci10ZXN0cw==; key a2V5LWZvci10ZXN0cw==", "conn [redacted] key [redacted]"},
		{"ab is too short to hide", "ab is too short to hide"},
	} {
		if got := s.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	c := s.Clone()
	c.Add("only-in-the-clone")
	if strings.Contains(c.Redact("only-in-the-clone"), "only") || !strings.Contains(s.Redact("only-in-the-clone"), "only") {
		t.Error("Clone shares its values with the original")
	}
}

func TestIsEnvVarName(t *testing.T) {
	for name, want := range map[string]bool{"COSMOS_CONNECTION": true, "_x1": true, "1X": false, "": false, "a=b": false, "AccountKey=abc==": false} {
		if got := IsEnvVarName(name); got != want {
			t.Errorf("IsEnvVarName(%q) = %v", name, got)
		}
	}
}
