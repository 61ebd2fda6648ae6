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
// Error messages never contain the key, the expected signature or a token.
func (s *Server) authorize(r *http.Request) error {
	raw := r.Header.Get("Authorization")
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
		return s.verifyMasterKey(r, sig)
	case "aad":
		if s.cfg.tokenVerifier == nil {
			return errors.New("the account does not accept Entra ID (aad) authorization")
		}
		if err := s.cfg.tokenVerifier(sig); err != nil {
			return fmt.Errorf("the Entra ID token was rejected: %w", err)
		}
		return nil
	}
	return fmt.Errorf("unsupported authorization type %q", typ)
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

func (s *Server) verifyMasterKey(r *http.Request, sig string) error {
	date := r.Header.Get(hdrDate)
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return errors.New("the request has neither an x-ms-date nor a Date header")
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return fmt.Errorf("the date header %q is not in RFC 1123 format", date)
	}
	if skew := time.Since(t); skew > s.cfg.maxClockSkew || -skew > s.cfg.maxClockSkew {
		return fmt.Errorf("the authorization token is not valid at the current time: request date %s differs from the server time by more than %s", date, s.cfg.maxClockSkew)
	}
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return errors.New("the signature is not valid base64")
	}
	if want := s.expectedMAC(r.Method, r.URL.Path, date); !hmac.Equal(got, want[:]) {
		// Like the service, name the string that was signed (it holds no secret).
		resType, link := resourceTypeAndLink(r.URL.Path)
		return fmt.Errorf("the input authorization token can't serve the request; the payload to sign was %q",
			stringToSign(r.Method, resType, link, date))
	}
	return nil
}

// lastMAC memoises the last expected master-key signature. The concurrent
// requests of a client share verb, path and (one-second) date, so most of
// them find it here instead of hashing again; a miss (another server, path or
// second) only costs the computation.
var lastMAC struct {
	sync.Mutex
	key, method, path, date string
	mac                     [sha256.Size]byte
}

func (s *Server) expectedMAC(method, path, date string) [sha256.Size]byte {
	lastMAC.Lock()
	defer lastMAC.Unlock()
	if lastMAC.key != s.cfg.key || lastMAC.method != method || lastMAC.path != path || lastMAC.date != date {
		resType, link := resourceTypeAndLink(path)
		lastMAC.key, lastMAC.method, lastMAC.path, lastMAC.date = s.cfg.key, method, path, date
		lastMAC.mac = masterKeyMAC(s.keyBytes, method, resType, link, date)
	}
	return lastMAC.mac
}

// resourceTypeAndLink derives the resource type and link that are signed.
// Path segments alternate type/id: a path ending in an id names that
// resource (type = the segment before it, link = the whole path); a path
// ending in a type names a feed (type = last segment, link = its owner).
func resourceTypeAndLink(p string) (resType, link string) {
	segs := pathSegments(p)
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
