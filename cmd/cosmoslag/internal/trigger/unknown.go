package trigger

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// unmatchedPrefix starts the scaler's warning for a metadata key it does not
// know (KEDA's own wording: "Unmatched input property KEY in scaler ...").
const unmatchedPrefix = "Unmatched input property "

// unknownMetadataKeys are the problems of the trigger's metadata keys that
// are no parameter of azure-cosmosdb: KEDA ignores such a key, so a typo
// silently leaves the parameter at its default. Each names the nearest
// known parameter when one is close. Key names only, never a value.
func unknownMetadataKeys(metadata map[string]string) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(metadata)) {
		if !slices.Contains(knownParams, key) {
			problems = append(problems, "metadata key "+key+" is not an azure-cosmosdb parameter, so KEDA ignores it"+suggest(key, knownParams))
		}
	}
	return problems
}

// unknownAuthParams are the problems of a TriggerAuthentication's
// parameters (secretTargetRef, configMapTargetRef, env) that are no
// azure-cosmosdb parameter: the scaler never reads them.
func unknownAuthParams(kind, name string, spec *kedav1alpha1.TriggerAuthenticationSpec) []string {
	names := scalerParamNames()
	var problems []string
	seen := map[string]bool{}
	for _, r := range authRefs(spec) {
		if slices.Contains(names, r.param) || seen[r.param] {
			continue
		}
		seen[r.param] = true
		problems = append(problems, fmt.Sprintf("%s %s: parameter %s is not an azure-cosmosdb parameter, so the scaler never reads it%s", kind, name, r.param, suggest(r.param, names)))
	}
	return problems
}

// scalerParamNames are the trigger's parameter names, without their
// ...FromEnv forms.
func scalerParamNames() []string {
	var names []string
	for _, k := range knownParams {
		if !strings.HasSuffix(k, "FromEnv") {
			names = append(names, k)
		}
	}
	return names
}

// withSuggestion adds the nearest known name to the scaler's warning for an
// unknown metadata key, and drops the "Warning: " the scaler's own log
// line starts with (the commands print their own "warning:" label).
func withSuggestion(warning string) string {
	warning = strings.TrimPrefix(warning, "Warning: ")
	if rest, ok := strings.CutPrefix(warning, unmatchedPrefix); ok {
		key, _, _ := strings.Cut(rest, " ")
		return warning + ": KEDA ignores it" + suggest(key, knownParams)
	}
	return warning
}

// OtherWarnings are the warnings but the unknown-key ones of the trigger's
// metadata, which Unknown holds as problems (validate reports those as
// errors; an unknown --set key stays a warning).
func (s *Setup) OtherWarnings() []string {
	var other []string
	for _, w := range s.Warnings {
		if rest, ok := strings.CutPrefix(w, unmatchedPrefix); ok {
			key, _, _ := strings.Cut(rest, " ")
			if _, inMetadata := s.metadataKeys[key]; inMetadata {
				continue
			}
		}
		other = append(other, w)
	}
	return other
}

// suggest is "; did you mean NAME?" for the known name nearest to key, or
// where the parameters are listed when none is close.
func suggest(key string, known []string) string {
	if name := nearest(key, known); name != "" {
		return "; did you mean " + name + "?"
	}
	return " (the parameters are listed in docs/configuration.md)"
}

// nearest is the known name closest to key by edit distance, ignoring
// case, when it is close enough to be a typo: at most 2 edits, or a third
// of the key's length for longer keys; "" otherwise.
func nearest(key string, known []string) string {
	limit := max(2, len(key)/3)
	best, bestDistance := "", limit+1
	for _, name := range known {
		if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDistance {
			best, bestDistance = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
