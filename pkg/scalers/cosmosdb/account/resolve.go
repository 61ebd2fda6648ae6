package account

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Account is one Cosmos DB account endpoint with the credential the scaler
// uses for it: an account key or a bearer token.
type Account struct {
	Endpoint *url.URL
	key      []byte
	token    azcore.TokenCredential
	scope    string
}

// Name is the account name as it appears in lease ids: the first DNS label of
// the endpoint host ("myaccount" for myaccount.documents.azure.com), or the
// whole host for IP addresses and single-label hosts.
func (a *Account) Name() string { return NameFromHost(a.Endpoint.Hostname()) }

// UsesKey reports whether requests are signed with the account key.
func (a *Account) UsesKey() bool { return a.key != nil }

// Key is the decoded account key; nil when requests carry a bearer token.
func (a *Account) Key() []byte { return a.key }

// Token is the bearer-token credential and its scope ("<resource>/.default")
// of an account without a key.
func (a *Account) Token() (azcore.TokenCredential, string) { return a.token, a.scope }

// Local reports whether the endpoint names this machine: bearer tokens are
// only sent over plain HTTP to such hosts (the embedded test server, an emulator).
func (a *Account) Local() bool { return isLoopback(a.Endpoint.Hostname()) }

// NameFromHost returns the account part of a host name; see Account.Name.
func NameFromHost(host string) string {
	host = strings.ToLower(host)
	if isLoopback(host) || !strings.Contains(host, ".") || isIP(host) {
		return host
	}
	label, _, _ := strings.Cut(host, ".")
	return label
}

// Resolve applies the trigger's credential rules to pick the data and the
// lease account, independently:
//  1. a connection string wins over endpoint + key;
//  2. otherwise an account key supplied for that endpoint is used;
//  3. otherwise a bearer token: workload identity when configured, else a
//     service principal (tenantId, clientId and clientSecret, all three).
//
// When neither leaseConnection nor leaseEndpoint is set, the lease account is
// the data account with its credential. Every invalid combination is an error
// naming the parameter; no secret value is ever quoted.
func Resolve(s Settings, opts CredentialOptions) (data, lease *Account, err error) {
	data, err = resolveOne(string(s.Connection), s.Endpoint, string(s.Key), "connection", "endpoint", "cosmosDBKey")
	if err != nil {
		return nil, nil, err
	}
	switch {
	case s.LeaseConnection != "" || s.LeaseEndpoint != "":
		lease, err = resolveOne(string(s.LeaseConnection), s.LeaseEndpoint, string(s.LeaseKey), "leaseConnection", "leaseEndpoint", "leaseCosmosDBKey")
		if err != nil {
			return nil, nil, err
		}
	case s.LeaseKey != "":
		return nil, nil, errors.New("leaseCosmosDBKey is set but neither leaseEndpoint nor leaseConnection is: the lease key is only used with an explicit lease account")
	default:
		copied := *data
		lease = &copied
	}

	if err := validateServicePrincipal(s); err != nil {
		return nil, nil, err
	}
	if data.UsesKey() && lease.UsesKey() {
		return data, lease, nil
	}

	cred, scope, err := newTokenCredential(s, opts)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range []*Account{data, lease} {
		if !a.UsesKey() {
			a.token, a.scope = cred, scope
		}
	}
	return data, lease, nil
}

func resolveOne(connection, endpoint, key, connectionParam, endpointParam, keyParam string) (*Account, error) {
	if connection != "" {
		u, k, err := ParseConnectionString(connection)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", connectionParam, err)
		}
		return &Account{Endpoint: u, key: k}, nil
	}
	if endpoint == "" {
		if key != "" {
			return nil, fmt.Errorf("%s is set but %s is not: an account key needs the endpoint it belongs to", keyParam, endpointParam)
		}
		return nil, fmt.Errorf("no %s: set %s, or %s with an account key or bearer-token authentication", endpointParam, connectionParam, endpointParam)
	}
	u, err := ParseEndpoint(endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", endpointParam, err)
	}
	if key == "" {
		return &Account{Endpoint: u}, nil
	}
	k, err := DecodeKey(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyParam, err)
	}
	return &Account{Endpoint: u, key: k}, nil
}

// validateServicePrincipal enforces "all three or none" unless workload
// identity is configured, in which case the service principal is ignored.
func validateServicePrincipal(s Settings) error {
	if usesWorkloadIdentity(s) {
		return nil
	}
	set := map[string]bool{"tenantId": s.TenantID != "", "clientId": s.ClientID != "", "clientSecret": s.ClientSecret != ""}
	var missing []string
	for _, name := range []string{"tenantId", "clientId", "clientSecret"} {
		if !set[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 || len(missing) == 3 {
		return nil
	}
	return fmt.Errorf("service-principal authentication needs tenantId, clientId and clientSecret together; missing %s", strings.Join(missing, ", "))
}

func usesWorkloadIdentity(s Settings) bool {
	return s.PodIdentity.Provider == kedav1alpha1.PodIdentityProviderAzureWorkload
}
