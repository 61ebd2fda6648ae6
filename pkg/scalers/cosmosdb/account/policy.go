package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Header names are written in Go's canonical form: http.Header.Set then
// stores them without allocating a canonicalised copy on every request. The
// wire format is the same (net/http always sends canonical names).
const (
	apiVersion       = "2020-11-05" // the version azcosmos v1.5.0 speaks
	headerDate       = "X-Ms-Date"
	headerVersion    = "X-Ms-Version"
	headerAuthz      = "Authorization"
	headerCharge     = "X-Ms-Request-Charge"
	aadAuthzPrefix   = "type=aad&ver=1.0&sig="
	bearerAuthzStart = "Bearer "
)

var apiVersionValue = []string{apiVersion}

// tryPolicy runs once per try, before the request is signed (the bearer-token
// policy follows it for Entra ID; with an account key it signs itself):
//
//   - it counts the try and its x-ms-request-charge into the poll's Usage,
//     whether or not the try got an answer;
//   - it stamps the API version and a fresh x-ms-date: the service rejects
//     signatures whose date is skewed, and the master-key signature covers
//     the date, so it is set per try, before signing;
//   - with an account key, it signs: HMAC-SHA256 over verb, resource type,
//     resource link and date, as the REST API documents.
//
// One policy rather than three saves two pipeline hops per request. The date
// text and the signature are cached: x-ms-date has one-second resolution, so
// the concurrent reads of a poll share the same verb, path and date and
// would otherwise format and sign the same string hundreds of times.
type tryPolicy struct {
	now   func() time.Time
	key   []byte // nil: Entra ID, signed by the next policy
	dates *dateCache
	sigs  *signatureCache
}

func (p tryPolicy) Do(req *policy.Request) (*http.Response, error) {
	u, _ := req.Raw().Context().Value(usageKey{}).(*Usage)
	raw := req.Raw()
	date := p.dates.format(p.now())
	// The value slices are shared by every request that carries the same
	// value (Header.Set would allocate one per request); nothing mutates a
	// header value in place, only replaces it.
	raw.Header[headerVersion] = apiVersionValue
	raw.Header[headerDate] = date
	if p.key != nil {
		raw.Header[headerAuthz] = p.sigs.authorization(p.key, raw.Method, raw.URL.Path, date[0])
	}
	resp, err := req.Next()
	if u != nil {
		var charge float64
		if resp != nil {
			charge, _ = strconv.ParseFloat(resp.Header.Get(headerCharge), 64)
		}
		u.add(charge)
	}
	return resp, err
}

// dateCache remembers the RFC 1123 text of the last second it formatted, as
// a header value.
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

// signatureCache remembers the last master-key Authorization value; it is a
// pure function of the key (fixed per client), verb, path and date.
type signatureCache struct {
	mu               sync.Mutex
	verb, path, date string
	header           []string
}

func (c *signatureCache) authorization(key []byte, verb, path, date string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.header == nil || verb != c.verb || path != c.path || date != c.date {
		resourceType, resourceLink := resourceOf(path)
		c.verb, c.path, c.date = verb, path, date
		c.header = []string{signMasterKey(key, verb, resourceType, resourceLink, date)}
	}
	return c.header
}

func signMasterKey(key []byte, verb, resourceType, resourceLink, date string) string {
	payload := strings.ToLower(verb) + "\n" + strings.ToLower(resourceType) + "\n" + resourceLink + "\n" + strings.ToLower(date) + "\n\n"
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(payload))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}

// resourceOf derives the signed resource type and link from a request path:
// for a path naming a resource (/dbs/d/colls/c) the type is the next-to-last
// segment and the link the whole path; for a feed (/dbs/d/colls/c/docs) the
// type is the last segment and the link its parent.
func resourceOf(path string) (resourceType, resourceLink string) {
	trimmed := strings.Trim(path, "/")
	if trimmed == "" {
		return "", ""
	}
	segments := strings.Split(trimmed, "/")
	if len(segments)%2 == 0 {
		return segments[len(segments)-2], trimmed
	}
	return segments[len(segments)-1], strings.Join(segments[:len(segments)-1], "/")
}

// aadAuthorization turns the "Bearer <token>" header written by azcore's
// bearer-token policy into Cosmos DB's "type=aad&ver=1.0&sig=<token>" form, so
// token caching and refresh stay azcore's.
func aadAuthorization(req *policy.Request, authorize func(policy.TokenRequestOptions) error, scope string) error {
	if err := authorize(policy.TokenRequestOptions{Scopes: []string{scope}}); err != nil {
		return err
	}
	h := req.Raw().Header
	token := strings.TrimPrefix(h.Get(headerAuthz), bearerAuthzStart)
	h.Set(headerAuthz, aadAuthzPrefix+token) // unescaped, as azcosmos sends it
	return nil
}
