package azure

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// cosmosDBEmulatorKey is the Cosmos DB Emulator's published account key.
const cosmosDBEmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

var cosmosDBKnownClouds = []AzEnvironment{PublicCloud, USGovernmentCloud, ChinaCloud, GermanCloud}

// cosmosDBKnownDomains: the known clouds' account domains, and Fabric's.
func cosmosDBKnownDomains() []string {
	var domains []string
	for _, env := range cosmosDBKnownClouds {
		domains = append(domains, env.CosmosDBDNSSuffix)
	}
	return append(domains, "cosmos.fabric.microsoft.com")
}

// cosmosDBKnownCloudDomains: the last two labels of every URL and suffix
// KEDA describes the known clouds with (azure.com, windows.net …).
func cosmosDBKnownCloudDomains() []string {
	domains := []string{"microsoft.com", "azure.de"} // Fabric; the German cloud's Cosmos DB resource
	for _, env := range cosmosDBKnownClouds {
		for _, v := range []reflect.Value{reflect.ValueOf(env), reflect.ValueOf(env.ResourceIdentifiers)} {
			for i := range v.NumField() {
				host := v.Field(i).String()
				if u, err := url.Parse(host); err == nil && u.Host != "" {
					host = u.Hostname()
				}
				if labels := strings.Split(strings.Trim(strings.ToLower(host), "."), "."); len(labels) >= 2 {
					domains = append(domains, strings.Join(labels[len(labels)-2:], "."))
				}
			}
		}
	}
	return domains
}

func isUnderCosmosDBDomain(host string, domains []string) bool {
	return slices.ContainsFunc(domains, func(domain string) bool {
		return host == domain || strings.HasSuffix(host, "."+domain)
	})
}

// checkPrivateDestination: a TriggerAuthentication's credential leaves the
// known clouds only for destinations (param, cloud) given there too; the
// ScaledObject's author, who writes the metadata, does not own it.
func (a CosmosDBAuth) checkPrivateDestination(param, credential string, ownedByTriggerAuthentication bool) error {
	switch {
	case !ownedByTriggerAuthentication:
		return nil
	case !a.TriggerAuthentication[param]:
		return fmt.Errorf("%s: given in trigger metadata, it may not send the TriggerAuthentication's %s outside the known clouds; move %s (and cloud: Private) into the TriggerAuthentication", param, credential, param)
	case !a.TriggerAuthentication["cloud"]:
		return fmt.Errorf("cloud: Private given in trigger metadata may not send the TriggerAuthentication's %s to the host of %s; move cloud into the TriggerAuthentication", credential, param)
	}
	return nil
}

// tokenFromTriggerAuthentication: workload identity is always the
// TriggerAuthentication's; a client secret is where it was given.
func (a CosmosDBAuth) tokenFromTriggerAuthentication() bool {
	return a.PodIdentity.Provider == v1alpha1.PodIdentityProviderAzureWorkload || a.TriggerAuthentication["clientSecret"]
}

// checkCosmosDBEndpoint sends a key or token given apart from its endpoint to
// a known cloud's Cosmos DB host, loopback, or a private host its owner chose.
func checkCosmosDBEndpoint(auth CosmosDBAuth, endpoint *url.URL, key, param string, ownedByTriggerAuthentication bool) error {
	host := strings.TrimSuffix(strings.ToLower(endpoint.Hostname()), ".")
	switch {
	case isCosmosDBLoopback(host) || strings.TrimSpace(key) == cosmosDBEmulatorKey:
		return nil
	case endpoint.Scheme != "https":
		return fmt.Errorf("%s: an account key or token is only sent over https (or to a loopback host)", param)
	case isUnderCosmosDBDomain(host, cosmosDBKnownDomains()):
		return nil
	case !strings.EqualFold(auth.Cloud, PrivateCloud):
		return fmt.Errorf("%s: an account key or token is only sent to hosts under %s; use a connection string, which binds its own endpoint, or for a private cloud give cloud: Private and %s where the credential is given",
			param, strings.Join(cosmosDBKnownDomains(), ", "), param)
	}
	return auth.checkPrivateDestination(param, "account key or token", ownedByTriggerAuthentication)
}

// checkCosmosDBTokenResource: with cloud: Private, no token for a host of a
// known cloud, whose services (Cosmos DB, Resource Manager …) would accept it.
func checkCosmosDBTokenResource(auth CosmosDBAuth, resourceHost string) error {
	if !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return nil
	}
	if isUnderCosmosDBDomain(resourceHost, cosmosDBKnownCloudDomains()) {
		return fmt.Errorf("cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud (%s); for a known cloud, set cloud to its name", cosmosDBExcerpt(resourceHost))
	}
	return auth.checkPrivateDestination("cosmosDBResourceURL", "token", auth.tokenFromTriggerAuthentication())
}

// checkCosmosDBAuthority sends a client secret to a known cloud's Entra ID
// authority, to loopback, or to one its owner chose.
func checkCosmosDBAuthority(auth CosmosDBAuth, authorityHost string) error {
	known := isCosmosDBLoopback(authorityHost) || slices.ContainsFunc(cosmosDBKnownClouds, func(env AzEnvironment) bool {
		u, err := url.Parse(env.ActiveDirectoryEndpoint)
		return err == nil && strings.EqualFold(u.Hostname(), authorityHost)
	})
	if known || !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return nil
	}
	return auth.checkPrivateDestination(DefaultActiveDirectoryEndpointKey, "client secret", auth.TriggerAuthentication["clientSecret"])
}
