package account

import (
	"strings"
	"testing"
)

const testKey = "c2VjcmV0LWtleS1mb3ItdGVzdHM=" // base64, decodes to a test secret

func TestParseConnectionString(t *testing.T) {
	u, k, err := ParseConnectionString(" accountendpoint=https://myaccount.documents.azure.com:443/ ; AccountKey=" + testKey + "; ApplicationName=x;")
	if err != nil {
		t.Fatal(err)
	}
	if u.String() != "https://myaccount.documents.azure.com:443/" || string(k) != "secret-key-for-tests" {
		t.Fatalf("got %s and %q", u, k)
	}
	for _, bad := range []string{"", "AccountKey=" + testKey, "AccountEndpoint=https://a.documents.azure.com/", "garbage;" + testKey,
		"AccountEndpoint=https://a.documents.azure.com/;AccountKey=%%%" + testKey, "AccountEndpoint=https:///;AccountKey=" + testKey} {
		_, _, err := ParseConnectionString(bad)
		if err == nil {
			t.Errorf("ParseConnectionString(%q) succeeded", bad)
			continue
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("error quotes the key: %v", err)
		}
	}
}

func TestNameFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"myaccount.documents.azure.com":             "myaccount",
		"MyAccount.privatelink.documents.azure.com": "myaccount",
		"127.0.0.1": "127.0.0.1",
		"localhost": "localhost",
		"::1":       "::1",
	} {
		if got := NameFromHost(host); got != want {
			t.Errorf("NameFromHost(%q) = %q, want %q", host, got, want)
		}
	}
}

// Known clouds take the token resource and authority from KEDA's Azure
// environments; the scope is "<resource>/.default". Private clouds name both.
func TestCloudEndpoints(t *testing.T) {
	for _, tc := range []struct {
		settings            Settings
		resource, authority string
	}{
		{Settings{}, "https://cosmos.azure.com", "https://login.microsoftonline.com/"},
		{Settings{Cloud: "AzureUSGovernmentCloud"}, "https://cosmos.azure.com", "https://login.microsoftonline.us/"},
		{Settings{Cloud: "azurechinacloud"}, "https://cosmos.azure.com", "https://login.chinacloudapi.cn/"},
		{Settings{Cloud: "Private", CosmosDBResourceURL: "https://cosmos.example", ActiveDirectoryEndpoint: "https://login.example/"}, "https://cosmos.example", "https://login.example/"},
		{Settings{Cloud: "AzurePublicCloud", CosmosDBResourceURL: "https://ignored.example"}, "https://cosmos.azure.com", "https://login.microsoftonline.com/"},
	} {
		resource, authority, err := cloudEndpoints(tc.settings)
		if err != nil || resource != tc.resource || authority != tc.authority {
			t.Errorf("cloudEndpoints(%+v) = %q, %q, %v; want %q, %q", tc.settings, resource, authority, err, tc.resource, tc.authority)
		}
	}
}
