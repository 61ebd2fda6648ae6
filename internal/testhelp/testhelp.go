// Package testhelp holds the helpers that tests of several packages share,
// so that each exists once.
package testhelp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Body is a request body: nil for none, a string as it is, anything else
// marshalled to JSON (a failure ends the test).
func Body(t testing.TB, body any) io.Reader {
	t.Helper()
	switch b := body.(type) {
	case nil:
		return nil
	case string:
		return strings.NewReader(b)
	}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(raw)
}
