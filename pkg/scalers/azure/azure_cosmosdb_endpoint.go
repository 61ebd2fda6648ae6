package azure

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
)

// CosmosDBPrivateCloudEnv is the KEDA operator's environment variable that
// lets KEDA's workload identity serve a private cloud:
// "domains=<suffix>[,<suffix>…];audience=<URL>;authority=<URL>".
const CosmosDBPrivateCloudEnv = "KEDA_AZURE_COSMOSDB_PRIVATE_CLOUD"

// cosmosDBCloud is where a cloud's accounts live and which token audiences
// KEDA's workload identity may be asked for there.
type cosmosDBCloud struct {
	domains   []string // account hosts are these names or under them
	audiences []string // token audiences, besides an account's own URL
	authority string   // Entra ID authority of workload identity ("": AZURE_AUTHORITY_HOST)
}

// cosmosDBKnownClouds, written out: the Cosmos DB domains of each known
// cloud (Cosmos DB in Microsoft Fabric with the public cloud's) and the
// audience KEDA's Azure environments give it.
var cosmosDBKnownClouds = map[string]cosmosDBCloud{
	"AZUREPUBLICCLOUD":       {domains: []string{"documents.azure.com", "cosmos.fabric.microsoft.com"}, audiences: []string{"https://cosmos.azure.com"}},
	"AZUREUSGOVERNMENTCLOUD": {domains: []string{"documents.azure.us"}, audiences: []string{"https://cosmos.azure.com"}},
	"AZURECHINACLOUD":        {domains: []string{"documents.azure.cn"}, audiences: []string{"https://cosmos.azure.com"}},
	"AZUREGERMANCLOUD":       {domains: []string{"documents.microsoftazure.de"}, audiences: []string{"https://cosmos.azure.com"}},
}

// cosmosDBKnownDomains: every known cloud's Cosmos DB domains.
func cosmosDBKnownDomains() []string {
	var domains []string
	for _, name := range []string{"AZUREPUBLICCLOUD", "AZUREUSGOVERNMENTCLOUD", "AZURECHINACLOUD", "AZUREGERMANCLOUD"} {
		domains = append(domains, cosmosDBKnownClouds[name].domains...)
	}
	return domains
}

// cosmosDBKnownCloud is the known cloud the cloud parameter names (the
// public one when empty), as KEDA's Azure environments name them.
func cosmosDBKnownCloud(name string) (cosmosDBCloud, bool) {
	if name == "" {
		return cosmosDBKnownClouds["AZUREPUBLICCLOUD"], true
	}
	env, err := EnvironmentFromName(name)
	if err != nil {
		return cosmosDBCloud{}, false
	}
	for _, key := range []string{"AZUREPUBLICCLOUD", "AZUREUSGOVERNMENTCLOUD", "AZURECHINACLOUD", "AZUREGERMANCLOUD"} {
		if known, _ := EnvironmentFromName(key); known.Name == env.Name {
			return cosmosDBKnownClouds[key], true
		}
	}
	return cosmosDBCloud{}, false
}

// cosmosDBPrivateCloudFromEnv reads the operator's CosmosDBPrivateCloudEnv;
// ok is false when it is unset.
func cosmosDBPrivateCloudFromEnv() (cloud cosmosDBCloud, ok bool, err error) {
	raw := strings.TrimSpace(os.Getenv(CosmosDBPrivateCloudEnv))
	if raw == "" {
		return cosmosDBCloud{}, false, nil
	}
	bad := func(why string) error {
		return fmt.Errorf("the KEDA operator's %s is not valid: %s (want domains=<suffix>[,<suffix>…];audience=https://…;authority=https://…)", CosmosDBPrivateCloudEnv, why)
	}
	for part := range strings.SplitSeq(raw, ";") {
		name, value, _ := strings.Cut(part, "=")
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "domains":
			for domain := range strings.SplitSeq(value, ",") {
				domain = strings.Trim(strings.ToLower(strings.TrimSpace(domain)), ".")
				if domain == "" || strings.ContainsAny(domain, "*/:@ ") {
					return cosmosDBCloud{}, true, bad(fmt.Sprintf("domain %q is not a DNS name", cosmosDBExcerpt(domain)))
				}
				cloud.domains = append(cloud.domains, domain)
			}
		case "audience":
			if u, err := url.Parse(value); err != nil || u.Scheme != "https" || u.Hostname() == "" {
				return cosmosDBCloud{}, true, bad("audience is not an https URL")
			}
			cloud.audiences = []string{strings.TrimSuffix(value, "/")}
		case "authority":
			if u, err := url.Parse(value); err != nil || u.Scheme != "https" || u.Hostname() == "" {
				return cosmosDBCloud{}, true, bad("authority is not an https URL")
			}
			cloud.authority = value
		case "":
		default:
			return cosmosDBCloud{}, true, bad(fmt.Sprintf("unknown name %q", cosmosDBExcerpt(strings.TrimSpace(name))))
		}
	}
	if len(cloud.domains) == 0 || len(cloud.audiences) == 0 || cloud.authority == "" {
		return cosmosDBCloud{}, true, bad("domains, audience and authority are all required")
	}
	return cloud, true, nil
}

// cosmosDBHost is a URL's host as compared: lower case, without port or
// trailing dot.
func cosmosDBHost(u *url.URL) string {
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

// isCosmosDBLoopback: emulators and tests over HTTPS (never KEDA's workload identity).
func isCosmosDBLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

func isUnderCosmosDBDomain(host string, domains []string) bool {
	return slices.ContainsFunc(domains, func(domain string) bool {
		return host == domain || strings.HasSuffix(host, "."+domain)
	})
}

// cosmosDBWorkloadCloud is where KEDA's workload identity may go for the
// trigger's cloud. The identity is the KEDA operator's, whoever wrote the
// trigger or its TriggerAuthentication: a known cloud's Cosmos DB domains
// and audience, or for cloud: Private only what the operator's
// CosmosDBPrivateCloudEnv names.
func cosmosDBWorkloadCloud(auth CosmosDBAuth) (cosmosDBCloud, error) {
	if !strings.EqualFold(auth.Cloud, PrivateCloud) {
		if cloud, ok := cosmosDBKnownCloud(auth.Cloud); ok {
			return cloud, nil
		}
		return cosmosDBCloud{}, fmt.Errorf("cloud: %q is not a known cloud", cosmosDBExcerpt(auth.Cloud))
	}
	cloud, ok, err := cosmosDBPrivateCloudFromEnv()
	switch {
	case err != nil:
		return cosmosDBCloud{}, err
	case !ok:
		return cosmosDBCloud{}, fmt.Errorf("cloud: Private with podIdentity azure-workload: KEDA's workload identity serves a private cloud only when the KEDA operator's environment variable %s names its Cosmos DB domains, token audience and authority", CosmosDBPrivateCloudEnv)
	}
	return cloud, nil
}

// checkCosmosDBWorkloadEndpoint sends KEDA's workload identity token over
// HTTPS to hosts under the cloud's Cosmos DB domains only.
func checkCosmosDBWorkloadEndpoint(auth CosmosDBAuth, cloud cosmosDBCloud, endpoint *url.URL, param string) error {
	host := cosmosDBHost(endpoint)
	where := "the Cosmos DB domains of cloud " + auth.Cloud
	switch {
	case auth.Cloud == "":
		where = "the public cloud's Cosmos DB domains"
	case strings.EqualFold(auth.Cloud, PrivateCloud):
		where = "the domains of the KEDA operator's " + CosmosDBPrivateCloudEnv
	}
	if endpoint.Scheme != "https" || !isUnderCosmosDBDomain(host, cloud.domains) {
		return fmt.Errorf("%s: KEDA's workload identity is only sent over https to hosts under %s (%s)", param, where, strings.Join(cloud.domains, ", "))
	}
	return nil
}

// checkCosmosDBWorkloadAudience allows a workload identity token for the
// cloud's audiences or an account's own URL (scheme://host).
func checkCosmosDBWorkloadAudience(cloud cosmosDBCloud, resource string, accounts []*url.URL) error {
	resource = strings.TrimSuffix(strings.TrimSpace(resource), "/")
	if slices.ContainsFunc(cloud.audiences, func(a string) bool { return strings.EqualFold(a, resource) }) ||
		slices.ContainsFunc(accounts, func(u *url.URL) bool { return strings.EqualFold(strings.TrimSuffix(u.String(), "/"), resource) }) {
		return nil
	}
	return fmt.Errorf("cosmosDBResourceURL: KEDA's workload identity requests tokens only for %s or the account's own URL", strings.Join(cloud.audiences, ", "))
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

// tokenFromTriggerAuthentication: a client secret is where it was given.
// KEDA's workload identity is never a TriggerAuthentication's: it is the
// KEDA operator's (cosmosDBWorkloadCloud).
func (a CosmosDBAuth) tokenFromTriggerAuthentication() bool {
	return a.TriggerAuthentication["clientSecret"]
}

// checkCosmosDBEndpoint sends an account key, or a service principal's
// token, given apart from its endpoint over HTTPS to a known cloud's Cosmos
// DB host, loopback, or a private host its owner chose. Over plain HTTP
// only the Cosmos DB Emulator's published key goes, to any host.
func checkCosmosDBEndpoint(auth CosmosDBAuth, endpoint *url.URL, key, param string, ownedByTriggerAuthentication bool) error {
	host := cosmosDBHost(endpoint)
	switch {
	case strings.TrimSpace(key) == cosmosDBEmulatorKey:
		return nil
	case endpoint.Scheme != "https":
		return errCosmosDBPlainHTTP(param)
	case isCosmosDBLoopback(host) || isUnderCosmosDBDomain(host, cosmosDBKnownDomains()):
		return nil
	case !strings.EqualFold(auth.Cloud, PrivateCloud):
		return fmt.Errorf("%s: an account key or token is only sent to hosts under %s; use a connection string, which binds its own endpoint, or for a private cloud give cloud: Private and %s where the credential is given",
			param, strings.Join(cosmosDBKnownDomains(), ", "), param)
	}
	return auth.checkPrivateDestination(param, "account key or token", ownedByTriggerAuthentication)
}

func errCosmosDBPlainHTTP(param string) error {
	return fmt.Errorf("%s: an account key or token is only sent over https (plain http only with the Cosmos DB Emulator's published key)", param)
}

// checkCosmosDBConnectionString: a connection string binds its own
// endpoint, but its key goes over plain HTTP only if it is the emulator's.
func checkCosmosDBConnectionString(endpoint *url.URL, key, param string) error {
	if endpoint.Scheme != "https" && strings.TrimSpace(key) != cosmosDBEmulatorKey {
		return errCosmosDBPlainHTTP(param)
	}
	return nil
}

// checkCosmosDBTokenResource: with cloud: Private, a service principal's
// token is requested for a private resource its owner chose.
func checkCosmosDBTokenResource(auth CosmosDBAuth) error {
	if !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return nil
	}
	return auth.checkPrivateDestination("cosmosDBResourceURL", "token", auth.tokenFromTriggerAuthentication())
}

// checkCosmosDBAuthority sends a client secret to a known cloud's Entra ID
// authority, to loopback, or to one its owner chose.
func checkCosmosDBAuthority(auth CosmosDBAuth, authority string) error {
	authorityURL, err := url.Parse(strings.TrimSpace(authority))
	if err != nil {
		return fmt.Errorf("%s: not an absolute URL", DefaultActiveDirectoryEndpointKey)
	}
	authorityHost := cosmosDBHost(authorityURL)
	known := isCosmosDBLoopback(authorityHost) || slices.ContainsFunc([]AzEnvironment{PublicCloud, USGovernmentCloud, ChinaCloud, GermanCloud}, func(env AzEnvironment) bool {
		u, err := url.Parse(env.ActiveDirectoryEndpoint)
		return err == nil && cosmosDBHost(u) == authorityHost
	})
	if known || !strings.EqualFold(auth.Cloud, PrivateCloud) {
		return nil
	}
	return auth.checkPrivateDestination(DefaultActiveDirectoryEndpointKey, "client secret", auth.TriggerAuthentication["clientSecret"])
}
