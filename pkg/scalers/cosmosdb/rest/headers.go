package rest

import (
	"net/http"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Header names are written in Go's canonical form: http.Header.Set then
// stores them without allocating a canonicalised copy on every request. The
// wire format is the same (net/http always sends canonical names).
const (
	apiVersion    = "2020-11-05" // the version azcosmos v1.5.0 speaks
	headerDate    = "X-Ms-Date"
	headerVersion = "X-Ms-Version"
	headerCharge  = "X-Ms-Request-Charge"
)

var apiVersionValue = []string{apiVersion}

// headersPolicy stamps the API version and a fresh x-ms-date on every try:
// the service rejects signatures whose date is skewed, and the master-key
// signature covers the date, so it is set per try, before signing.
type headersPolicy struct {
	now   func() time.Time
	dates *dateCache
}

func (p headersPolicy) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	// The value slices are shared by every request that carries the same
	// value (Header.Set would allocate one per request); nothing mutates a
	// header value in place, only replaces it.
	h[headerVersion] = apiVersionValue
	h[headerDate] = p.dates.format(p.now())
	return req.Next()
}

// dateCache remembers the RFC 1123 text of the last second it formatted, as
// a header value: x-ms-date has one-second resolution, so the concurrent
// reads of a poll share it.
type dateCache struct {
	mu   sync.Mutex
	unix int64
	text []string
}

func (c *dateCache) format(t time.Time) []string {
	t = t.UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.text == nil || t.Unix() != c.unix {
		c.unix, c.text = t.Unix(), []string{t.Format(http.TimeFormat)}
	}
	return c.text
}
