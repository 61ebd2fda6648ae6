package excerpt

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"empty", "", ""},
		{"short", "orders", "orders"},
		{"an id at Cosmos DB's limit is whole", strings.Repeat("a", 255), strings.Repeat("a", 255)},
		{"255 multi-byte characters are whole", strings.Repeat("é", 255), strings.Repeat("é", 255)},
		{"one character over", strings.Repeat("a", 256), strings.Repeat("a", 32) + "… (256 bytes)"},
		{"1 MiB", strings.Repeat("a", 1<<20), strings.Repeat("a", 32) + "… (1048576 bytes)"},
		{"cut on a character boundary", strings.Repeat("€", 300), strings.Repeat("€", 32) + "… (900 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Of(tc.value)
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("Of = %q, want %q", got, tc.want)
			}
		})
	}
}
