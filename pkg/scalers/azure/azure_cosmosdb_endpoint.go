package azure

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// The endpoint rule: a credential goes only where its owner sends it. The
// ScaledObject's author writes trigger metadata; a TriggerAuthentication's
// author owns the credentials in it and, with azure-workload, KEDA's workload
// identity. A destination outside the known clouds (endpoint, leaseEndpoint,
// cloud: Private, cosmosDBResourceURL, activeDirectoryEndpoint) may take the
// TriggerAuthentication's credential only when it is given there too.

// cosmosDBEmulatorKey is the Cosmos DB Emulator's published account key.
const cosmosDBEmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

var cosmosDBKnownClouds = []AzEnvironment{PublicCloud, USGovernmentCloud, ChinaCloud, GermanCloud}

// cosmosDBKnownDomains: the known clouds' account domains, and Fabric's.
func cosmosDBKnownDomains() []string {
	domains := []string{}
	for _, env := range cosmosDBKnownClouds {
		domains = append(domains, env.CosmosDBDNSSuffix)
	}
	return append(domains, "cosmos.fabric.microsoft.com")
}

// cosmosDBKnownCloudDomains are the domains every host of a known cloud's
// services lives under (Resource Manager, Entra ID, Graph, Key Vault,
// Storage, Cosmos DB …): the last two labels of each endpoint and suffix
// KEDA describes the clouds with, which is the registrable domain for all of
// them (azure.com, windows.net, chinacloudapi.cn …).
func cosmosDBKnownCloudDomains() []string {
	var domains []string
	add := func(value string) {
		host := value
		if u, err := url.Parse(value); err == nil && u.Host != "" {
			host = u.Hostname()
		}
		labels := strings.Split(strings.Trim(strings.ToLower(host), "."), ".")
		if len(labels) >= 2 {
			domains = append(domains, strings.Join(labels[len(labels)-2:], "."))
		}
	}
	for _, env := range cosmosDBKnownClouds {
		for _, v := range []reflect.Value{reflect.ValueOf(env), reflect.ValueOf(env.ResourceIdentifiers)} {
			for i := range v.NumField() {
				if f := v.Field(i); f.Kind() == reflect.String {
					add(f.String())
				}
			}
		}
	}
	add("cosmos.fabric.microsoft.com")
	add("cosmos.azure.de") // the German cloud's Cosmos DB resource; KEDA's description names another
	slices.Sort(domains)
	return slices.Compact(domains)
}

func isUnderCosmosDBDomain(host string, domains []string) bool {
	return slices.ContainsFunc(domains, func(domain string) bool {
		return host == domain || strings.HasSuffix(host, "."+domain)
	})
}

// fromTriggerAuthentication reports whether param's value is the
// TriggerAuthentication's: it is set there (it then wins over metadata).
func (a CosmosDBAuth) fromTriggerAuthentication(param string) bool {
	return a.TriggerAuthentication[param]
}

// tokenFromTriggerAuthentication: workload identity is always the
// TriggerAuthentication's; a client secret is where it was given.
func (a CosmosDBAuth) tokenFromTriggerAuthentication() bool {
	return a.PodIdentity.Provider == v1alpha1.PodIdentityProviderAzureWorkload || a.fromTriggerAuthentication("clientSecret")
}

// checkPrivateDestination lets a credential that the TriggerAuthentication
// owns go to a host outside the known clouds only when param and cloud:
// Private are given in that TriggerAuthentication too.
func (a CosmosDBAuth) checkPrivateDestination(param, credential string, ownedByTriggerAuthentication bool) error {
	switch {
	case !ownedByTriggerAuthentication:
		return nil
	case !a.fromTriggerAuthentication(param):
		return fmt.Errorf("%s: given in trigger metadata, it may not send the TriggerAuthentication's %s outside the known clouds; move %s (and cloud: Private) into the TriggerAuthentication", param, credential, param)
	case !a.fromTriggerAuthentication("cloud"):
		return fmt.Errorf("cloud: Private given in trigger metadata may not send the TriggerAuthentication's %s to the host of %s; move cloud into the TriggerAuthentication", credential, param)
	}
	return nil
}

// checkCosmosDBEndpoint sends a key or token given apart from its endpoint
// over https to a known cloud's Cosmos DB host, to loopback, or with cloud:
// Private to a host its owner chose. The emulator's key is public.
func checkCosmosDBEndpoint(auth CosmosDBAuth, endpoint *url.URL, key, param string, ownedByTriggerAuthentication bool) error {
	host := strings.TrimSuffix(strings.ToLower(endpoint.Hostname()), ".")
	if isCosmosDBLoopback(host) || strings.TrimSpace(key) == cosmosDBEmulatorKey {
		return nil
	}
	if endpoint.Scheme != "https" {
		return fmt.Errorf("%s: an account key or token is only sent over https (or to a loopback host)", param)
	}
	domains := cosmosDBKnownDomains()
	if isUnderCosmosDBDomain(host, domains) {
		return nil
	}
	if !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return fmt.Errorf("%s: an account key or token is only sent to hosts under %s; use a connection string, which binds its own endpoint, or for a private cloud give cloud: Private and %s where the credential is given",
			param, strings.Join(domains, ", "), param)
	}
	return auth.checkPrivateDestination(param, "account key or token", ownedByTriggerAuthentication)
}

// checkCosmosDBTokenResource: with cloud: Private, a token is requested only
// for a private resource: never for a host of a known cloud, whose services
// (Cosmos DB, Resource Manager, Key Vault …) would accept it.
func checkCosmosDBTokenResource(auth CosmosDBAuth, resourceHost string) error {
	if !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return nil
	}
	if isUnderCosmosDBDomain(resourceHost, cosmosDBKnownCloudDomains()) {
		return fmt.Errorf("cosmosDBResourceURL: with cloud: Private it must not be a host of a known cloud (%s); for a known cloud, set cloud to its name",
			cosmosDBExcerpt(resourceHost))
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
	return auth.checkPrivateDestination(DefaultActiveDirectoryEndpointKey, "client secret", auth.fromTriggerAuthentication("clientSecret"))
}
