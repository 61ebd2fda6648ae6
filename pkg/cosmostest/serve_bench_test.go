package cosmostest

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// discardResponse is a minimal http.ResponseWriter, so that the benchmark
// below measures the server's own work per request rather than net/http's.
type discardResponse struct {
	header http.Header
	status int
}

func (d *discardResponse) Header() http.Header         { return d.header }
func (d *discardResponse) WriteHeader(status int)      { d.status = status }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkServeChangeFeedRead calls the handler directly with the headers
// the scaler sends for a one-item change feed read (as net/http hands them
// over: canonical names, a fresh map per request).
func BenchmarkServeChangeFeedRead(b *testing.B) {
	s := NewServer(WithRequestLogLimit(1000))
	defer s.Close()
	c := s.Account.CreateDatabase("appdb").CreateContainer("orders", "/customerId", 4)
	for _, r := range c.Ranges() {
		if err := c.WriteItemsToRange(r.ID, 3); err != nil {
			b.Fatal(err)
		}
	}
	path := "/dbs/" + c.Database().ID() + "/colls/" + c.ID() + "/docs"
	date := time.Now().UTC().Format(http.TimeFormat)
	auth, err := MasterKeyAuthorization(s.Key(), http.MethodGet, path, date)
	if err != nil {
		b.Fatal(err)
	}
	template := http.Header{
		"User-Agent":                          {"azsdk-go-azcosmos/v0.3.0 (go1.26; linux)"},
		"Accept-Encoding":                     {"gzip"},
		"X-Ms-Version":                        {"2020-07-15"},
		"X-Ms-Date":                           {date},
		"Authorization":                       {auth},
		"A-Im":                                {"Incremental feed"},
		"If-None-Match":                       {`"1"`},
		"X-Ms-Max-Item-Count":                 {"1"},
		"X-Ms-Documentdb-Partitionkeyrangeid": {"0"},
	}
	u := &url.URL{Path: path}
	b.ReportAllocs()
	for b.Loop() {
		r := &http.Request{Method: http.MethodGet, URL: u, Header: template.Clone(), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		w := &discardResponse{header: http.Header{}}
		s.Handler.ServeHTTP(w, r)
		if w.status != http.StatusOK {
			b.Fatalf("status %d", w.status)
		}
	}
}
