package azure

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// cosmosDBEmulatorKey is the Cosmos DB Emulator's published account key.
const cosmosDBEmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// cosmosDBKnownDomains: the known clouds' account domains, and Fabric's.
func cosmosDBKnownDomains() []string {
	domains := []string{}
	for _, env := range []AzEnvironment{PublicCloud, USGovernmentCloud, ChinaCloud, GermanCloud} {
		domains = append(domains, env.CosmosDBDNSSuffix)
	}
	return append(domains, "cosmos.fabric.microsoft.com")
}

// cosmosDBKnownResources are the token audiences of the known clouds' Cosmos DB.
var cosmosDBKnownResources = []string{"cosmos.azure.com", "cosmos.azure.us", "cosmos.azure.cn", "cosmos.azure.de"}

func isUnderCosmosDBDomain(host string, domains []string) bool {
	return slices.ContainsFunc(domains, func(domain string) bool {
		return host == domain || strings.HasSuffix(host, "."+domain)
	})
}

// checkCosmosDBEndpoint sends a key or token given apart from its endpoint
// over https to a known cloud's Cosmos DB host, to any host with cloud:
// Private, or to loopback. The emulator's key is public.
func checkCosmosDBEndpoint(auth CosmosDBAuth, endpoint *url.URL, key, param string) error {
	host := strings.TrimSuffix(strings.ToLower(endpoint.Hostname()), ".")
	if isCosmosDBLoopback(host) || strings.TrimSpace(key) == cosmosDBEmulatorKey {
		return nil
	}
	if endpoint.Scheme != "https" {
		return fmt.Errorf("%s: an account key or token is only sent over https (or to a loopback host)", param)
	}
	domains := cosmosDBKnownDomains()
	if strings.EqualFold(auth.Cloud, PrivateCloud) || isUnderCosmosDBDomain(host, domains) {
		return nil
	}
	return fmt.Errorf("%s: an account key or token is only sent to hosts under %s; use a connection string, which binds its own endpoint, or cloud: Private for other hosts",
		param, strings.Join(domains, ", "))
}

// checkCosmosDBTokenResource: with cloud: Private, a token for a known
// cloud's Cosmos DB or one of its accounts would be valid there too.
func checkCosmosDBTokenResource(auth CosmosDBAuth, resourceHost string) error {
	if strings.EqualFold(auth.Cloud, PrivateCloud) && isUnderCosmosDBDomain(resourceHost, append(cosmosDBKnownDomains(), cosmosDBKnownResources...)) {
		return fmt.Errorf("cosmosDBResourceURL: with cloud: Private it must not be a known cloud's Cosmos DB resource or account (%s); for a known cloud, set cloud to its name",
			cosmosDBExcerpt(resourceHost))
	}
	return nil
}
