package main

import (
	"context"
	"fmt"
	"io"
)

func runCheck(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "cosmoslag check: not implemented yet")
	return exitBadArgs
}
