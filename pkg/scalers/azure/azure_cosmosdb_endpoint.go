package azure

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Where a trigger's credentials may go. The trigger metadata is written by
// whoever writes the ScaledObject; a key or service principal of a
// TriggerAuthentication or ClusterTriggerAuthentication (KEDA's AuthParams),
// and KEDA's own workload identity, need not be theirs. Before any
// credential is created:
//   - no key or token goes over plain HTTP, except the Cosmos DB Emulator's
//     published key;
//   - workload identity is used only with a cloud of KEDA's Azure
//     environments (AzureStackCloud: the KEDA operator's environment file),
//     and its token goes only to hosts under that cloud's CosmosDBDNSSuffix;
//   - a TriggerAuthentication's account key or service principal token goes
//     to a host outside the Cosmos DB DNS suffixes of KEDA's Azure
//     environments only when the TriggerAuthentication gives that endpoint;
//   - a TriggerAuthentication's service principal is used with cloud: Private
//     only when the TriggerAuthentication gives cloud, cosmosDBResourceURL
//     and activeDirectoryEndpoint.
//
// A connection string binds its own endpoint, and a key or client secret
// from the trigger metadata or the scaled workload's environment belongs to
// the ScaledObject's author: those are only held to HTTPS.

// cosmosDBDestination is one account as its credential reaches it.
type cosmosDBDestination struct {
	endpoint      *url.URL
	endpointParam string // endpoint or leaseEndpoint (connection or leaseConnection for a connection string)
	keyParam      string // cosmosDBKey or leaseCosmosDBKey
	key           string // "" when the account gets a token
	connection    bool   // the endpoint and key came together in a connection string
}

// givenByTriggerAuthentication reports whether KEDA handed the parameter
// over in AuthParams, which hold what the TriggerAuthentication gives.
func (a CosmosDBAuth) givenByTriggerAuthentication(name string) bool {
	return strings.TrimSpace(a.AuthParams[name]) != ""
}

// checkCosmosDBDestination applies the rule above to one account.
func checkCosmosDBDestination(auth CosmosDBAuth, d cosmosDBDestination) error {
	if d.endpoint.Scheme != "https" && strings.TrimSpace(d.key) != cosmosDBEmulatorKey {
		return fmt.Errorf("%s: an account key or token is only sent over https (plain http only with the Cosmos DB Emulator's published key)", d.endpointParam)
	}
	keyOfAuth := d.key != "" && auth.givenByTriggerAuthentication(d.keyParam)
	if d.connection || d.key != "" && !keyOfAuth {
		return nil
	}
	host := cosmosDBHost(d.endpoint)
	private := strings.EqualFold(auth.Cloud, PrivateCloud)
	switch {
	case d.key == "" && auth.PodIdentity.Provider == v1alpha1.PodIdentityProviderAzureWorkload:
		env, err := cosmosDBWorkloadEnvironment(auth.Cloud)
		if err != nil {
			return err
		}
		if !isUnderCosmosDBDNSSuffix(host, []string{env.CosmosDBDNSSuffix}) {
			return fmt.Errorf("%s: workload identity tokens are only sent to hosts under %s, the Cosmos DB DNS suffix of the trigger's cloud", d.endpointParam, env.CosmosDBDNSSuffix)
		}
	case d.key == "" && auth.givenByTriggerAuthentication("clientSecret") && private &&
		(!auth.givenByTriggerAuthentication("cloud") || !auth.givenByTriggerAuthentication("cosmosDBResourceURL") || !auth.givenByTriggerAuthentication(DefaultActiveDirectoryEndpointKey)):
		return fmt.Errorf("cloud: Private with the TriggerAuthentication's service principal needs cloud, cosmosDBResourceURL and activeDirectoryEndpoint in that TriggerAuthentication")
	case (keyOfAuth || d.key == "" && auth.givenByTriggerAuthentication("clientSecret")) && !auth.givenByTriggerAuthentication(d.endpointParam):
		if suffixes := cosmosDBKnownDNSSuffixes(auth.Cloud); !isUnderCosmosDBDNSSuffix(host, suffixes) {
			return fmt.Errorf("%s: given in trigger metadata, it may not receive the TriggerAuthentication's credentials outside the Cosmos DB DNS suffixes of KEDA's Azure environments (%s); give %s in the TriggerAuthentication",
				d.endpointParam, strings.Join(suffixes, ", "), d.endpointParam)
		}
	}
	return nil
}

// cosmosDBWorkloadEnvironment is the trigger's cloud for KEDA's workload
// identity: one of KEDA's Azure environments (the public cloud when cloud is
// empty; AzureStackCloud reads the KEDA operator's environment file), never
// cloud: Private, whose audience and authority a trigger would choose.
func cosmosDBWorkloadEnvironment(cloud string) (AzEnvironment, error) {
	if strings.EqualFold(cloud, PrivateCloud) {
		return AzEnvironment{}, fmt.Errorf("cloud: Private is not used with podIdentity azure-workload, whose identity is the KEDA operator's; for a private cloud use cloud: AzureStackCloud with the KEDA operator's environment file (%s)", EnvironmentFilepathName)
	}
	return cosmosDBEnvironment(cloud)
}

// cosmosDBEnvironment is the environment KEDA's tables give the cloud
// parameter (the public cloud when it is empty), with a Cosmos DB DNS suffix.
func cosmosDBEnvironment(cloud string) (AzEnvironment, error) {
	if cloud == "" {
		return PublicCloud, nil
	}
	env, err := EnvironmentFromName(cloud)
	switch {
	case err != nil:
		return AzEnvironment{}, fmt.Errorf("cloud: %q is not a cloud of KEDA's Azure environments, or its environment file (%s) cannot be read", cosmosDBExcerpt(cloud), EnvironmentFilepathName)
	case env.CosmosDBDNSSuffix == "" || env.CosmosDBDNSSuffix == NotAvailable:
		return AzEnvironment{}, fmt.Errorf("cloud: %s gives no cosmosDBDNSSuffix", cosmosDBExcerpt(cloud))
	}
	return env, nil
}

// cosmosDBKnownDNSSuffixes are the Cosmos DB DNS suffixes of KEDA's Azure
// environments, with the trigger's cloud's (an AzureStackCloud file's).
func cosmosDBKnownDNSSuffixes(cloud string) []string {
	var suffixes []string
	for _, env := range []AzEnvironment{PublicCloud, USGovernmentCloud, ChinaCloud, GermanCloud} {
		suffixes = append(suffixes, env.CosmosDBDNSSuffix)
	}
	if env, err := cosmosDBEnvironment(cloud); err == nil && !slices.Contains(suffixes, env.CosmosDBDNSSuffix) {
		suffixes = append(suffixes, env.CosmosDBDNSSuffix)
	}
	return suffixes
}

// cosmosDBHost is a URL's host as compared: lower case, without port or
// trailing dot.
func cosmosDBHost(u *url.URL) string {
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}

func isUnderCosmosDBDNSSuffix(host string, suffixes []string) bool {
	return slices.ContainsFunc(suffixes, func(suffix string) bool {
		suffix = strings.ToLower(suffix)
		return host == suffix || strings.HasSuffix(host, "."+suffix)
	})
}
