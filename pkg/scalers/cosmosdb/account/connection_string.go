package account

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ParseConnectionString extracts the endpoint and account key from a Cosmos DB
// connection string of the form
// "AccountEndpoint=https://<account>.documents.azure.com:443/;AccountKey=<key>;".
// Errors never quote the input: it holds a secret.
func ParseConnectionString(connection string) (*url.URL, []byte, error) {
	endpoint, key, err := SplitConnectionString(connection)
	if err != nil {
		return nil, nil, err
	}
	if endpoint == "" {
		return nil, nil, errors.New("connection string has no AccountEndpoint")
	}
	if key == "" {
		return nil, nil, errors.New("connection string has no AccountKey")
	}
	u, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, nil, fmt.Errorf("connection string AccountEndpoint: %w", err)
	}
	k, err := DecodeKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("connection string AccountKey: %w", err)
	}
	return u, k, nil
}

// SplitConnectionString returns the AccountEndpoint and AccountKey parts of
// a connection string as written, "" for a missing part. Names are matched
// case-insensitively and unknown parts are ignored, as the SDKs do.
func SplitConnectionString(connection string) (endpoint, key string, err error) {
	for part := range strings.SplitSeq(connection, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		if !ok {
			return "", "", errors.New("malformed connection string: every part must be Name=Value")
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "accountendpoint":
			endpoint = strings.TrimSpace(value)
		case "accountkey":
			key = strings.TrimSpace(value)
		}
	}
	return endpoint, key, nil
}

// maxHostLength is the longest DNS name; a longer host cannot be resolved,
// and its lookup error would quote it whole.
const maxHostLength = 253

// ParseEndpoint validates an account endpoint and normalises it to
// scheme://host[:port]/ so that request paths can be appended.
func ParseEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return nil, errors.New("not a valid URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("scheme must be https, got %q", Excerpt(u.Scheme))
	}
	if u.Hostname() == "" {
		return nil, errors.New("URL has no host")
	}
	if n := len(u.Hostname()); n > maxHostLength {
		return nil, fmt.Errorf("host name must be at most %d characters long (the DNS limit), got %d", maxHostLength, n)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("URL must not carry user info, query or fragment")
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		return nil, fmt.Errorf("URL must not have a path, got %q", Excerpt(u.Path))
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}, nil
}

// DecodeKey decodes a base64 account key. Cosmos DB keys are 64 random bytes,
// but emulators use other lengths, so only emptiness is checked beyond base64.
func DecodeKey(key string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil {
		return nil, errors.New("account key is not valid base64")
	}
	if len(k) == 0 {
		return nil, errors.New("account key is empty")
	}
	return k, nil
}

// isLoopback reports whether host names this machine. Bearer tokens are only
// sent over plain HTTP to such hosts (the embedded test server, an emulator).
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
