package rest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
)

const (
	headerAuthz      = "Authorization"
	aadAuthzPrefix   = "type=aad&ver=1.0&sig="
	bearerAuthzStart = "Bearer "
)

// signingPolicy signs every try for the account: with its key as the REST
// API documents, else with a bearer token from azcore's policy, which keeps
// caching and refreshing the token. It runs after headersPolicy: the
// master-key signature covers x-ms-date.
func signingPolicy(a *account.Account) policy.Policy {
	if key := a.Key(); key != nil {
		return masterKeyPolicy{key: key, sigs: &signatureCache{}}
	}
	cred, scope := a.Token()
	return runtime.NewBearerTokenPolicy(cred, []string{scope}, &policy.BearerTokenOptions{
		AuthorizationHandler: policy.AuthorizationHandler{
			OnRequest: func(req *policy.Request, authorize func(policy.TokenRequestOptions) error) error {
				return aadAuthorization(req, authorize, scope)
			},
		},
		InsecureAllowCredentialWithHTTP: a.Local(),
	})
}

// masterKeyPolicy signs with the account key: HMAC-SHA256 over verb,
// resource type, resource link and date. The resource comes with the request
// (see Resource), not from its URL.
type masterKeyPolicy struct {
	key  []byte
	sigs *signatureCache
}

var errNoResource = errors.New("request has no resource to sign: build it with Client.NewRequest")

func (p masterKeyPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	r, ok := resourceOf(raw.Context())
	if !ok {
		return nil, errNoResource
	}
	raw.Header[headerAuthz] = p.sigs.authorization(p.key, raw.Method, r, raw.Header.Get(headerDate))
	return req.Next()
}

// signatureCache remembers the last Authorization value, a pure function of
// the key (fixed per client), verb, resource and date: the concurrent reads
// of a poll share all four and would otherwise sign the same string
// hundreds of times.
type signatureCache struct {
	mu                    sync.Mutex
	verb, typ, link, date string
	header                []string
}

func (c *signatureCache) authorization(key []byte, verb string, r *Resource, date string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.header == nil || verb != c.verb || r.Type != c.typ || r.Link != c.link || date != c.date {
		c.verb, c.typ, c.link, c.date = verb, r.Type, r.Link, date
		c.header = []string{signMasterKey(key, verb, r.Type, r.Link, date)}
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
