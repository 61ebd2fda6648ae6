package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// ReportFailure prints command's failure: doc, its JSON document holding
// the error, with -o json; the warnings and msg on stderr. Exit status 1.
func ReportFailure(command string, stdout, stderr io.Writer, output string, doc any, warnings []string, msg string) int {
	if output == "json" {
		_ = WriteJSON(stdout, doc)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "cosmoslag %s: warning: %s\n", command, w)
	}
	fmt.Fprintf(stderr, "cosmoslag %s: %s\n", command, msg)
	return ExitFailed
}

// WriteReport prints command's report doc as JSON with -o json, else as
// text writes it, and returns code; a failed write is exit status 1.
func WriteReport(command string, stdout, stderr io.Writer, output string, doc any, text func(io.Writer) error, code int) int {
	var err error
	if output == "json" {
		err = WriteJSON(stdout, doc)
	} else {
		err = text(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cosmoslag %s: %v\n", command, err)
		return ExitFailed
	}
	return code
}

// jsonRequested reports whether the arguments ask for -o json, for a flag
// error that stops parsing before -o is read.
func jsonRequested(args []string) bool {
	for i, a := range args {
		switch a {
		case "-o=json", "--o=json":
			return true
		case "-o", "--o":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		case "--":
			return false
		}
	}
	return false
}

// Failure is check's JSON document when the flags, files or trigger
// configuration are invalid and no estimate was tried.
type Failure struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exitCode"`
}

func WriteJSON(w io.Writer, r any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// IsTerminal reports whether w is a terminal (a character device).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
