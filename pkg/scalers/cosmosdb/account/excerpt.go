package account

import (
	"fmt"
	"unicode/utf8"
)

// Limits of Excerpt: a value up to Cosmos DB's id limit (255 characters)
// is echoed whole, so a valid id always reads in full in an error; a
// longer one is cut to a prefix that still lets a reader recognise it.
const (
	excerptWholeRunes  = 255
	excerptPrefixRunes = 32
)

// Excerpt is how a user-supplied value is echoed in an error, event or log:
// whole when short, otherwise a short prefix and the value's length in
// bytes ("aaaa… (1048576 bytes)"), so no input can make a message large.
// Secrets are never passed to it: they are not echoed at all.
func Excerpt(value string) string {
	if len(value) <= excerptWholeRunes || utf8.RuneCountInString(value) <= excerptWholeRunes {
		return value
	}
	cut, runes := 0, 0
	for i := range value {
		if runes == excerptPrefixRunes {
			cut = i
			break
		}
		runes++
	}
	return fmt.Sprintf("%s… (%d bytes)", value[:cut], len(value))
}
