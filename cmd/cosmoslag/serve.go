package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest"
)

// emulatorKey is the account key of the Azure Cosmos DB Emulator, published
// by Microsoft in its documentation and identical on every emulator: it is
// public, and only fit for test accounts. serve uses it unless --key is set.
const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

const (
	maxControlBody  = 1 << 20 // bytes of a control request body
	maxRanges       = 1024    // physical ranges of a container created over the control API
	shutdownTimeout = 5 * time.Second
)

type serveOptions struct {
	addr        string
	controlAddr string
	key         string
	account     string
	caFile      string
}

func serveFlags(o *serveOptions) (*flag.FlagSet, func(io.Writer)) {
	fs := flag.NewFlagSet("cosmoslag serve", flag.ContinueOnError)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8081", "host:port of the Cosmos DB endpoint (HTTPS); port 0 picks a free port")
	fs.StringVar(&o.controlAddr, "control-addr", "127.0.0.1:8082", "host:port of the control API (plain HTTP, no authentication)")
	fs.StringVar(&o.key, "key", "", "base64 account key (default: the Cosmos DB Emulator's published well-known key)")
	fs.StringVar(&o.account, "account", "localaccount", "account name reported by GET /")
	fs.StringVar(&o.caFile, "ca-file", "", "write the endpoint's self-signed certificate (PEM, mode 0644) to this file,\nfor clients to trust (e.g. SSL_CERT_FILE)")
	usage := func(w io.Writer) {
		fmt.Fprint(w, `Usage: cosmoslag serve [flags]

Runs the embedded Cosmos DB server as a standalone process, for clients in
other processes (a KEDA operator in a cluster, a change feed processor):

  - the Cosmos DB endpoint on --addr, HTTPS with a fresh self-signed
    certificate valid for a day that names the loopback addresses,
    "localhost" and the --addr host (--ca-file writes it out). Bind the
    address the clients use: it is the endpoint URL's host, and the host
    processors write into lease ids. Clients sign requests with --key.
  - a control API on --control-addr, plain HTTP, for what only the service
    itself does: creating databases and containers, splitting partitions,
    writing a processor's first leases, and finding a partition key value
    for a chosen physical partition. It has no authentication: keep it on an
    address only the tests reach.

When both listen, one line each goes to stdout:
  cosmos endpoint https://127.0.0.1:8081/
  control api http://127.0.0.1:8082
Every control request is logged to stderr (method, path, status). SIGINT or
SIGTERM stops both servers; the exit status is then 0. It is 1 when a
listener cannot be opened or the certificate file cannot be written, 2 for
invalid flags. The key is never printed.

Control API (JSON; errors are {"error": "..."} with status 400, 404, 405,
409 or 500):
  POST /control/containers {"database","id","partitionKeyPath","ranges"}
      create the database and the container if missing (201; 200 and the
      container unchanged if it exists; 409 if with another key path)
      -> {"database","id","rid","partitionKeyPath","ranges":[{"id",
          "minInclusive","maxExclusive","parents"}]}  (live ranges)
  GET  /control/containers/{database}/{container}/ranges
      -> the same reply, with the live ranges now
  POST /control/processors {"name","database","monitored","leases",
                            "format","startFromNow","leaseDatabase","accountHost"}
      write a processor's leases, one per live range, and its .info and
      .lock documents, as a processor does when it first starts (201; 409 if
      it has leases already). format: DotNetV0 (default), DotNetV1EPK,
      JavaV0, JavaV1EPK, DotNetV2Library. startFromNow checkpoints at the
      current LSNs; otherwise the lag is every item. leaseDatabase defaults
      to database, accountHost to the endpoint's host.
      -> {"prefix","format","leases":[{"id","token"}]}
  GET  /control/partition-key?database=&container=&range=
      -> {"partitionKey"}: a fresh string value whose items land in that
         live range (send it in x-ms-documentdb-partitionkey as ["value"])
  POST /control/split {"database","container","range"}
      split a live range at its midpoint -> {"left":{...},"right":{...}}
  GET  /control/healthz -> 200 ok

Example:
  cosmoslag serve --addr 10.244.0.20:8081 --control-addr 10.244.0.20:8082 --ca-file /tmp/cosmos-ca.pem

Flags:
`)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
	return fs, usage
}

func (o *serveOptions) validate() error {
	var errs []error
	addrOK := func(flagName, v string) bool {
		if _, port, err := net.SplitHostPort(v); err == nil {
			if _, err := strconv.ParseUint(port, 10, 16); err == nil {
				return true
			}
		}
		errs = append(errs, fmt.Errorf("--%s must be host:port with a port from 0 to 65535, got %q", flagName, v))
		return false
	}
	if addrOK("addr", o.addr) && addrOK("control-addr", o.controlAddr) && o.addr == o.controlAddr && !strings.HasSuffix(o.addr, ":0") {
		errs = append(errs, fmt.Errorf("--addr and --control-addr must differ, both are %q", o.addr))
	}
	if o.key == "" {
		o.key = emulatorKey
	}
	if k, err := base64.StdEncoding.DecodeString(o.key); err != nil || len(k) == 0 {
		errs = append(errs, errors.New("--key must be a non-empty standard base64 string (its value is not shown)"))
	}
	if o.account == "" {
		errs = append(errs, errors.New("--account must not be empty"))
	}
	return errors.Join(errs...)
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o serveOptions
	fs, usage := serveFlags(&o)
	if code, ok := parseFlags(fs, usage, args, stdout, stderr); !ok {
		return code
	}
	if err := o.validate(); err != nil {
		fmt.Fprintf(stderr, "cosmoslag serve: %v\n", err)
		return exitBadArgs
	}
	logw := &lockedWriter{w: stderr}
	if err := serve(ctx, o, stdout, logw); err != nil {
		fmt.Fprintf(logw, "cosmoslag serve: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// serve runs both listeners until ctx ends.
func serve(ctx context.Context, o serveOptions, stdout io.Writer, logw io.Writer) error {
	srv, err := startCosmosServer(o)
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.controlAddr)
	if err != nil {
		return fmt.Errorf("control API: %w", err)
	}
	if o.caFile != "" {
		if err := writeFileAtomic(o.caFile, srv.CertPEM(), 0o644); err != nil {
			_ = ln.Close()
			return fmt.Errorf("--ca-file: %w", err)
		}
	}
	hs := &http.Server{
		Handler:           newControlAPI(srv, logw),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(logw, "cosmoslag serve: control API: ", 0),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	fmt.Fprintf(stdout, "cosmos endpoint %s\n", srv.URL())
	fmt.Fprintf(stdout, "control api http://%s\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("control API: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-served
	srv.Close()
	fmt.Fprintln(logw, "cosmoslag serve: stopped")
	return nil
}

// startCosmosServer starts the HTTPS endpoint. cosmostest panics, like
// httptest, when it cannot listen; here that is an error.
func startCosmosServer(o serveOptions) (srv *cosmostest.Server, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Cosmos DB endpoint: %v", r)
		}
	}()
	return cosmostest.NewTLSServer(
		cosmostest.WithAddress(o.addr),
		cosmostest.WithKey(o.key),
		cosmostest.WithAccountName(o.account),
		// A standalone server runs for hours; nothing reads its request log.
		cosmostest.WithRequestLogLimit(1000),
	), nil
}

// writeFileAtomic writes through a temporary file and a rename, so a reader
// waiting for the file never sees it half written.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, perm)
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// lockedWriter serializes writes of concurrent handlers to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// controlAPI serves the control endpoints. Containers are created only
// through it, so it keeps them by database and container id.
type controlAPI struct {
	srv  *cosmostest.Server
	mux  *http.ServeMux
	logw io.Writer

	mu         sync.Mutex // serializes creations; guards containers
	containers map[[2]string]*cosmostest.Container
}

func newControlAPI(srv *cosmostest.Server, logw io.Writer) *controlAPI {
	a := &controlAPI{srv: srv, mux: http.NewServeMux(), logw: logw, containers: map[[2]string]*cosmostest.Container{}}
	a.mux.HandleFunc("POST /control/containers", a.handle(a.createContainer))
	a.mux.HandleFunc("GET /control/containers/{database}/{container}/ranges", a.handle(a.containerRanges))
	a.mux.HandleFunc("POST /control/processors", a.handle(a.createProcessor))
	a.mux.HandleFunc("GET /control/partition-key", a.handle(a.partitionKey))
	a.mux.HandleFunc("POST /control/split", a.handle(a.split))
	a.mux.HandleFunc("GET /control/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	return a
}

// ServeHTTP logs every request in one line and answers unknown paths and
// methods in JSON too.
func (a *controlAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	if h, pattern := a.mux.Handler(r); pattern == "" {
		// Not found or method not allowed: keep the mux's status and Allow header.
		probe := &statusRecorder{ResponseWriter: discardResponse{header: http.Header{}}}
		h.ServeHTTP(probe, r)
		if allow := probe.Header().Get("Allow"); allow != "" {
			rec.Header().Set("Allow", allow)
		}
		msg := "no control endpoint " + r.URL.EscapedPath()
		if probe.status == http.StatusMethodNotAllowed {
			msg = r.Method + " is not allowed on " + r.URL.EscapedPath()
		}
		writeAPIJSON(rec, probe.statusCode(), apiErrorBody{msg})
	} else {
		a.mux.ServeHTTP(rec, r)
	}
	fmt.Fprintf(a.logw, "%s control %s %s %d %s\n", start.UTC().Format("2006-01-02T15:04:05.000Z"),
		r.Method, r.URL.EscapedPath(), rec.statusCode(), time.Since(start).Round(10*time.Microsecond))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) statusCode() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// apiError is an answer other than success.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func apiBadRequest(format string, a ...any) error {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func apiNotFound(format string, a ...any) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf(format, a...)}
}

func apiConflict(format string, a ...any) error {
	return &apiError{http.StatusConflict, fmt.Sprintf(format, a...)}
}

type apiErrorBody struct {
	Error string `json:"error"`
}

func writeAPIJSON(w http.ResponseWriter, status int, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the reply failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// handle adapts a handler that returns a status and a reply, or an error.
func (a *controlAPI) handle(h func(r *http.Request) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, body, err := h(r)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = &apiError{http.StatusInternalServerError, err.Error()}
			}
			writeAPIJSON(w, ae.status, apiErrorBody{ae.msg})
			return
		}
		writeAPIJSON(w, status, body)
	}
}

// decodeControlBody reads one JSON object into v; unknown fields are refused, so a
// misspelt field is an error rather than a silent default.
func decodeControlBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxControlBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonBodyError(err)
	}
	if err := dec.Decode(&json.RawMessage{}); !errors.Is(err, io.EOF) {
		return apiBadRequest("the request body must hold exactly one JSON object")
	}
	return nil
}

func jsonBodyError(err error) error {
	var (
		syntax  *json.SyntaxError
		typ     *json.UnmarshalTypeError
		tooLong *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		return apiBadRequest("the request body is empty; send a JSON object")
	case errors.As(err, &tooLong):
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body exceeds %d bytes", maxControlBody)}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return apiBadRequest("the request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	case errors.As(err, &typ):
		if typ.Field == "" {
			return apiBadRequest("the request body must be a JSON object, not a JSON %s", typ.Value)
		}
		return apiBadRequest("%s must be %s, not a JSON %s", typ.Field, jsonKind(typ.Type), typ.Value)
	}
	return apiBadRequest("%s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	}
	return "a " + t.Kind().String()
}

// checkResourceID applies Cosmos DB's rules for resource ids that this server routes
// by name: required, at most 255 characters, none of / \ ? #.
func checkResourceID(field, v string) error {
	switch {
	case v == "":
		return apiBadRequest("%s is required", field)
	case len(v) > 255:
		return apiBadRequest("%s must be at most 255 characters long", field)
	case strings.ContainsAny(v, `/\?#`):
		return apiBadRequest(`%s must not contain '/', '\', '?' or '#', got %q`, field, v)
	case strings.TrimSpace(v) != v || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return apiBadRequest("%s must not contain control characters or start or end with a space, got %q", field, v)
	}
	return nil
}

// Replies.

type rangeReply struct {
	ID           string   `json:"id"`
	MinInclusive string   `json:"minInclusive"`
	MaxExclusive string   `json:"maxExclusive"`
	Parents      []string `json:"parents,omitempty"`
}

func toRangeReply(r cosmostest.PartitionKeyRange) rangeReply {
	return rangeReply{ID: r.ID, MinInclusive: r.MinInclusive, MaxExclusive: r.MaxExclusive, Parents: r.Parents}
}

type containerReply struct {
	Database         string       `json:"database"`
	ID               string       `json:"id"`
	RID              string       `json:"rid"`
	PartitionKeyPath string       `json:"partitionKeyPath"`
	Ranges           []rangeReply `json:"ranges"`
}

func toContainerReply(c *cosmostest.Container) containerReply {
	ranges := c.Ranges()
	out := containerReply{Database: c.Database().ID(), ID: c.ID(), RID: c.RID(), PartitionKeyPath: c.PartitionKeyPath(),
		Ranges: make([]rangeReply, len(ranges))}
	for i, r := range ranges {
		out.Ranges[i] = toRangeReply(r)
	}
	return out
}

// container finds a container created through the control API.
func (a *controlAPI) container(db, id string) (*cosmostest.Container, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.containerLocked(db, id)
}

func (a *controlAPI) containerLocked(db, id string) (*cosmostest.Container, error) {
	c, ok := a.containers[[2]string{db, id}]
	if !ok {
		return nil, apiNotFound("container %s/%s does not exist", db, id)
	}
	return c, nil
}

// Handlers.

func (a *controlAPI) createContainer(r *http.Request) (int, any, error) {
	var req struct {
		Database         string `json:"database"`
		ID               string `json:"id"`
		PartitionKeyPath string `json:"partitionKeyPath"`
		Ranges           *int   `json:"ranges"`
	}
	if err := decodeControlBody(r, &req); err != nil {
		return 0, nil, err
	}
	if err := checkResourceID("database", req.Database); err != nil {
		return 0, nil, err
	}
	if err := checkResourceID("id", req.ID); err != nil {
		return 0, nil, err
	}
	pk := req.PartitionKeyPath
	switch {
	case pk == "":
		return 0, nil, apiBadRequest(`partitionKeyPath is required, e.g. "/pk"`)
	case !strings.HasPrefix(pk, "/") || strings.HasSuffix(pk, "/") || strings.Contains(pk, "//"):
		return 0, nil, apiBadRequest(`partitionKeyPath must be a path such as "/pk" or "/a/b", got %q`, pk)
	}
	ranges := 1
	if req.Ranges != nil {
		ranges = *req.Ranges
	}
	if ranges < 1 || ranges > maxRanges {
		return 0, nil, apiBadRequest("ranges must be between 1 and %d, got %d", maxRanges, ranges)
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	key := [2]string{req.Database, req.ID}
	if c, ok := a.containers[key]; ok {
		if c.PartitionKeyPath() != pk {
			return 0, nil, apiConflict("container %s/%s exists with partitionKeyPath %q, not %q", req.Database, req.ID, c.PartitionKeyPath(), pk)
		}
		return http.StatusOK, toContainerReply(c), nil
	}
	c := a.srv.CreateDatabase(req.Database).CreateContainer(req.ID, pk, ranges)
	a.containers[key] = c
	return http.StatusCreated, toContainerReply(c), nil
}

func (a *controlAPI) containerRanges(r *http.Request) (int, any, error) {
	c, err := a.container(r.PathValue("database"), r.PathValue("container"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toContainerReply(c), nil
}

var controlLeaseFormats = []cosmostest.LeaseFormat{
	cosmostest.DotNetV0, cosmostest.DotNetV1EPK, cosmostest.JavaV0, cosmostest.JavaV1EPK, cosmostest.DotNetV2Library,
}

func parseLeaseFormat(s string) (cosmostest.LeaseFormat, error) {
	if s == "" {
		return cosmostest.DotNetV0, nil
	}
	names := make([]string, len(controlLeaseFormats))
	for i, f := range controlLeaseFormats {
		if strings.EqualFold(s, f.String()) {
			return f, nil
		}
		names[i] = f.String()
	}
	return 0, apiBadRequest("format must be one of %s, got %q", strings.Join(names, ", "), s)
}

type leaseReply struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

func (a *controlAPI) createProcessor(r *http.Request) (int, any, error) {
	var req struct {
		Name          string `json:"name"`
		Database      string `json:"database"`
		Monitored     string `json:"monitored"`
		Leases        string `json:"leases"`
		LeaseDatabase string `json:"leaseDatabase"`
		Format        string `json:"format"`
		StartFromNow  bool   `json:"startFromNow"`
		AccountHost   string `json:"accountHost"`
	}
	if err := decodeControlBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.LeaseDatabase == "" {
		req.LeaseDatabase = req.Database
	}
	for _, f := range []struct{ name, v string }{
		{"name", req.Name}, {"database", req.Database}, {"monitored", req.Monitored}, {"leases", req.Leases}, {"leaseDatabase", req.LeaseDatabase},
	} {
		if err := checkResourceID(f.name, f.v); err != nil {
			return 0, nil, err
		}
	}
	if req.AccountHost != "" {
		if err := checkResourceID("accountHost", req.AccountHost); err != nil {
			return 0, nil, err
		}
	}
	format, err := parseLeaseFormat(req.Format)
	if err != nil {
		return 0, nil, err
	}
	if req.Database == req.LeaseDatabase && req.Monitored == req.Leases {
		return 0, nil, apiBadRequest("leases must name another container than monitored (%s/%s)", req.Database, req.Monitored)
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	monitored, err := a.containerLocked(req.Database, req.Monitored)
	if err != nil {
		return 0, nil, err
	}
	leases, err := a.containerLocked(req.LeaseDatabase, req.Leases)
	if err != nil {
		return 0, nil, err
	}
	p := cosmostest.NewProcessor(req.Name, monitored, leases, format)
	if req.AccountHost != "" {
		p.AccountHost = req.AccountHost
	}
	if _, exists := leases.Get(p.Prefix() + ".info"); exists {
		return 0, nil, apiConflict("processor %q already has leases in %s/%s (prefix %q)", req.Name, req.LeaseDatabase, req.Leases, p.Prefix())
	}
	tokens, err := p.CreateLeases(req.StartFromNow)
	if err != nil {
		return 0, nil, err
	}
	out := struct {
		Prefix string       `json:"prefix"`
		Format string       `json:"format"`
		Leases []leaseReply `json:"leases"`
	}{Prefix: p.Prefix(), Format: format.String(), Leases: make([]leaseReply, len(tokens))}
	for i, tok := range tokens {
		out.Leases[i] = leaseReply{ID: p.LeaseID(tok), Token: tok}
	}
	return http.StatusCreated, out, nil
}

func (a *controlAPI) partitionKey(r *http.Request) (int, any, error) {
	q := r.URL.Query()
	for _, name := range []string{"database", "container", "range"} {
		if q.Get(name) == "" {
			return 0, nil, apiBadRequest("query parameter %s is required", name)
		}
	}
	c, err := a.container(q.Get("database"), q.Get("container"))
	if err != nil {
		return 0, nil, err
	}
	pk, err := c.PartitionKeyForRange(q.Get("range"))
	if err != nil {
		return 0, nil, apiRangeError(err, q.Get("range"), c)
	}
	return http.StatusOK, struct {
		PartitionKey string `json:"partitionKey"`
	}{pk}, nil
}

func (a *controlAPI) split(r *http.Request) (int, any, error) {
	var req struct {
		Database  string `json:"database"`
		Container string `json:"container"`
		Range     string `json:"range"`
	}
	if err := decodeControlBody(r, &req); err != nil {
		return 0, nil, err
	}
	for _, f := range []struct{ name, v string }{{"database", req.Database}, {"container", req.Container}, {"range", req.Range}} {
		if f.v == "" {
			return 0, nil, apiBadRequest("%s is required", f.name)
		}
	}
	c, err := a.container(req.Database, req.Container)
	if err != nil {
		return 0, nil, err
	}
	left, right, err := c.Split(req.Range)
	if err != nil {
		return 0, nil, apiRangeError(err, req.Range, c)
	}
	return http.StatusOK, struct {
		Left  rangeReply `json:"left"`
		Right rangeReply `json:"right"`
	}{toRangeReply(left), toRangeReply(right)}, nil
}

// apiRangeError maps an error about a range: not live is 404 (listing the
// live ones), anything else 409.
func apiRangeError(err error, rangeID string, c *cosmostest.Container) error {
	if errors.Is(err, cosmostest.ErrRangeNotFound) {
		live := make([]string, 0)
		for _, r := range c.Ranges() {
			live = append(live, r.ID)
		}
		return apiNotFound("range %q of %s/%s is not a live partition key range (live: %s)",
			rangeID, c.Database().ID(), c.ID(), strings.Join(live, ", "))
	}
	return apiConflict("%v", err)
}
