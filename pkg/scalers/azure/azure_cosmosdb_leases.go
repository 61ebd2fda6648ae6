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
	ID, Token, Owner      string // Token: a range id (v0) or "min-max" (v1); Owner: the instance holding it
	EPK                   bool   // a v1 lease of [Min, Max), read through the range containing it
	Min, Max              string
	Continuation          string // the checkpointed change feed etag, a quoted LSN
	AllVersionsAndDeletes bool   // else the processor reads latest versions
}

// CosmosDBSkippedDocument is a document of the processor's leases on this
// container that is not counted, and why; the trigger ignores them.
type CosmosDBSkippedDocument struct {
	ID, Token, Reason string
}

// cosmosDBLeaseScope names one processor's leases on one container: ids
// {processor}{accountHost}_{databaseRid}_{containerRid}..{token} (names for Java v0).
type cosmosDBLeaseScope struct {
	processor, account        string
	databaseRID, containerRID string
	databaseID, containerID   string
}

// owns reports whether id is a lease of the scope; anyContainer relaxes the
// container part, to notice stale RIDs.
func (s cosmosDBLeaseScope) owns(id string, anyContainer bool) bool {
	rest, ok := strings.CutPrefix(id, s.processor)
	if !ok {
		return false
	}
	host, container, ok := strings.Cut(rest, "_") // hosts and RIDs hold no '_'
	if !ok || !s.accountMatches(cosmosDBAccountName(host)) {
		return false
	}
	if anyContainer {
		return strings.Contains(container, "..")
	}
	for _, names := range [][2]string{{s.databaseRID, s.containerRID}, {s.databaseID, s.containerID}} {
		if token, ok := strings.CutPrefix(container, names[0]+"_"+names[1]+".."); ok && token != "" && names[0] != "" && names[1] != "" {
			return true
		}
	}
	return false
}

// accountMatches accepts the account's name, and a regional host label
// "<account>-<region>" on either side (processor or scaler).
func (s cosmosDBLeaseScope) accountMatches(name string) bool {
	regional := func(label, account string) bool {
		region, ok := strings.CutPrefix(label, account+"-")
		return ok && region != "" && strings.Trim(region, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
	}
	return name == s.account || regional(name, s.account) || regional(s.account, name)
}

// cosmosDBLeases is what the lease query found: the scope's leases, its
// documents that are not counted, and how many name another container of
// this processor (strangers).
type cosmosDBLeases struct {
	leases    []CosmosDBLease
	skipped   []CosmosDBSkippedDocument
	strangers int
}

// readCosmosDBLeases reads every page of the documents whose id starts with
// the processor name, in pages of 1,000: the lease query is a poll's serial part.
func readCosmosDBLeases(ctx context.Context, c *CosmosDBClient, database, container string, scope cosmosDBLeaseScope) (found cosmosDBLeases, cost CosmosDBCost, err error) {
	query, err := json.Marshal(map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": scope.processor}},
	})
	if err != nil {
		return found, cost, err
	}
	req := cosmosDBRequest{operation: "query leases in " + cosmosDBExcerpt(database) + "/" + cosmosDBExcerpt(container),
		method: http.MethodPost, url: c.url("dbs", database, "colls", container, "docs"), query: query, ok: []int{http.StatusOK},
		header: http.Header{
			"X-Ms-Documentdb-Isquery":                    {"True"},
			"X-Ms-Documentdb-Query-Enablecrosspartition": {"True"},
			"X-Ms-Max-Item-Count":                        {"1000"},
		}}
	cost, err = c.sendPages(ctx, req, func(body []byte) error {
		documents, err := decodeCosmosDBLeasePage(body)
		if err != nil {
			return fmt.Errorf("%s: malformed response body: %w", req.operation, err)
		}
		for _, doc := range documents {
			if !scope.owns(doc.ID, false) {
				if scope.owns(doc.ID, true) {
					found.strangers++
				}
			} else if l, reason := doc.lease(); reason == "" {
				found.leases = append(found.leases, l)
			} else {
				found.skipped = append(found.skipped, CosmosDBSkippedDocument{ID: doc.ID, Token: l.Token, Reason: reason})
			}
		}
		return nil
	})
	return found, cost, err
}

// decodeCosmosDBLeasePage decodes a page's documents; when one does not
// decode as a lease, they are decoded one by one and it is marked skipped.
func decodeCosmosDBLeasePage(body []byte) ([]cosmosDBLeaseDocument, error) {
	var page struct{ Documents []cosmosDBLeaseDocument }
	if err := json.Unmarshal(body, &page); !errors.As(err, new(*json.UnmarshalTypeError)) {
		return page.Documents, err
	}
	var raw struct{ Documents []json.RawMessage }
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, err
	}
	documents := make([]cosmosDBLeaseDocument, 0, len(raw.Documents))
	for _, doc := range raw.Documents {
		var d cosmosDBLeaseDocument
		if err := json.Unmarshal(doc, &d); err != nil {
			d = cosmosDBLeaseDocument{skipped: "not decodable"}
			_ = json.Unmarshal(doc, &struct{ ID *string }{&d.ID})
		}
		documents = append(documents, d)
	}
	return documents, nil
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
	Owner             string            `json:"Owner"`
	Mode              string            `json:"Mode"` // .NET v3 leases
	skipped           string            // why the document did not decode
}

type cosmosDBEPKRange struct {
	Range struct{ Min, Max *string } `json:"Range"`
}

// lease decodes the document, or says why it is not a lease.
func (doc cosmosDBLeaseDocument) lease() (CosmosDBLease, string) {
	// PartitionId: the .NET v2 library.
	l := CosmosDBLease{ID: doc.ID, Token: cmp.Or(doc.LeaseToken, doc.PartitionID), Owner: doc.Owner, AllVersionsAndDeletes: parseCosmosDBMode(doc.Mode)}
	switch {
	case doc.skipped != "":
		return l, doc.skipped
	case l.Token == "":
		return l, "no lease token"
	case strings.TrimSpace(doc.ContinuationToken) == "":
		return l, cosmosDBNeverCheckpointed
	case doc.Version == 1:
		return doc.epkLease(l)
	case doc.Version != 0:
		return l, "unknown version"
	}
	var ok bool
	if l.Continuation, ok = normalizeCosmosDBEtag(doc.ContinuationToken); !ok {
		return l, "malformed continuation"
	}
	return l, ""
}

// cosmosDBNeverCheckpointed: a lease the processor has not checkpointed yet.
const cosmosDBNeverCheckpointed = "never checkpointed"

func (doc cosmosDBLeaseDocument) epkLease(l CosmosDBLease) (CosmosDBLease, string) {
	r := doc.FeedRange // .NET; Java writes feedRange
	if doc.JavaFeedRange != nil {
		r = doc.JavaFeedRange
	}
	if r == nil || r.Range.Min == nil || r.Range.Max == nil || *r.Range.Max == "" || strings.ToUpper(*r.Range.Min) >= strings.ToUpper(*r.Range.Max) {
		return l, "malformed range"
	}
	l.EPK, l.Min, l.Max = true, strings.ToUpper(*r.Range.Min), strings.ToUpper(*r.Range.Max)
	var ok bool
	if l.Continuation, ok = normalizeCosmosDBEtag(doc.ContinuationToken); ok {
		return l, ""
	}
	// Java v4 keeps a Base64 JSON state: the etag is the token of the entry
	// starting at the lease's min, and the state records the mode.
	state, ok := decodeCosmosDBJavaState(doc.ContinuationToken)
	if !ok || len(state.Continuation.Continuation) == 0 {
		return l, "malformed continuation"
	}
	entry := state.Continuation.Continuation[0]
	for _, e := range state.Continuation.Continuation {
		if e.Range.Min != nil && strings.EqualFold(*e.Range.Min, l.Min) {
			entry = e
			break
		}
	}
	l.AllVersionsAndDeletes = parseCosmosDBMode(state.Mode)
	if entry.Token == nil {
		return l, cosmosDBNeverCheckpointed
	}
	if l.Continuation, ok = normalizeCosmosDBEtag(*entry.Token); !ok {
		return l, "malformed continuation"
	}
	return l, ""
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

// decodeCosmosDBJavaState: Java writes URL-safe Base64 with padding
// (ChangeFeedState.toString, Base64.getUrlEncoder); others are tolerated.
func decodeCosmosDBJavaState(encoded string) (cosmosDBJavaState, bool) {
	var state cosmosDBJavaState
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.StdEncoding, base64.RawURLEncoding, base64.RawStdEncoding} {
		if raw, err := enc.DecodeString(encoded); err == nil {
			return state, json.Unmarshal(raw, &state) == nil
		}
	}
	return state, false
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
