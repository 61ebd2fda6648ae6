package account

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

const (
	apiVersion       = "2020-11-05" // the version azcosmos v1.5.0 speaks
	headerDate       = "x-ms-date"
	headerVersion    = "x-ms-version"
	headerAuthz      = "Authorization"
	aadAuthzPrefix   = "type=aad&ver=1.0&sig="
	bearerAuthzStart = "Bearer "
)

// versionAndDatePolicy stamps every try with the API version and a fresh
// x-ms-date: the service rejects signatures whose date is skewed, and the
// master-key signature covers the date, so it is set per try, before signing.
type versionAndDatePolicy struct{ now func() time.Time }

func (p versionAndDatePolicy) Do(req *policy.Request) (*http.Response, error) {
	h := req.Raw().Header
	h.Set(headerVersion, apiVersion)
	h.Set(headerDate, p.now().UTC().Format(http.TimeFormat))
	return req.Next()
}

// masterKeyPolicy signs a request with the account key, as the REST API
// documents: HMAC-SHA256 over verb, resource type, resource link and date.
type masterKeyPolicy struct{ key []byte }

func (p masterKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	resourceType, resourceLink := resourceOf(raw.URL.Path)
	raw.Header.Set(headerAuthz, signMasterKey(p.key, raw.Method, resourceType, resourceLink, raw.Header.Get(headerDate)))
	return req.Next()
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
