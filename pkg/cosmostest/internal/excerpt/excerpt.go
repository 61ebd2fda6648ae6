// Package excerpt shortens what a client sent before the test server quotes
// it in an error body or a control API answer, so that no request can make
// an answer (or a client's log of it) large.
package excerpt

import (
	"strconv"
	"unicode/utf8"
)

// Cosmos DB ids are at most 255 characters long: a value up to that is
// quoted whole, so every valid id reads in full in an error. A longer one is
// cut to a prefix a reader can still recognise.
const (
	wholeRunes  = 255
	prefixRunes = 32
)

// Of returns value whole when it has at most 255 characters, otherwise its
// first 32 characters, "…" and its length in bytes: "aaaa… (1048576 bytes)".
func Of(value string) string {
	if len(value) <= wholeRunes || utf8.RuneCountInString(value) <= wholeRunes {
		return value
	}
	cut := 0
	for i := 0; i < prefixRunes; i++ {
		_, size := utf8.DecodeRuneInString(value[cut:])
		cut += size
	}
	return value[:cut] + "… (" + strconv.Itoa(len(value)) + " bytes)"
}
