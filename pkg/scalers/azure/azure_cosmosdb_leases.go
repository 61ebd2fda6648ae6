package azure

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// CosmosDBLease is what the estimator needs from one lease document.
type CosmosDBLease struct {
	Token                 string // a range id (v0) or "min-max" (v1)
	EPK                   bool   // a v1 lease of [Min, Max), read through the range containing it
	Min, Max              string
	Continuation          string // the checkpointed change feed etag, a quoted LSN
	AllVersionsAndDeletes bool   // else the processor reads latest versions
}

// cosmosDBLeaseScope names one processor's leases on one container: ids
// {processor}{accountHost}_{databaseRid}_{containerRid}..{token} (names for Java v0).
type cosmosDBLeaseScope struct {
	processor, account        string
	databaseRID, containerRID string
	databaseID, containerID   string
	others                    map[string]bool // other containers' id parts met since the RIDs were read; never changed once kept
}

// leaseContainer is the "{database}_{container}" part of a lease id of the
// scope's processor on its account.
func (s cosmosDBLeaseScope) leaseContainer(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, s.processor)
	if !ok {
		return "", false
	}
	host, rest, ok := strings.Cut(rest, "_") // hosts and RIDs hold no '_'
	if !ok || cosmosDBAccountName(host) != s.account {
		return "", false
	}
	at := strings.LastIndex(rest, "..") // tokens hold no '.'
	if at <= 0 || at+2 == len(rest) {
		return "", false
	}
	return rest[:at], true
}

// ownsContainer reports whether a lease id's container part names the
// scope's container, by RIDs or by names.
func (s cosmosDBLeaseScope) ownsContainer(container string) bool {
	return (s.databaseRID != "" && s.containerRID != "" && container == s.databaseRID+"_"+s.containerRID) ||
		(s.databaseID != "" && s.containerID != "" && container == s.databaseID+"_"+s.containerID)
}

// readCosmosDBLeases reads every page (of up to 1,000) of the documents whose
// id starts with the processor name, handing each to each as its page
// arrives; each page's request takes a place within bound, the monitored
// container's.
func readCosmosDBLeases(ctx context.Context, c *CosmosDBClient, bound *cosmosDBContainer, database, container, processor string, each func(cosmosDBLeaseDocument) error) error {
	query, err := json.Marshal(map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": processor}},
	})
	if err != nil {
		return err
	}
	req := cosmosDBRequest{operation: "query leases in " + cosmosDBExcerpt(database) + "/" + cosmosDBExcerpt(container),
		method: http.MethodPost, url: c.url("dbs", database, "colls", container, "docs"), query: query, ok: []int{http.StatusOK}, container: bound, quiet: true,
		header: http.Header{
			"X-Ms-Documentdb-Isquery":                    {"True"},
			"X-Ms-Documentdb-Query-Enablecrosspartition": {"True"},
			"X-Ms-Max-Item-Count":                        {"1000"},
		}}
	return c.sendPages(ctx, req, func(body []byte) error {
		documents, err := decodeCosmosDBLeasePage(body)
		if err != nil {
			return fmt.Errorf("%s: malformed response body: %w", req.operation, err)
		}
		for _, doc := range documents {
			if err := each(doc); err != nil {
				return err
			}
		}
		return nil
	})
}

// decodeCosmosDBLeasePage decodes a page's documents in one pass; when one
// does not decode (a field of another type), one by one, so the others count.
func decodeCosmosDBLeasePage(body []byte) ([]cosmosDBLeaseDocument, error) {
	var page struct{ Documents []cosmosDBLeaseDocument }
	if err := json.Unmarshal(body, &page); !errors.As(err, new(*json.UnmarshalTypeError)) {
		return page.Documents, err
	}
	var raw struct{ Documents []json.RawMessage }
	err := json.Unmarshal(body, &raw)
	documents := make([]cosmosDBLeaseDocument, len(raw.Documents))
	for i, doc := range raw.Documents {
		if json.Unmarshal(doc, &documents[i]) != nil {
			documents[i] = cosmosDBLeaseDocument{undecodable: true}
			_ = json.Unmarshal(doc, &struct{ ID *string }{&documents[i].ID})
		}
	}
	return documents, err
}

// cosmosDBLeaseDocument holds every format's fields; exact key matches win,
// so .NET's "FeedRange" and Java's "feedRange" stay apart.
type cosmosDBLeaseDocument struct {
	ID                string            `json:"id"`
	Version           int               `json:"version"`
	LeaseToken        string            `json:"LeaseToken"`
	PartitionID       string            `json:"PartitionId"`
	ContinuationToken string            `json:"ContinuationToken"`
	FeedRange         *cosmosDBEPKRange `json:"FeedRange"`
	JavaFeedRange     *cosmosDBEPKRange `json:"feedRange"`
	Mode              string            `json:"Mode"` // .NET v3 leases
	undecodable       bool
}

type cosmosDBEPKRange struct {
	Range struct{ Min, Max *string } `json:"Range"`
}

// lease decodes the document; ok is false for one the trigger does not count:
// undecodable, no lease token or continuation, unknown version, malformed.
func (doc cosmosDBLeaseDocument) lease() (l CosmosDBLease, ok bool) {
	// PartitionId: the .NET v2 library.
	l = CosmosDBLease{Token: cmp.Or(doc.LeaseToken, doc.PartitionID), AllVersionsAndDeletes: parseCosmosDBMode(doc.Mode)}
	switch {
	case doc.undecodable || l.Token == "" || strings.TrimSpace(doc.ContinuationToken) == "":
		return l, false
	case doc.Version == 1:
		return doc.epkLease(l)
	case doc.Version != 0:
		return l, false
	}
	l.Continuation, ok = normalizeCosmosDBEtag(doc.ContinuationToken)
	return l, ok
}

func (doc cosmosDBLeaseDocument) epkLease(l CosmosDBLease) (CosmosDBLease, bool) {
	r := doc.FeedRange // .NET; Java writes feedRange
	if doc.JavaFeedRange != nil {
		r = doc.JavaFeedRange
	}
	if r == nil || r.Range.Min == nil || r.Range.Max == nil || *r.Range.Max == "" || strings.ToUpper(*r.Range.Min) >= strings.ToUpper(*r.Range.Max) {
		return l, false
	}
	l.EPK, l.Min, l.Max = true, strings.ToUpper(*r.Range.Min), strings.ToUpper(*r.Range.Max)
	var ok bool
	if l.Continuation, ok = normalizeCosmosDBEtag(doc.ContinuationToken); ok {
		return l, true
	}
	// Java v4 keeps a Base64 JSON state: the etag is the token of the entry
	// starting at the lease's min, and the state records the mode.
	state, ok := decodeCosmosDBJavaState(doc.ContinuationToken)
	if !ok {
		return l, false
	}
	l.AllVersionsAndDeletes = parseCosmosDBMode(state.Mode)
	token := state.token(l.Min)
	if token == nil { // never checkpointed
		return l, false
	}
	l.Continuation, ok = normalizeCosmosDBEtag(*token)
	return l, ok
}

// cosmosDBJavaState is the Java v4 SDK's change feed state.
type cosmosDBJavaState struct {
	Mode         string
	Continuation struct {
		Continuation []struct {
			Token *string `json:"token"`
			Range struct {
				Min *string `json:"min"`
			} `json:"range"`
		}
	}
}

// token is the continuation of the entry starting at rangeMin, else the first's.
func (s cosmosDBJavaState) token(rangeMin string) *string {
	entries := s.Continuation.Continuation
	for _, e := range entries {
		if e.Range.Min != nil && strings.EqualFold(*e.Range.Min, rangeMin) {
			return e.Token
		}
	}
	if len(entries) == 0 {
		return nil
	}
	return entries[0].Token
}

// decodeCosmosDBJavaState: Java writes URL-safe Base64 with padding
// (ChangeFeedState.toString); standard Base64 is the one fallback.
func decodeCosmosDBJavaState(encoded string) (cosmosDBJavaState, bool) {
	var state cosmosDBJavaState
	raw, err := base64.URLEncoding.DecodeString(encoded)
	if err != nil {
		raw, err = base64.StdEncoding.DecodeString(encoded)
	}
	if err == nil {
		err = json.Unmarshal(raw, &state)
	}
	return state, err == nil
}

// parseCosmosDBMode reads a mode case-insensitively: .NET v3 writes the A-IM
// value ("Full-Fidelity Feed"), Java v4 its enum name (FULL_FIDELITY). Any
// other, or none, is latest version ("Incremental Feed", INCREMENTAL).
func parseCosmosDBMode(mode string) (allVersionsAndDeletes bool) {
	mode = strings.ToLower(strings.TrimSpace(mode))
	return mode == "full-fidelity feed" || mode == "full_fidelity"
}

// normalizeCosmosDBEtag takes a checkpointed etag, a quoted or bare LSN, and
// quotes it for If-None-Match.
func normalizeCosmosDBEtag(s string) (string, bool) {
	digits := strings.Trim(strings.TrimSpace(s), `"`)
	if digits == "" || len(digits) > 19 || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	return `"` + digits + `"`, true
}
