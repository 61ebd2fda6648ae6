package trigger

import "testing"

// A typo's nearest parameter is named; a key near none gets no guess.
func TestNearestParameter(t *testing.T) {
	for key, want := range map[string]string{
		"changeFeedLagTreshold":  "changeFeedLagThreshold",
		"changefeedlagthreshold": "changeFeedLagThreshold",
		"databaseID":             "databaseId",
		"leaseConection":         "leaseConnection",
		"procesorName":           "processorName",
		"queueLength":            "",
		"x":                      "",
	} {
		if got := nearest(key, knownParams); got != want {
			t.Errorf("nearest(%q) = %q, want %q", key, got, want)
		}
	}
}
