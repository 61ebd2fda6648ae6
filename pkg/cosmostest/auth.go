package cosmostest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// authorize checks the Authorization header the way the service does.
// raw is the request's Authorization value (the log redacts the header).
// Error messages never contain the key, the expected signature or a token.
func (h *Handler) authorize(r *http.Request, raw string) error {
	if h.acceptedBefore(raw, r) {
		return nil
	}
	if raw == "" {
		return errors.New("required Authorization header is missing")
	}
	decoded, err := url.QueryUnescape(raw)
	if err != nil {
		return errors.New("the Authorization header is not URL encoded")
	}
	typ, ver, sig, err := parseAuthorization(decoded)
	if err != nil {
		return err
	}
	if ver != "1.0" {
		return fmt.Errorf("unsupported authorization version %q", ver)
	}
	switch typ {
	case "master":
		return h.verifyMasterKey(r, raw, sig)
	case "aad":
		if h.cfg.tokenVerifier == nil {
			return errors.New("the account does not accept Entra ID (aad) authorization")
		}
		if err := h.cfg.tokenVerifier(sig); err != nil {
			return fmt.Errorf("the Entra ID token was rejected: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unsupported authorization type %q", typ)
}

// acceptedAuth remembers the last master-key Authorization a server
// accepted, with the verb, path and date it was signed for. A client's
// concurrent requests to one path share that value for a whole second (the
// date is signed at one-second resolution), so most of them are accepted
// after comparing a few strings and checking the clock skew again, instead of
// decoding, parsing and verifying the same signature once more. The result of
// a signature check depends only on these inputs and the server's key, so a
// hit answers exactly as the full check would; failures are never cached.
type acceptedAuth struct {
	mu                      sync.Mutex
	raw, method, path, date string
	at                      time.Time // date, parsed
}

func requestDate(r *http.Request) string {
	if date := headerValue(r.Header, hdrDate); date != "" {
		return date
	}
	return headerValue(r.Header, "Date")
}

// acceptedBefore reports whether raw is the Authorization value last
// accepted for r's verb, path and date, and that date is still within the
// allowed clock skew.
func (h *Handler) acceptedBefore(raw string, r *http.Request) bool {
	if raw == "" {
		return false
	}
	date := requestDate(r)
	memo := &h.lastAuth
	memo.mu.Lock()
	hit := memo.raw == raw && memo.method == r.Method && memo.path == r.URL.Path && memo.date == date
	at := memo.at
	memo.mu.Unlock()
	return hit && withinSkew(at, h.cfg.maxClockSkew)
}

func withinSkew(t time.Time, maxSkew time.Duration) bool {
	skew := time.Since(t)
	return skew <= maxSkew && -skew <= maxSkew
}

func (h *Handler) rememberAccepted(raw, method, path, date string, at time.Time) {
	memo := &h.lastAuth
	memo.mu.Lock()
	memo.raw, memo.method, memo.path, memo.date, memo.at = raw, method, path, date, at
	memo.mu.Unlock()
}

// parseAuthorization splits "type=..&ver=..&sig=.." without treating '+' in
// the base64 signature as a space.
func parseAuthorization(s string) (typ, ver, sig string, err error) {
	for _, part := range strings.Split(s, "&") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return "", "", "", errors.New("malformed Authorization header")
		}
		switch k {
		case "type":
			typ = v
		case "ver":
			ver = v
		case "sig":
			sig = v
		}
	}
	if typ == "" || sig == "" {
		return "", "", "", errors.New("malformed Authorization header: type and sig are required")
	}
	return typ, ver, sig, nil
}

func (h *Handler) verifyMasterKey(r *http.Request, raw, sig string) error {
	date := requestDate(r)
	if date == "" {
		return errors.New("the request has neither an x-ms-date nor a Date header")
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return fmt.Errorf("the date header %q is not in RFC 1123 format", date)
	}
	if !withinSkew(t, h.cfg.maxClockSkew) {
		return fmt.Errorf("the authorization token is not valid at the current time: request date %s differs from the server time by more than %s", date, h.cfg.maxClockSkew)
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return errors.New("the signature is not valid base64")
	}
	resType, link := resourceTypeAndLink(r.URL.Path)
	if want := masterKeyMAC(h.keyBytes, r.Method, resType, link, date); !hmac.Equal(got, want[:]) {
		// Like the service, name the string that was signed (it holds no secret).
		return fmt.Errorf("the input authorization token can't serve the request; the payload to sign was %q",
			stringToSign(r.Method, resType, link, date))
	}
	h.rememberAccepted(raw, r.Method, r.URL.Path, date, t)
	return nil
}

// resourceTypeAndLink derives the resource type and link that are signed.
// Path segments alternate type/id: a path ending in an id names that
// resource (type = the segment before it, link = the whole path); a path
// ending in a type names a feed (type = last segment, link = its owner).
func resourceTypeAndLink(p string) (resType, link string) {
	segs := splitPath(p)
	n := len(segs)
	switch {
	case n == 0:
		return "", ""
	case n%2 == 0:
		return segs[n-2], strings.Join(segs, "/")
	default:
		return segs[n-1], strings.Join(segs[:n-1], "/")
	}
}

func stringToSign(method, resType, link, date string) string {
	return strings.ToLower(method) + "\n" + strings.ToLower(resType) + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"
}

func masterKeyMAC(key []byte, method, resType, link, date string) [sha256.Size]byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(stringToSign(method, resType, link, date)))
	var mac [sha256.Size]byte
	h.Sum(mac[:0])
	return mac
}

func masterKeySignature(key []byte, method, resType, link, date string) string {
	mac := masterKeyMAC(key, method, resType, link, date)
	return base64.StdEncoding.EncodeToString(mac[:])
}

// MasterKeyAuthorization returns the Authorization header value for a request
// signed with a base64 account key, as Cosmos DB clients compute it. It is
// exported for tests that talk to the server with a plain HTTP client.
func MasterKeyAuthorization(base64Key, method, path, date string) (string, error) {
	key, err := base64.StdEncoding.DecodeString(base64Key)
	if err != nil {
		return "", fmt.Errorf("decode account key: %w", err)
	}
	resType, link := resourceTypeAndLink(path)
	return url.QueryEscape("type=master&ver=1.0&sig=" + masterKeySignature(key, method, resType, link, date)), nil
}
