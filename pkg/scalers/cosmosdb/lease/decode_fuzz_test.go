package lease

import (
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzDecode feeds the lease decoder arbitrary documents, seeded with every
// real writer's format. Whatever the input, a decoded lease must carry a
// token, a quoted numeric etag and, for EPK leases, an ordered range.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id":"p..0","version":0,"LeaseToken":"0","FeedRange":{"Range":{"min":"","max":"FF"}},"Owner":"h","ContinuationToken":"\"24\"","properties":{},"Mode":"Incremental Feed"}`,
		`{"id":"p..05C1DFFFFFFFFC-FF","version":1,"LeaseToken":"05C1DFFFFFFFFC-FF","FeedRange":{"Range":{"min":"05C1DFFFFFFFFC","max":"FF"}},"Owner":null,"ContinuationToken":"\"100\""}`,
		`{"id":"p..3","LeaseToken":"3","ContinuationToken":"\"11\"","timestamp":"x","Owner":"ZKNjph"}`,
		`{"id":"p..-FF","LeaseToken":"-FF","ContinuationToken":"` + encodeJavaState(`"\"11\""`) + `","Owner":"Z","version":1,"feedRange":{"Range":{"min":"","max":"FF","isMinInclusive":true,"isMaxInclusive":false}}}`,
		`{"id":"p..7","PartitionId":"7","Owner":"w","ContinuationToken":"\"5\""}`,
		`{"id":"p..0","version":0,"LeaseToken":"0","ContinuationToken":"\"24\"","Mode":"Full-Fidelity Feed"}`,
		`{"id":"p..-FF","LeaseToken":"-FF","version":1,"feedRange":{"Range":{"min":"","max":"FF"}},"ContinuationToken":"` + encodeJavaStateWithMode(base64.URLEncoding, "c==", "FULL_FIDELITY", "NOW", `"\"9\""`) + `"}`,
		`{"id":"p.info"}`, `{"id":"p.lock","ttl":60}`, `[]`, `null`, `{"version":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, err := Decode(raw)
		if err != nil {
			return
		}
		if l.Token == "" {
			t.Fatalf("lease without token from %q", raw)
		}
		digits := strings.Trim(l.Continuation, `"`)
		if len(l.Continuation) != len(digits)+2 || digits == "" || strings.Trim(digits, "0123456789") != "" {
			t.Fatalf("continuation %q is not a quoted LSN", l.Continuation)
		}
		if l.UnknownMode != "" && l.Mode != LatestVersion {
			t.Fatalf("unknown mode %q read as %v, want latest version", l.UnknownMode, l.Mode)
		}
		if l.EPK && (l.Max == "" || l.Min >= l.Max) {
			t.Fatalf("EPK lease with range [%q, %q)", l.Min, l.Max)
		}
	})
}
