package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/azure"
	kedautil "github.com/kedacore/keda/v2/pkg/util"
)

// check's diagnosis: after the estimate, which the scaler makes, check reads
// what the estimate does not report, with the same accounts and keys:
//   - the monitored container's partition key ranges, when a lease is a
//     stale parent or an EPK lease, to tell a lease whose range merged from
//     one whose range split;
//   - this processor's lease documents, when the ScaledObject can scale to
//     zero, to find the leases the estimate did not count (never
//     checkpointed): changes on their partitions would not wake it.
//
// The connections are those the scaler resolved (azure.ResolveCosmosDBConnections,
// so its rules on which hosts a key may go to hold); the requests are signed
// with the account's key. Bearer-token accounts are not read: what needs the
// reads is then left out, with a note.

// diagnosisConnection reaches an account the diagnosis reads, signing with its key.
type diagnosisConnection struct {
	endpoint *url.URL
	key      string
	client   *http.Client
}

// diagnosisConnections resolves the data and the lease account as the scaler
// does; the connection of an account without a key is nil.
func diagnosisConnections(setup *triggerSetup) (data, lease *diagnosisConnection, err error) {
	// KEDA's typed config wants a TriggerIndex beside the parameters.
	var meta struct {
		azure.CosmosDBAuth `keda:"optional"`
		TriggerIndex       int
	}
	if err := setup.config.TypedConfig(&meta); err != nil {
		return nil, nil, err
	}
	auth := meta.CosmosDBAuth
	auth.PodIdentity = setup.config.PodIdentity
	client := kedautil.CreateHTTPClient(setup.config.GlobalHTTPTimeout, false)
	d, l, err := azure.ResolveCosmosDBConnections(auth, client, logr.Discard())
	if err != nil {
		return nil, nil, err
	}
	// The key each account signs with, chosen as the scaler chooses it: a
	// connection string wins over an endpoint's key; without a lease
	// account of its own, the lease account is the data account.
	dataKey := string(auth.Key)
	if auth.Connection != "" {
		dataKey = connectionStringKey(string(auth.Connection))
	}
	leaseKey := dataKey
	switch {
	case auth.LeaseConnection != "":
		leaseKey = connectionStringKey(string(auth.LeaseConnection))
	case auth.LeaseEndpoint != "":
		leaseKey = string(auth.LeaseKey)
	}
	keyed := func(a *azure.CosmosDBConnection, key string) *diagnosisConnection {
		if !a.UsesKey() || key == "" {
			return nil
		}
		return &diagnosisConnection{endpoint: a.Endpoint, key: key, client: client}
	}
	return keyed(d, dataKey), keyed(l, leaseKey), nil
}

// connectionStringKey is the AccountKey of a connection string.
func connectionStringKey(s string) string {
	for part := range strings.SplitSeq(s, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "AccountKey") {
			return v
		}
	}
	return ""
}

// send sends one signed request and returns the body of a 200 answer.
func (a *diagnosisConnection) send(ctx context.Context, method, path string, header http.Header, body []byte) ([]byte, http.Header, error) {
	u := a.endpoint.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := cosmostest.MasterKeyAuthorization(a.key, method, u.Path, date)
	if err != nil {
		return nil, nil, errors.New("the account key is not base64")
	}
	h := req.Header
	for k, v := range header {
		h[k] = v
	}
	h.Set("Authorization", auth)
	h.Set("X-Ms-Date", date)
	h.Set("X-Ms-Version", "2020-11-05")
	// An account with partition merge enabled refuses clients that do not
	// declare the PartitionMerge capability.
	h.Set("X-Ms-Cosmos-Sdk-Supportedcapabilities", "1")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("HTTP %d from %s", resp.StatusCode, u.Host)
	}
	return raw, resp.Header, nil
}

// partitionKeyRange is a physical range as the service lists it.
type partitionKeyRange struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents"`
}

// liveRanges reads the monitored container's partition key ranges, less
// those a split or merge replaced.
func (a *diagnosisConnection) liveRanges(ctx context.Context, database, container string) ([]partitionKeyRange, error) {
	var all []partitionKeyRange
	for continuation := ""; ; {
		h := http.Header{}
		if continuation != "" {
			h.Set("X-Ms-Continuation", continuation)
		}
		raw, reply, err := a.send(ctx, http.MethodGet, "dbs/"+database+"/colls/"+container+"/pkranges", h, nil)
		if err != nil {
			return nil, fmt.Errorf("read partition key ranges of %s/%s: %w", excerpt.Of(database), excerpt.Of(container), err)
		}
		var page struct{ PartitionKeyRanges []partitionKeyRange }
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("read partition key ranges of %s/%s: malformed response body", excerpt.Of(database), excerpt.Of(container))
		}
		all = append(all, page.PartitionKeyRanges...)
		if continuation = reply.Get("X-Ms-Continuation"); continuation == "" {
			break
		}
	}
	replaced := map[string]bool{}
	for _, r := range all {
		for _, p := range r.Parents {
			replaced[p] = true
		}
	}
	return slices.DeleteFunc(all, func(r partitionKeyRange) bool { return replaced[r.ID] }), nil
}

// leaseDocument is what the diagnosis needs of a document in the lease
// container.
type leaseDocument struct {
	ID                string          `json:"id"`
	LeaseToken        string          `json:"LeaseToken"`
	PartitionID       string          `json:"PartitionId"`
	ContinuationToken json.RawMessage `json:"ContinuationToken"`
}

// leaseDocuments runs the scaler's lease query: every document whose id
// starts with the processor name.
func (a *diagnosisConnection) leaseDocuments(ctx context.Context, database, container, processor string) ([]leaseDocument, error) {
	query, err := json.Marshal(map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": processor}},
	})
	if err != nil {
		return nil, err
	}
	var docs []leaseDocument
	for continuation := ""; ; {
		h := http.Header{}
		h.Set("Content-Type", "application/query+json")
		h.Set("X-Ms-Documentdb-Isquery", "True")
		h.Set("X-Ms-Documentdb-Query-Enablecrosspartition", "True")
		h.Set("X-Ms-Max-Item-Count", "1000")
		if continuation != "" {
			h.Set("X-Ms-Continuation", continuation)
		}
		raw, reply, err := a.send(ctx, http.MethodPost, "dbs/"+database+"/colls/"+container+"/docs", h, query)
		if err != nil {
			return nil, fmt.Errorf("query leases in %s/%s: %w", excerpt.Of(database), excerpt.Of(container), err)
		}
		var page struct{ Documents []json.RawMessage }
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("query leases in %s/%s: malformed response body", excerpt.Of(database), excerpt.Of(container))
		}
		for _, d := range page.Documents {
			var doc leaseDocument
			if json.Unmarshal(d, &doc) == nil {
				docs = append(docs, doc)
			}
		}
		if continuation = reply.Get("X-Ms-Continuation"); continuation == "" {
			return docs, nil
		}
	}
}

// labelRangeChanges labels the leases whose range merged or split, from the
// container's live ranges: a range-id lease whose range is gone was merged
// when one live range lists it as a parent, split when several do; an EPK
// lease over part of a live range belongs to a merged range (processors cut
// EPK leases at range bounds after a split, never within one), and one
// spanning several live ranges to a split one.
func labelRangeChanges(rows []leaseRow, leases map[string]azure.CosmosDBLease, live []partitionKeyRange) {
	for i := range rows {
		r := &rows[i]
		l, ok := leases[r.Token]
		if !ok {
			continue
		}
		var holding []string
		if l.EPK {
			exact := false
			for _, pk := range live {
				if pk.MinInclusive < l.Max && l.Min < pk.MaxExclusive {
					holding = append(holding, pk.ID)
					exact = exact || (pk.MinInclusive == l.Min && pk.MaxExclusive == l.Max)
				}
			}
			switch {
			case len(holding) > 1:
				r.RangeChange = "split"
			case len(holding) == 1 && !exact:
				r.RangeChange = "merged"
			}
		} else if r.StaleParent {
			for _, pk := range live {
				if slices.Contains(pk.Parents, r.Token) {
					holding = append(holding, pk.ID)
				}
			}
			switch {
			case len(holding) == 1:
				r.RangeChange = "merged"
			case len(holding) > 1:
				r.RangeChange = "split"
			}
		}
		if r.RangeChange != "" {
			slices.SortFunc(holding, compareTokens)
			r.LiveRanges = holding
		}
	}
}

// uncountedLeases lists the lease documents of the processor's counted
// leases' container(s) that the estimate did not count: never checkpointed
// (no continuation), or not decodable. The counted leases' ids give the
// container's lease prefix ("{processor}{host}_{db}_{coll}..").
func uncountedLeases(docs []leaseDocument, counted map[string]azure.CosmosDBLease) (neverCheckpointed, other []string) {
	prefixes := map[string]bool{}
	ids := map[string]bool{}
	for _, l := range counted {
		if i := strings.LastIndex(l.ID, ".."); i >= 0 {
			prefixes[l.ID[:i+2]] = true
		}
		ids[l.ID] = true
	}
	for _, d := range docs {
		i := strings.LastIndex(d.ID, "..")
		if i < 0 || !prefixes[d.ID[:i+2]] || ids[d.ID] || (d.LeaseToken == "" && d.PartitionID == "") {
			continue
		}
		token := cmpOr(d.LeaseToken, d.PartitionID)
		cont := strings.TrimSpace(string(d.ContinuationToken))
		if cont == "" || cont == "null" || cont == `""` {
			neverCheckpointed = append(neverCheckpointed, token)
		} else {
			other = append(other, token)
		}
	}
	slices.SortFunc(neverCheckpointed, compareTokens)
	slices.SortFunc(other, compareTokens)
	return neverCheckpointed, other
}

// diagnose runs the diagnosis reads the report needs and adds their
// findings to it; a read that fails or cannot be made is a note.
func diagnose(ctx context.Context, setup *triggerSetup, r *checkReport, e *scalers.AzureCosmosDBEstimate, notes io.Writer) {
	leases := map[string]azure.CosmosDBLease{}
	needRanges := false
	for _, l := range e.Leases {
		leases[l.Token] = l.CosmosDBLease
		needRanges = needRanges || l.StaleParent || l.EPK
	}
	needLeases := setup.min == 0 && len(leases) > 0
	if !needRanges && !needLeases {
		return
	}
	note := func(format string, a ...any) {
		fmt.Fprintf(notes, "cosmoslag check: note: %s\n", setup.secrets.Redact(fmt.Sprintf(format, a...)))
	}
	data, lease, err := diagnosisConnections(setup)
	if err != nil {
		note("not read after the estimate (%v): which leases merged or split, and which were not counted", err)
		return
	}
	meta := setup.config.TriggerMetadata
	if needRanges {
		if data == nil {
			note("the data account uses a bearer token: leases whose range merged or split are not labelled")
		} else if live, err := data.liveRanges(ctx, meta["databaseId"], meta["containerId"]); err != nil {
			note("leases whose range merged or split are not labelled: %v", err)
		} else {
			labelRangeChanges(r.Leases, leases, live)
		}
	}
	if needLeases {
		if lease == nil {
			note("the lease account uses a bearer token: leases never checkpointed are not looked for")
		} else if docs, err := lease.leaseDocuments(ctx, meta["leaseDatabaseId"], meta["leaseContainerId"], meta["processorName"]); err != nil {
			note("leases never checkpointed are not looked for: %v", err)
		} else {
			never, other := uncountedLeases(docs, leases)
			r.NeverCheckpointed = never
			if w := partlyCheckpointedWarning(setup, r, never, other); w != "" {
				r.Warnings = append(r.Warnings, w)
			}
		}
	}
}

// partlyCheckpointedWarning says when some of the processor's leases are
// not counted (never checkpointed, or not decodable) while the ScaledObject
// can scale to zero: changes on their partitions alone never wake it.
func partlyCheckpointedWarning(setup *triggerSetup, r *checkReport, never, other []string) string {
	if setup.min > 0 || len(never)+len(other) == 0 {
		return ""
	}
	var parts []string
	if len(never) > 0 {
		parts = append(parts, fmt.Sprintf("%d never checkpointed (no continuation: %s)", len(never), tokenList(never)))
	}
	if len(other) > 0 {
		parts = append(parts, fmt.Sprintf("%d not decodable (%s)", len(other), tokenList(other)))
	}
	return fmt.Sprintf("%d of the %d leases of processor %s are not counted: %s; minReplicaCount is %d: at zero replicas, changes on "+
		"their partitions alone will not wake the processor, however many arrive; set minReplicaCount: 1 until every lease has been checkpointed",
		len(never)+len(other), len(never)+len(other)+len(r.Leases), r.Processor, strings.Join(parts, ", "), setup.min)
}

// compareTokens orders lease tokens as tokenLess does.
func compareTokens(a, b string) int {
	switch {
	case tokenLess(a, b):
		return -1
	case tokenLess(b, a):
		return 1
	}
	return 0
}

// tokenList names up to five lease tokens.
func tokenList(tokens []string) string {
	if len(tokens) <= 5 {
		return strings.Join(tokens, ", ")
	}
	return strings.Join(tokens[:5], ", ") + ", … (" + strconv.Itoa(len(tokens)-5) + " more)"
}
