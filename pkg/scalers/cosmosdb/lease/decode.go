package lease

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// document holds the fields of every known lease format. encoding/json
// prefers exact key matches, so .NET's "FeedRange" and Java's "feedRange"
// land in their own fields.
type document struct {
	ID                string     `json:"id"`
	Version           *int       `json:"version"`
	LeaseToken        string     `json:"LeaseToken"`
	PartitionID       string     `json:"PartitionId"`
	ContinuationToken *string    `json:"ContinuationToken"`
	FeedRange         *feedRange `json:"FeedRange"`
	JavaFeedRange     *feedRange `json:"feedRange"`
	Owner             *string    `json:"Owner"`
	Mode              *string    `json:"Mode"` // .NET v3 leases (v0 and v1)
}

type feedRange struct {
	Range *epkRange `json:"Range"`
}

type epkRange struct {
	Min *string `json:"min"`
	Max *string `json:"max"`
}

// javaState is the Java v4 SDK's Base64-encoded continuation state.
type javaState struct {
	Mode         *string `json:"Mode"`
	Continuation *struct {
		Continuation []struct {
			Token *string  `json:"token"`
			Range epkRange `json:"range"`
		} `json:"Continuation"`
	} `json:"Continuation"`
}

// errNotALease marks documents the trigger ignores as non-lease metadata:
// undecodable, or without a lease token or continuation token.
var errNotALease = errors.New("not a lease")

// Decode turns one document of the lease container into a Lease. Documents
// that are not leases (store markers, locks, leases not yet checkpointed,
// anything malformed) return errNotALease.
func Decode(raw []byte) (Lease, error) {
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Lease{}, errNotALease
	}
	return doc.lease()
}

func (doc document) lease() (Lease, error) {
	l := Lease{ID: doc.ID, Token: doc.LeaseToken}
	if doc.Owner != nil {
		l.Owner = *doc.Owner
	}
	if l.Token == "" {
		l.Token = doc.PartitionID
	}
	if l.Token == "" || doc.ContinuationToken == nil || strings.TrimSpace(*doc.ContinuationToken) == "" {
		return Lease{}, errNotALease
	}
	continuation := *doc.ContinuationToken
	l.Mode, l.UnknownMode = parseMode(doc.Mode)

	if doc.Version != nil && *doc.Version == 1 {
		return decodeEPK(l, doc, continuation)
	}
	if doc.Version != nil && *doc.Version != 0 {
		return Lease{}, errNotALease // a future format we cannot read faithfully
	}
	switch {
	case doc.LeaseToken == "":
		l.Format = DotNetV2Library
	case doc.Version != nil:
		l.Format = DotNetV0
	default:
		l.Format = JavaV0
	}
	etag, ok := normalizeEtag(continuation)
	if !ok {
		return Lease{}, errNotALease
	}
	l.Continuation = etag
	return l, nil
}

func decodeEPK(l Lease, doc document, continuation string) (Lease, error) {
	l.EPK = true
	r := doc.FeedRange
	l.Format = DotNetV1
	if doc.JavaFeedRange != nil {
		r, l.Format = doc.JavaFeedRange, JavaV1
	}
	if r == nil || r.Range == nil || r.Range.Min == nil || r.Range.Max == nil {
		return Lease{}, errNotALease
	}
	l.Min, l.Max = strings.ToUpper(*r.Range.Min), strings.ToUpper(*r.Range.Max)
	if l.Max == "" || l.Min >= l.Max {
		return Lease{}, errNotALease
	}
	if etag, ok := normalizeEtag(continuation); ok {
		l.Continuation = etag
		return l, nil
	}
	// Java v4 keeps a Base64 JSON state; the etag is the token of the entry
	// for this lease's range (the entry starting at its min when several),
	// and the state records the processor's mode.
	state, ok := decodeJavaState(continuation)
	if !ok {
		return Lease{}, errNotALease
	}
	etag, ok := state.continuation(l.Min)
	if !ok {
		return Lease{}, errNotALease
	}
	l.Format = JavaV1
	l.Continuation = etag
	l.Mode, l.UnknownMode = parseMode(state.Mode)
	return l, nil
}

// javaStateEncodings: Java v4 writes the state with the URL-safe alphabet
// and padding (ChangeFeedState.toString, Base64.getUrlEncoder); the others
// are tolerated. The alphabets differ only in '+'/'-' and '/'/'_', so a
// state whose encoding holds neither decodes under both.
var javaStateEncodings = []*base64.Encoding{base64.URLEncoding, base64.StdEncoding, base64.RawURLEncoding, base64.RawStdEncoding}

func decodeJavaState(encoded string) (javaState, bool) {
	for _, enc := range javaStateEncodings {
		raw, err := enc.DecodeString(encoded)
		if err != nil {
			continue
		}
		var state javaState
		if json.Unmarshal(raw, &state) != nil {
			return javaState{}, false
		}
		return state, true
	}
	return javaState{}, false
}

func (state javaState) continuation(min string) (string, bool) {
	if state.Continuation == nil || len(state.Continuation.Continuation) == 0 {
		return "", false
	}
	entries := state.Continuation.Continuation
	chosen := entries[0]
	for _, e := range entries {
		if e.Range.Min != nil && strings.EqualFold(*e.Range.Min, min) {
			chosen = e
			break
		}
	}
	if chosen.Token == nil {
		return "", false
	}
	return normalizeEtag(*chosen.Token)
}

// normalizeEtag accepts the change feed etags processors checkpoint, a quoted
// LSN ("\"24\""), tolerating a bare number, and returns the quoted form that
// If-None-Match expects.
func normalizeEtag(s string) (string, bool) {
	digits := strings.Trim(strings.TrimSpace(s), `"`)
	if digits == "" || len(digits) > 19 {
		return "", false
	}
	for _, r := range digits {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return `"` + digits + `"`, true
}
