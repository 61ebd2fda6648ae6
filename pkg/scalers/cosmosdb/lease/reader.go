package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/rest"
)

// MaxPageSize is the largest page the lease query asks for. The query is the
// only sequential part of a poll, so fewer, larger pages make polls faster.
const MaxPageSize = 1000

// Reader queries a lease container.
type Reader struct {
	Client    *rest.Client
	Database  string
	Container string
}

// Page is one page of the lease query, already filtered to a scope.
type Page struct {
	Leases []Lease
	// Documents counts every document the page held (leases of other
	// processors, bookkeeping documents and non-leases included).
	Documents int
	// Strangers counts documents of this processor and account that name
	// another database or container: a hint that cached RIDs are stale.
	Strangers int
}

type queryPage struct {
	Documents []json.RawMessage `json:"Documents"`
}

// Read runs one cross-partition query for the documents whose id starts
// with the processor name, follows every continuation, and hands each
// page's leases of scope to onPage as soon as the page arrives. It stops at
// the first error from the service or from onPage.
func (r *Reader) Read(ctx context.Context, scope Scope, onPage func(Page) error) error {
	body, err := json.Marshal(map[string]any{
		"query":      "SELECT * FROM c WHERE STARTSWITH(c.id, @processor)",
		"parameters": []map[string]string{{"name": "@processor", "value": scope.Processor}},
	})
	if err != nil {
		return err
	}
	docs := r.Client.Resource("dbs", r.Database, "colls", r.Container, "docs")
	continuation := ""
	for {
		req, err := r.Client.NewRequest(ctx, http.MethodPost, docs)
		if err != nil {
			return err
		}
		h := req.Raw().Header
		h.Set("x-ms-documentdb-isquery", "True")
		h.Set("x-ms-documentdb-query-enablecrosspartition", "True")
		h.Set("x-ms-max-item-count", strconv.Itoa(MaxPageSize))
		if continuation != "" {
			h.Set("x-ms-continuation", continuation)
		}
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/query+json"); err != nil {
			return err
		}
		resp, err := r.Client.Do(req, "query leases in "+r.Database+"/"+r.Container, http.StatusOK)
		if err != nil {
			return err
		}
		defer resp.Body.Close() // ReadBody closes it too; closing twice is harmless
		continuation = resp.Header.Get("x-ms-continuation")
		operation := "query leases in " + account.Excerpt(r.Database) + "/" + account.Excerpt(r.Container)
		body, err := rest.ReadBody(resp, operation)
		if err != nil {
			return err
		}
		page, err := scope.decodePage(body)
		if err != nil {
			return fmt.Errorf("%s: malformed response body: %w", operation, err)
		}
		if err := onPage(page); err != nil {
			return err
		}
		if continuation == "" {
			return nil
		}
	}
}

// decodePage decodes one page of the lease query and keeps the leases of s.
// The page is decoded in one pass, straight into lease documents. Only when
// that fails (a syntax error, or a document that does not fit the lease
// shape, such as a number for an id) is it decoded again as raw documents,
// one by one, so that such a document is ignored without losing the others.
// The one-pass decode matters: the lease query is the serial part of a poll.
func (s Scope) decodePage(body []byte) (Page, error) {
	var leases struct {
		Documents []document `json:"Documents"`
	}
	if json.Unmarshal(body, &leases) == nil {
		p := Page{Documents: len(leases.Documents)}
		for _, doc := range leases.Documents {
			s.keep(&p, doc)
		}
		return p, nil
	}
	var page queryPage
	if err := json.Unmarshal(body, &page); err != nil {
		return Page{}, err
	}
	return s.filter(page.Documents), nil
}

func (s Scope) filter(docs []json.RawMessage) Page {
	p := Page{Documents: len(docs)}
	for _, raw := range docs {
		// One decode per document: the id decides ownership, the rest the lease.
		var doc document
		if json.Unmarshal(raw, &doc) != nil {
			continue // not a lease: ignored, as the trigger specifies
		}
		s.keep(&p, doc)
	}
	return p
}

// keep adds doc to p if it is a lease of s, and counts it as a stranger if it
// is this processor's on this account but names another container.
func (s Scope) keep(p *Page, doc document) {
	if !s.Owns(doc.ID) {
		if s.OwnsProcessorAndAccount(doc.ID) {
			p.Strangers++
		}
		return
	}
	if l, err := doc.lease(); err == nil {
		p.Leases = append(p.Leases, l)
	}
}
