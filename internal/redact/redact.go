// Package redact is how both commands keep credentials out of what they
// print: the values to scrub (Secrets) and whether a trigger value names an
// environment variable rather than holding a secret (IsEnvVarName).
package redact

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsEnvVarName reports whether s is a portable environment variable name.
// Cosmos DB keys and connection strings always contain '=', so a secret
// value is never taken for a name.
func IsEnvVarName(s string) bool { return envVarName.MatchString(s) }

// Secrets collects credential values that must never be printed.
type Secrets struct{ values []string }

// Add records values to redact and, for a connection string, the account
// key inside it.
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		if v == "" {
			continue
		}
		s.values = append(s.values, v)
		for part := range strings.SplitSeq(v, ";") {
			if name, key, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(strings.TrimSpace(name), "AccountKey") && key != "" {
				s.values = append(s.values, strings.TrimSpace(key))
			}
		}
	}
}

// Redact replaces every recorded secret of at least 4 characters in text
// (shorter ones would garble it without hiding anything worth hiding).
func (s *Secrets) Redact(text string) string {
	long := make([]string, 0, len(s.values))
	for _, v := range s.values {
		if len(v) >= 4 {
			long = append(long, v)
		}
	}
	// Longest first, so a connection string goes before the key inside it.
	sort.SliceStable(long, func(i, j int) bool { return len(long[i]) > len(long[j]) })
	for _, v := range long {
		text = strings.ReplaceAll(text, v, "[redacted]")
	}
	return text
}

// Clone returns an independent copy.
func (s *Secrets) Clone() *Secrets { return &Secrets{values: slices.Clone(s.values)} }
