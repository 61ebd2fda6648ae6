package main

import (
	"bytes"
	"context"
	"testing"
)

// runCmd runs cosmoslag in-process, through its dispatch, and returns its
// exit code and output.
func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}
