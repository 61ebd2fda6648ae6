// Package excerpt is how this repository's commands and its embedded server
// (pkg/cosmostest) echo a value they were given: bounded, so that no input
// makes a message, an error body or a log line of it large.
package excerpt

import (
	"fmt"
	"unicode/utf8"
)

// Of is how a user-supplied value is echoed in an error or a message:
// whole up to Cosmos DB's id limit (255 characters), otherwise its first 32
// characters and its length in bytes ("aaaa… (1048576 bytes)"), so no input
// makes a message large. Secrets are never passed to it.
func Of(value string) string {
	if len(value) <= 255 || utf8.RuneCountInString(value) <= 255 {
		return value
	}
	cut, runes := 0, 0
	for i := range value {
		if runes == 32 {
			cut = i
			break
		}
		runes++
	}
	return fmt.Sprintf("%s… (%d bytes)", value[:cut], len(value))
}
