package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls a control API.
type Client struct {
	base string
	http *http.Client
}

// NewClient calls the control API at baseURL ("http://host:port") through
// httpClient (nil: a client without a proxy).
func NewClient(baseURL string, httpClient *http.Client) *Client {
	if httpClient == nil {
		httpClient = &http.Client{Transport: &http.Transport{Proxy: nil}}
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), http: httpClient}
}

// Error is an answer other than success.
type Error struct {
	method, path string
	Status       int
	Message      string // the errorBody's error, or the body as it came
}

func (e *Error) Error() string {
	return fmt.Sprintf("control %s %s: %d %s: %s", e.method, e.path, e.Status, http.StatusText(e.Status), e.Message)
}

// CreateContainer creates the database and the container if missing.
func (c *Client) CreateContainer(ctx context.Context, req CreateContainerRequest) (Container, error) {
	var out Container
	return out, c.call(ctx, http.MethodPost, routeContainers, req, &out)
}

// Container returns the container with its live ranges.
func (c *Client) Container(ctx context.Context, database, container string) (Container, error) {
	var out Container
	path := "/control/containers/" + url.PathEscape(database) + "/" + url.PathEscape(container) + "/ranges"
	return out, c.call(ctx, http.MethodGet, path, nil, &out)
}

// CreateLeases writes a processor's first leases.
func (c *Client) CreateLeases(ctx context.Context, req CreateLeasesRequest) (Leases, error) {
	var out Leases
	return out, c.call(ctx, http.MethodPost, RouteProcessors, req, &out)
}

// PartitionKey returns a fresh partition key value whose items land in the
// live range rangeID.
func (c *Client) PartitionKey(ctx context.Context, database, container, rangeID string) (string, error) {
	var out PartitionKey
	q := url.Values{"database": {database}, "container": {container}, "range": {rangeID}}
	return out.PartitionKey, c.call(ctx, http.MethodGet, routePartitionKey+"?"+q.Encode(), nil, &out)
}

// Split splits a live range at its midpoint.
func (c *Client) Split(ctx context.Context, database, container, rangeID string) (Split, error) {
	var out Split
	return out, c.call(ctx, http.MethodPost, routeSplit, splitRequest{Database: database, Container: container, Range: rangeID}, &out)
}

// Merge merges two adjacent live ranges into one and returns it.
func (c *Client) Merge(ctx context.Context, database, container, rangeID, otherID string) (Range, error) {
	var out Range
	req := mergeRequest{Database: database, Container: container, Ranges: []string{rangeID, otherID}}
	return out, c.call(ctx, http.MethodPost, routeMerge, req, &out)
}

// Requests returns the account's request log (GET /control/requests).
func (c *Client) Requests(ctx context.Context) (Requests, error) {
	var out Requests
	return out, c.call(ctx, http.MethodGet, routeRequests, nil, &out)
}

// Healthy reports nil once the control API answers its health check.
func (c *Client) Healthy(ctx context.Context) error {
	return c.call(ctx, http.MethodGet, routeHealthz, nil, nil)
}

func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{method: method, path: path, Status: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
		var eb errorBody
		if json.Unmarshal(raw, &eb) == nil && eb.Error != "" {
			e.Message = eb.Error
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("control %s %s: decode the reply: %w", method, path, err)
	}
	return nil
}
