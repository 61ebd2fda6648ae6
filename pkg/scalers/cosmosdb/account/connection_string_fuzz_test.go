package account

import (
	"strings"
	"testing"
)

// FuzzParseConnectionString: any input either fails without quoting its key,
// or yields an http(s) endpoint ending in "/" and a non-empty key.
func FuzzParseConnectionString(f *testing.F) {
	for _, seed := range []string{
		"AccountEndpoint=https://myaccount.documents.azure.com:443/;AccountKey=" + testKey + ";",
		"accountendpoint=http://127.0.0.1:8081/;accountkey=" + testKey,
		"AccountKey=" + testKey, "AccountEndpoint=https:///;AccountKey=" + testKey, ";;=;", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, connection string) {
		u, key, err := ParseConnectionString(connection)
		if err != nil {
			if i := strings.Index(connection, "AccountKey="); i >= 0 {
				if secret, _, _ := strings.Cut(connection[i+len("AccountKey="):], ";"); len(secret) >= 8 && strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes the key", err)
				}
			}
			return
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "/" || len(key) == 0 {
			t.Fatalf("ParseConnectionString(%q) = %v, %d key bytes", connection, u, len(key))
		}
	})
}
