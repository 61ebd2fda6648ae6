package account

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
	// One byte past the cap tells an oversize body from one exactly at it.
	limited := io.LimitReader(r, MaxResponseBytes+1)
	var body []byte
	var err error
	if contentLength >= 0 && contentLength <= MaxResponseBytes {
		// The length is announced: read into one buffer of that size (plus
		// the room ReadFrom wants to see the end) instead of io.ReadAll's
		// growing series of buffers and final copy. A wrong announcement
		// only costs a reallocation; the cap still applies.
		var buf bytes.Buffer
		buf.Grow(int(contentLength) + bytes.MinRead)
		_, err = buf.ReadFrom(limited)
		body = buf.Bytes()
	} else {
		body, err = io.ReadAll(limited)
	}
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if len(body) > MaxResponseBytes {
		return nil, responseTooLargeError{}
	}
	return body, nil
}
