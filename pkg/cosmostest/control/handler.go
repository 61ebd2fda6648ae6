package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/leasetest"
)

// Handler serves the control API for one account.
type Handler struct {
	acct *cosmostest.Account // the model: databases, containers, ranges
	api  *cosmostest.Handler // the REST side: its request log
	mux  *http.ServeMux

	logMu sync.Mutex // one log line per request, whole
	log   io.Writer

	createMu sync.Mutex // serializes container creations: 201 only for the one that created
}

// NewHandler serves the control API of srv's account and logs every request
// in one line to log: time, method, path, status, duration.
func NewHandler(srv *cosmostest.Server, log io.Writer) *Handler {
	h := &Handler{acct: srv.Account, api: srv.Handler, mux: http.NewServeMux(), log: log}
	h.mux.HandleFunc("POST "+routeContainers, jsonHandler(h.createContainer))
	h.mux.HandleFunc("GET "+routeRanges, jsonHandler(h.containerRanges))
	h.mux.HandleFunc("POST "+RouteProcessors, jsonHandler(h.createLeases))
	h.mux.HandleFunc("GET "+routePartitionKey, jsonHandler(h.partitionKey))
	h.mux.HandleFunc("POST "+routeSplit, jsonHandler(h.split))
	h.mux.HandleFunc("POST "+routeMerge, jsonHandler(h.merge))
	h.mux.HandleFunc("GET "+routeRequests, jsonHandler(h.requests))
	h.mux.HandleFunc("GET "+routeHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	return h
}

// ServeHTTP logs every request in one line and answers unknown paths and
// methods in JSON too.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	if muxAnswer, pattern := h.mux.Handler(r); pattern == "" {
		unmatched(rec, r, muxAnswer)
	} else {
		h.mux.ServeHTTP(rec, r)
	}
	h.logMu.Lock()
	defer h.logMu.Unlock()
	fmt.Fprintf(h.log, "%s control %s %s %d %s\n", start.UTC().Format("2006-01-02T15:04:05.000Z"),
		r.Method, r.URL.EscapedPath(), rec.statusCode(), time.Since(start).Round(10*time.Microsecond))
}

func toRange(r cosmostest.PartitionKeyRange) Range {
	return Range{ID: r.ID, MinInclusive: r.MinInclusive, MaxExclusive: r.MaxExclusive, Parents: r.Parents}
}

func toContainer(c *cosmostest.Container) Container {
	ranges := c.Ranges()
	out := Container{Database: c.Database().ID(), ID: c.ID(), RID: c.RID(), PartitionKeyPath: c.PartitionKeyPath(),
		Ranges: make([]Range, len(ranges))}
	for i, r := range ranges {
		out.Ranges[i] = toRange(r)
	}
	return out
}

func (h *Handler) container(db, id string) (*cosmostest.Container, error) {
	c, ok := h.acct.Container(db, id)
	if !ok {
		return nil, notFound("container %s/%s does not exist", excerpt.Of(db), excerpt.Of(id))
	}
	return c, nil
}

func (h *Handler) createContainer(r *http.Request) (int, any, error) {
	var req CreateContainerRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if err := checkResourceIDs("database", req.Database, "id", req.ID); err != nil {
		return 0, nil, err
	}
	pk := req.PartitionKeyPath
	switch {
	case pk == "":
		return 0, nil, badRequest(`partitionKeyPath is required, e.g. "/pk"`)
	case !strings.HasPrefix(pk, "/") || strings.HasSuffix(pk, "/") || strings.Contains(pk, "//"):
		return 0, nil, badRequest(`partitionKeyPath must be a path such as "/pk" or "/a/b", got %q`, excerpt.Of(pk))
	}
	ranges := 1
	if req.Ranges != nil {
		ranges = *req.Ranges
	}
	if ranges < 1 || ranges > maxRanges {
		return 0, nil, badRequest("ranges must be between 1 and %d, got %d", maxRanges, ranges)
	}

	h.createMu.Lock()
	defer h.createMu.Unlock()
	if c, ok := h.acct.Container(req.Database, req.ID); ok {
		if c.PartitionKeyPath() != pk {
			return 0, nil, conflict("container %s/%s exists with partitionKeyPath %q, not %q", req.Database, req.ID, c.PartitionKeyPath(), excerpt.Of(pk))
		}
		return http.StatusOK, toContainer(c), nil
	}
	c := h.acct.CreateDatabase(req.Database).CreateContainer(req.ID, pk, ranges)
	return http.StatusCreated, toContainer(c), nil
}

func (h *Handler) containerRanges(r *http.Request) (int, any, error) {
	c, err := h.container(r.PathValue("database"), r.PathValue("container"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toContainer(c), nil
}

func (h *Handler) createLeases(r *http.Request) (int, any, error) {
	var req CreateLeasesRequest
	var body bytes.Buffer
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r.Body, &body), r.Body}
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	// "name": "" is the processor without a prefix (an Azure Functions
	// trigger without LeaseContainerPrefix); an absent name is an error.
	// decodeBody read the whole body, so body holds it.
	var named struct {
		Name *string `json:"name"`
	}
	if err := json.Unmarshal(body.Bytes(), &named); err != nil || named.Name == nil {
		return 0, nil, badRequest("name is required (\"\" for a processor without a prefix)")
	}
	if req.LeaseDatabase == "" {
		req.LeaseDatabase = req.Database
	}
	if req.Name != "" {
		if err := checkResourceIDs("name", req.Name); err != nil {
			return 0, nil, err
		}
	}
	if err := checkResourceIDs("database", req.Database, "monitored", req.Monitored,
		"leases", req.Leases, "leaseDatabase", req.LeaseDatabase); err != nil {
		return 0, nil, err
	}
	if req.AccountHost != "" {
		if err := checkResourceIDs("accountHost", req.AccountHost); err != nil {
			return 0, nil, err
		}
	}
	format, err := parseFormat(req.Format)
	if err != nil {
		return 0, nil, err
	}
	mode, err := parseMode(req.Mode, format)
	if err != nil {
		return 0, nil, err
	}
	if req.Database == req.LeaseDatabase && req.Monitored == req.Leases {
		return 0, nil, badRequest("leases must name another container than monitored (%s/%s)", req.Database, req.Monitored)
	}

	h.createMu.Lock()
	defer h.createMu.Unlock()
	monitored, err := h.container(req.Database, req.Monitored)
	if err != nil {
		return 0, nil, err
	}
	leases, err := h.container(req.LeaseDatabase, req.Leases)
	if err != nil {
		return 0, nil, err
	}
	w := leasetest.NewWriter(req.Name, monitored, leases, format)
	w.Mode = mode
	if req.AccountHost != "" {
		w.AccountHost = req.AccountHost
	}
	if _, exists := leases.Get(w.Prefix() + ".info"); exists {
		return 0, nil, conflict("processor %q already has leases in %s/%s (prefix %q)", req.Name, req.LeaseDatabase, req.Leases, w.Prefix())
	}
	tokens, err := w.CreateLeases(req.StartFromNow)
	if err != nil {
		return 0, nil, err
	}
	out := Leases{Prefix: w.Prefix(), Format: string(format), Leases: make([]Lease, len(tokens))}
	for i, tok := range tokens {
		out.Leases[i] = Lease{ID: w.LeaseID(tok), Token: tok}
	}
	return http.StatusCreated, out, nil
}

func (h *Handler) partitionKey(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	for _, name := range []string{"database", "container", "range"} {
		if q.Get(name) == "" {
			return 0, nil, badRequest("query parameter %s is required", name)
		}
	}
	c, err := h.container(q.Get("database"), q.Get("container"))
	if err != nil {
		return 0, nil, err
	}
	pk, err := c.PartitionKeyForRange(q.Get("range"))
	if err != nil {
		return 0, nil, rangeError(err, c, q.Get("range"))
	}
	return http.StatusOK, PartitionKey{pk}, nil
}

func (h *Handler) split(r *http.Request) (int, any, error) {
	var req splitRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	for _, f := range []struct{ name, v string }{{"database", req.Database}, {"container", req.Container}, {"range", req.Range}} {
		if f.v == "" {
			return 0, nil, badRequest("%s is required", f.name)
		}
	}
	c, err := h.container(req.Database, req.Container)
	if err != nil {
		return 0, nil, err
	}
	left, right, err := c.Split(req.Range)
	if err != nil {
		return 0, nil, rangeError(err, c, req.Range)
	}
	return http.StatusOK, Split{toRange(left), toRange(right)}, nil
}

func (h *Handler) merge(r *http.Request) (int, any, error) {
	var req mergeRequest
	if err := decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	for _, f := range []struct{ name, v string }{{"database", req.Database}, {"container", req.Container}} {
		if f.v == "" {
			return 0, nil, badRequest("%s is required", f.name)
		}
	}
	if len(req.Ranges) != 2 || req.Ranges[0] == "" || req.Ranges[1] == "" {
		return 0, nil, badRequest(`ranges must name two ranges, e.g. ["0", "1"], got %d`, len(req.Ranges))
	}
	if !h.acct.PartitionMergeEnabled() {
		return 0, nil, conflict("partition merge is not enabled on this account, and the service merges only on accounts that have it (cosmoslag serve --enable-partition-merge)")
	}
	c, err := h.container(req.Database, req.Container)
	if err != nil {
		return 0, nil, err
	}
	merged, err := c.Merge(req.Ranges[0], req.Ranges[1])
	if err != nil {
		return 0, nil, rangeError(err, c, req.Ranges...)
	}
	return http.StatusOK, toRange(merged), nil
}

// rangeError maps an error about ranges: one that is not live is 404
// (naming the first such and listing the live ones), anything else 409.
func rangeError(err error, c *cosmostest.Container, rangeIDs ...string) error {
	if errors.Is(err, cosmostest.ErrRangeNotFound) {
		live := make([]string, 0)
		isLive := map[string]bool{}
		for _, r := range c.Ranges() {
			live = append(live, r.ID)
			isLive[r.ID] = true
		}
		missing := rangeIDs[0]
		for _, id := range rangeIDs {
			if !isLive[id] {
				missing = id
				break
			}
		}
		return notFound("range %q of %s/%s is not a live partition key range (live: %s)",
			excerpt.Of(missing), c.Database().ID(), c.ID(), strings.Join(live, ", "))
	}
	return conflict("%v", err)
}

// checkResourceIDs applies Cosmos DB's rules for resource ids, which this
// server routes by name, to pairs of field name and value: required, at most
// 255 characters, none of / \ ? #.
func checkResourceIDs(fieldsAndValues ...string) error {
	for i := 0; i+1 < len(fieldsAndValues); i += 2 {
		field, v := fieldsAndValues[i], fieldsAndValues[i+1]
		switch {
		case v == "":
			return badRequest("%s is required", field)
		case len(v) > 255:
			return badRequest("%s must be at most 255 characters long", field)
		case strings.ContainsAny(v, `/\?#`):
			return badRequest(`%s must not contain '/', '\', '?' or '#', got %q`, field, v)
		case strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
			return badRequest("%s must not contain control characters or start or end with a space, got %q", field, v)
		}
	}
	return nil
}

func parseFormat(s string) (cosmostest.LeaseFormat, error) {
	if s == "" {
		return cosmostest.DotNetV0, nil
	}
	names := make([]string, len(cosmostest.LeaseFormats))
	for i, f := range cosmostest.LeaseFormats {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
		names[i] = string(f)
	}
	return "", badRequest("format must be one of %s, got %q", strings.Join(names, ", "), excerpt.Of(s))
}

func parseMode(s string, f cosmostest.LeaseFormat) (cosmostest.ChangeFeedMode, error) {
	switch {
	case s == "" || strings.EqualFold(s, cosmostest.LatestVersion.String()):
		return cosmostest.LatestVersion, nil
	case !strings.EqualFold(s, cosmostest.AllVersionsAndDeletes.String()):
		return 0, badRequest("mode must be %s or %s, got %q", cosmostest.LatestVersion, cosmostest.AllVersionsAndDeletes, s)
	case !f.HasAllVersionsAndDeletes():
		return 0, badRequest("%s leases have no %s mode", f, cosmostest.AllVersionsAndDeletes)
	}
	return cosmostest.AllVersionsAndDeletes, nil
}

func (h *Handler) requests(*http.Request) (int, any, error) {
	log := h.api.Requests()
	out := Requests{Requests: make([]LoggedRequest, len(log))}
	for i, r := range log {
		out.Requests[i] = LoggedRequest{At: r.At, Kind: string(r.Kind), Method: r.Method, Path: r.Path, RangeID: r.RangeID, Status: r.Status, Header: r.Header}
	}
	return http.StatusOK, out, nil
}
