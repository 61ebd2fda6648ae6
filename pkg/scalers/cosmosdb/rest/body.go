package rest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// boundedTransport reads each response body in full, at most
// MaxResponseBytes of it, as part of the try that received it. It sits below
// every policy of the pipeline, so:
//   - the cap bounds memory, not only what the caller accepts: azcore's own
//     body download (which the client skips for successful responses, see
//     NewRequestURL) would otherwise buffer a body of any size first;
//   - a connection dropped mid-body is a failed try, which the retry policy
//     retries like any other transport error, and the try timeout covers the
//     body too;
//   - a body over the cap is an error that is not retried.
type boundedTransport struct{ next policy.Transporter }

func (t boundedTransport) Do(req *http.Request) (*http.Response, error) {
	resp, err := t.next.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := readCapped(resp.Body, resp.ContentLength)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	buffered := &bufferedBody{data: body}
	buffered.Reset(body)
	resp.Body = buffered
	return resp, nil
}

// bufferedBody is a response body already in memory; ReadBody hands out its
// bytes without copying them again.
type bufferedBody struct {
	bytes.Reader // by value: one allocation per response, not two
	data         []byte
}

func (*bufferedBody) Close() error { return nil }

// unread is what has not been read from the body yet.
func (b *bufferedBody) unread() []byte { return b.data[len(b.data)-b.Len():] }

// responseTooLargeError marks a body over MaxResponseBytes. NonRetriable
// tells azcore's retry policy that asking again will not help.
type responseTooLargeError struct{}

func (responseTooLargeError) Error() string {
	return fmt.Sprintf("response larger than %d bytes", MaxResponseBytes)
}

func (responseTooLargeError) NonRetriable() {}

// readCapped reads r to the end, refusing more than MaxResponseBytes.
// contentLength is the announced length, or -1.
func readCapped(r io.Reader, contentLength int64) ([]byte, error) {
	if contentLength >= 0 && contentLength <= MaxResponseBytes {
		// The length is announced (always, for Cosmos DB): read it into one
		// buffer of exactly that size, then make sure nothing follows. A
		// short body is an error like any cut connection; a longer one than
		// announced falls through to the capped read below.
		body := make([]byte, contentLength)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, fmt.Errorf("reading response: %w", err)
		}
		var probe [1]byte
		n, err := r.Read(probe[:])
		if n == 0 && err == io.EOF {
			return body, nil
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("reading response: %w", err)
		}
		rest, err := readUnannounced(io.MultiReader(bytes.NewReader(probe[:n]), r), MaxResponseBytes-int64(len(body)))
		if err != nil {
			return nil, err
		}
		return append(body, rest...), nil
	}
	return readUnannounced(r, MaxResponseBytes)
}

// readUnannounced reads r to the end, refusing more than limit bytes.
func readUnannounced(r io.Reader, limit int64) ([]byte, error) {
	// One byte past the limit tells an oversize body from one exactly at it.
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, responseTooLargeError{}
	}
	return body, nil
}
