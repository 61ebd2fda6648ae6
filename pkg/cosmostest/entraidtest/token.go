package entraidtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/cosmostest/internal/fault"
)

// The authority's endpoints and its tokens.

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func oauthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, map[string]any{"error": code, "error_description": description, "error_codes": []int{}})
}

// instanceDiscovery points MSAL at the openid configuration of the
// authority it asked about (authorization_endpoint) and lists that host as
// its only alias.
func (t *Issuer) instanceDiscovery(w http.ResponseWriter, r *http.Request) {
	authz, err := url.Parse(r.URL.Query().Get("authorization_endpoint"))
	if err != nil || authz.Host == "" {
		oauthError(w, http.StatusBadRequest, "invalid_instance", "authorization_endpoint is missing or invalid")
		return
	}
	tenant := "common"
	if segs := pathSegments(authz.Path); len(segs) > 0 {
		tenant = segs[0]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"tenant_discovery_endpoint": "https://" + authz.Host + "/" + tenant + "/v2.0/.well-known/openid-configuration",
		"api-version":               "1.1",
		"metadata": []any{map[string]any{
			"preferred_network": authz.Host,
			"preferred_cache":   authz.Host,
			"aliases":           []string{authz.Host},
		}},
	})
}

func (t *Issuer) openIDConfiguration(w http.ResponseWriter, r *http.Request, tenant string) {
	base := "https://" + r.Host + "/" + tenant
	writeJSON(w, http.StatusOK, map[string]any{
		"token_endpoint":                        base + "/oauth2/v2.0/token",
		"authorization_endpoint":                base + "/oauth2/v2.0/authorize",
		"device_authorization_endpoint":         base + "/oauth2/v2.0/devicecode",
		"issuer":                                base + "/v2.0",
		"jwks_uri":                              base + "/discovery/v2.0/keys",
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "private_key_jwt", "client_secret_basic"},
		"response_modes_supported":              []string{"query", "fragment", "form_post"},
		"subject_types_supported":               []string{"pairwise"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"tenant_region_scope":                   "NA",
		"cloud_instance_name":                   "microsoftonline.com",
	})
}

const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

func (t *Issuer) token(w http.ResponseWriter, r *http.Request, tenant string) {
	if f, faulted := t.faults.Take(func(tokenFault) bool { return true }); faulted {
		if !t.gate.Sleep(r.Context(), f.Latency) {
			fault.DropConnection(w)
			return
		}
		switch {
		case f.DropConnection:
			fault.DropConnection(w)
			return
		case f.MalformedBody:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"token_type":"Bearer","access_tok`)
			return
		case f.Status != 0:
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int(f.RetryAfter.Seconds())))
			}
			oauthError(w, f.Status, "temporarily_unavailable", "injected fault")
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	form := r.PostForm
	if form.Get("grant_type") != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only client_credentials is supported")
		return
	}
	clientID, scope := form.Get("client_id"), resourceScope(form.Get("scope"))
	if clientID == "" || scope == "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "client_id and scope are required")
		return
	}
	var credential string
	switch {
	case form.Get("client_secret") != "":
		credential = "secret"
	case form.Get("client_assertion") != "" && form.Get("client_assertion_type") == clientAssertionType:
		credential = "assertion"
	default:
		oauthError(w, http.StatusUnauthorized, "invalid_client", "a client_secret or a jwt-bearer client_assertion is required")
		return
	}
	const lifetime = time.Hour
	now := time.Now()
	token := t.signToken(tokenClaims{
		Issuer:   "https://" + r.Host + "/" + tenant + "/v2.0",
		Audience: strings.TrimSuffix(scope, "/.default"),
		Scope:    scope,
		Tenant:   tenant,
		AppID:    clientID,
		Iat:      now.Unix(),
		Exp:      now.Add(lifetime).Unix(),
	})
	t.mu.Lock()
	t.grants = append(t.grants, TokenGrant{Host: r.Host, Tenant: tenant, ClientID: clientID, Scope: scope, Credential: credential})
	t.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type":     "Bearer",
		"expires_in":     int(lifetime.Seconds()) - 1,
		"ext_expires_in": int(lifetime.Seconds()) - 1,
		"access_token":   token,
	})
}

// resourceScope drops the OpenID Connect scopes MSAL adds to every request
// ("openid offline_access profile"); like Entra ID, the issuer grants the
// resource scope.
func resourceScope(requested string) string {
	var kept []string
	for _, sc := range strings.Fields(requested) {
		switch sc {
		case "openid", "offline_access", "profile", "email":
		default:
			kept = append(kept, sc)
		}
	}
	return strings.Join(kept, " ")
}

type tokenClaims struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"`
	Scope    string `json:"scp"`
	Tenant   string `json:"tid"`
	AppID    string `json:"appid"`
	Iat      int64  `json:"iat"`
	Exp      int64  `json:"exp"`
}

func (t *Issuer) signToken(c tokenClaims) string {
	enc := base64.RawURLEncoding
	header, _ := json.Marshal(map[string]string{"typ": "JWT", "alg": "HS256"})
	payload, _ := json.Marshal(c)
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(signed))
	return signed + "." + enc.EncodeToString(mac.Sum(nil))
}

func (t *Issuer) parseToken(token string) (tokenClaims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return tokenClaims{}, errors.New("not a token of the test issuer")
	}
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return tokenClaims{}, errors.New("token signature is not valid")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return tokenClaims{}, errors.New("token payload is not valid")
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return tokenClaims{}, errors.New("token payload is not valid")
	}
	return c, nil
}

func pathSegments(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
