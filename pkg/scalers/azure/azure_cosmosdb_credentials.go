package azure

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/go-logr/logr"

	"github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// CosmosDBAuth holds the azure-cosmosdb trigger's account and credential
// parameters, filled by KEDA's typed config in the scaler's metadata.
type CosmosDBAuth struct {
	Connection              CosmosDBSecret `keda:"name=connection,       order=authParams;resolvedEnv;triggerMetadata, optional"`
	LeaseConnection         CosmosDBSecret `keda:"name=leaseConnection,  order=authParams;resolvedEnv;triggerMetadata, optional"`
	Endpoint                string         `keda:"name=endpoint,         order=authParams;triggerMetadata, optional"`
	LeaseEndpoint           string         `keda:"name=leaseEndpoint,    order=authParams;triggerMetadata, optional"`
	Key                     CosmosDBSecret `keda:"name=cosmosDBKey,      order=authParams;resolvedEnv;triggerMetadata, optional"`
	LeaseKey                CosmosDBSecret `keda:"name=leaseCosmosDBKey, order=authParams;resolvedEnv;triggerMetadata, optional"`
	TenantID                string         `keda:"name=tenantId,     order=authParams;triggerMetadata, optional"`
	ClientID                string         `keda:"name=clientId,     order=authParams;triggerMetadata, optional"`
	ClientSecret            CosmosDBSecret `keda:"name=clientSecret, order=authParams;triggerMetadata, optional"`
	Cloud                   string         `keda:"name=cloud,                   order=authParams;triggerMetadata, optional"`
	CosmosDBResourceURL     string         `keda:"name=cosmosDBResourceURL,     order=authParams;triggerMetadata, optional"`
	ActiveDirectoryEndpoint string         `keda:"name=activeDirectoryEndpoint, order=authParams;triggerMetadata, optional"`

	// PodIdentity is the TriggerAuthentication's pod identity, not a parameter.
	PodIdentity v1alpha1.AuthPodIdentity
	// AuthParams are KEDA's config.AuthParams as it hands them over (not a
	// parameter): what the TriggerAuthentication gives, whose credentials
	// go only where it says (azure_cosmosdb_endpoint.go).
	AuthParams map[string]string
}

// CosmosDBSecret is a credential parameter; it never prints its value.
type CosmosDBSecret string

func (CosmosDBSecret) String() string { return "[redacted]" }

// CosmosDBConnection is one account's endpoint and its key or token.
type CosmosDBConnection struct {
	Endpoint     *url.URL
	key          []byte
	token        azcore.TokenCredential // shared by the process's connections of one identity
	scope        string
	releaseToken func() // releases token; its client's Close calls it
}

// UsesKey reports whether requests to the account are signed with its key.
func (a *CosmosDBConnection) UsesKey() bool { return a.key != nil }

// ResolveCosmosDBConnections picks for each account a connection string, else
// a key, else a token (workload identity, else a service principal). Without
// a lease account, lease is data.
func ResolveCosmosDBConnections(auth CosmosDBAuth, transport policy.Transporter, logger logr.Logger) (data, lease *CosmosDBConnection, err error) {
	data, err = resolveCosmosDBConnection(auth, auth.Connection, auth.Endpoint, auth.Key, "")
	if err != nil {
		return nil, nil, err
	}
	tokenParams := map[*CosmosDBConnection]string{}
	if !data.UsesKey() {
		tokenParams[data] = "endpoint"
	}
	switch {
	case auth.LeaseConnection != "" || auth.LeaseEndpoint != "":
		if lease, err = resolveCosmosDBConnection(auth, auth.LeaseConnection, auth.LeaseEndpoint, auth.LeaseKey, "lease"); err != nil {
			return nil, nil, err
		}
		if !lease.UsesKey() {
			tokenParams[lease] = "leaseEndpoint"
		}
	case auth.LeaseKey != "":
		return nil, nil, errors.New("leaseCosmosDBKey is set but neither leaseEndpoint nor leaseConnection is: the lease key is only used with an explicit lease account")
	default: // the leases are in the data account: one connection serves both
		lease = data
	}
	if data.UsesKey() && lease.UsesKey() {
		return data, lease, nil
	}
	keyless := "the lease account (leaseEndpoint)"
	if !data.UsesKey() {
		keyless = "the data account (endpoint)"
	}
	source, err := newCosmosDBTokenCredential(auth, tokenParams, transport, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("%s has no account key: %w", keyless, err)
	}
	// Each keyless connection holds the identity's shared credential.
	for _, a := range []*CosmosDBConnection{data, lease} {
		if a.UsesKey() || a.token != nil { // lease is data
			continue
		}
		if a.token, a.releaseToken, err = cosmosDBCredentials.acquire(source.key, source.build); err != nil {
			if data.releaseToken != nil {
				data.releaseToken()
			}
			return nil, nil, fmt.Errorf("%s has no account key: %w", keyless, err)
		}
		a.scope = source.key.scope
	}
	return data, lease, nil
}

func resolveCosmosDBConnection(auth CosmosDBAuth, connection CosmosDBSecret, endpoint string, key CosmosDBSecret, prefix string) (*CosmosDBConnection, error) {
	connectionParam, endpointParam, keyParam := "connection", "endpoint", "cosmosDBKey"
	if prefix != "" {
		connectionParam, endpointParam, keyParam = "leaseConnection", "leaseEndpoint", "leaseCosmosDBKey"
	}
	if connection != "" {
		endpoint, key := splitCosmosDBConnectionString(string(connection))
		if endpoint == "" || key == "" {
			return nil, fmt.Errorf("%s: a connection string needs both AccountEndpoint and AccountKey", connectionParam)
		}
		a, err := newCosmosDBConnection(endpoint, key, connectionParam+" AccountEndpoint", connectionParam+" AccountKey")
		if err != nil {
			return nil, err
		}
		if err := checkCosmosDBDestination(auth, cosmosDBDestination{endpoint: a.Endpoint, endpointParam: connectionParam, key: key, connection: true}); err != nil {
			return nil, err
		}
		return a, nil
	}
	if endpoint == "" {
		if key != "" {
			return nil, fmt.Errorf("%s is set but %s is not: an account key needs the endpoint it belongs to", keyParam, endpointParam)
		}
		return nil, fmt.Errorf("no %s: set %s, or %s with an account key or bearer-token authentication", endpointParam, connectionParam, endpointParam)
	}
	a, err := newCosmosDBConnection(endpoint, string(key), endpointParam, keyParam)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return a, nil // a token's destination is checked with its credential
	}
	if err := checkCosmosDBDestination(auth, cosmosDBDestination{endpoint: a.Endpoint, endpointParam: endpointParam, keyParam: keyParam, key: string(key)}); err != nil {
		return nil, err
	}
	return a, nil
}

func newCosmosDBConnection(endpoint, key, endpointParam, keyParam string) (*CosmosDBConnection, error) {
	u, err := parseCosmosDBEndpoint(endpoint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", endpointParam, err)
	}
	if key == "" {
		return &CosmosDBConnection{Endpoint: u}, nil
	}
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(key))
	if err != nil || len(k) == 0 {
		return nil, fmt.Errorf("%s: account key is not valid non-empty base64", keyParam)
	}
	return &CosmosDBConnection{Endpoint: u, key: k}, nil
}

// splitCosmosDBConnectionString: names match case-insensitively, as in the SDKs.
func splitCosmosDBConnectionString(connection string) (endpoint, key string) {
	for part := range strings.SplitSeq(connection, ";") {
		name, value, _ := strings.Cut(part, "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "accountendpoint":
			endpoint = strings.TrimSpace(value)
		case "accountkey":
			key = strings.TrimSpace(value)
		}
	}
	return endpoint, key
}

// parseCosmosDBEndpoint checks an endpoint and normalises it to scheme://host[:port]/.
func parseCosmosDBEndpoint(endpoint string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	switch {
	case err != nil:
		return nil, errors.New("not a valid URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("scheme must be https, got %q", cosmosDBExcerpt(u.Scheme))
	case u.Hostname() == "":
		return nil, errors.New("URL has no host")
	case len(u.Hostname()) > 253:
		return nil, fmt.Errorf("host name must be at most 253 characters long (the DNS limit), got %d", len(u.Hostname()))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("URL must not carry user info, query or fragment")
	case strings.Trim(u.Path, "/") != "":
		return nil, fmt.Errorf("URL must not have a path, got %q", cosmosDBExcerpt(u.Path))
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}, nil
}

// newCosmosDBTokenCredential returns the token credential (to build) and
// scope of the keyless accounts (their endpoint parameters by connection),
// after checking where the token may go.
func newCosmosDBTokenCredential(auth CosmosDBAuth, accounts map[*CosmosDBConnection]string, transport policy.Transporter, logger logr.Logger) (cosmosDBTokenSource, error) {
	switch auth.PodIdentity.Provider {
	case v1alpha1.PodIdentityProviderAzureWorkload:
	case "", v1alpha1.PodIdentityProviderNone:
		if err := checkCosmosDBServicePrincipal(auth); err != nil {
			return cosmosDBTokenSource{}, err
		}
	default:
		return cosmosDBTokenSource{}, fmt.Errorf("podIdentity provider %q is not supported; use azure-workload", cosmosDBExcerpt(string(auth.PodIdentity.Provider)))
	}
	for _, param := range []string{"endpoint", "leaseEndpoint"} {
		for a, p := range accounts {
			if p != param {
				continue
			}
			if err := checkCosmosDBDestination(auth, cosmosDBDestination{endpoint: a.Endpoint, endpointParam: param}); err != nil {
				return cosmosDBTokenSource{}, err
			}
		}
	}
	if auth.PodIdentity.Provider == v1alpha1.PodIdentityProviderAzureWorkload {
		return newCosmosDBWorkloadCredential(auth, transport, logger)
	}
	settings := map[string]string{"cloud": auth.Cloud, "cosmosDBResourceURL": auth.CosmosDBResourceURL, DefaultActiveDirectoryEndpointKey: auth.ActiveDirectoryEndpoint}
	resource, err := ParseEnvironmentProperty(settings, "cosmosDBResourceURL", func(env AzEnvironment) (string, error) {
		return env.ResourceIdentifiers.CosmosDB, nil
	})
	if err != nil {
		return cosmosDBTokenSource{}, err
	}
	if err := checkCosmosDBURL("cosmosDBResourceURL", resource); err != nil {
		return cosmosDBTokenSource{}, err
	}
	scope := strings.TrimSuffix(resource, "/") + "/.default"
	authority, err := ParseActiveDirectoryEndpoint(settings)
	if err != nil {
		return cosmosDBTokenSource{}, fmt.Errorf("%w for service-principal authentication", err)
	}
	if err := checkCosmosDBURL("activeDirectoryEndpoint", authority); err != nil {
		return cosmosDBTokenSource{}, err
	}
	// A private authority is unknown to the public instance discovery.
	private := strings.EqualFold(auth.Cloud, PrivateCloud)
	key := cosmosDBTokenKey{kind: "service principal", tenant: auth.TenantID, clientID: auth.ClientID,
		secretHash: sha256.Sum256([]byte(auth.ClientSecret)), authority: authority, private: private, scope: scope, transport: cosmosDBTransportKey(transport)}
	return cosmosDBTokenSource{key: key, build: func() (azcore.TokenCredential, error) {
		options := &azidentity.ClientSecretCredentialOptions{
			ClientOptions:            azcore.ClientOptions{Transport: transport, Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: authority}},
			DisableInstanceDiscovery: private,
		}
		cred, err := azidentity.NewClientSecretCredential(auth.TenantID, auth.ClientID, string(auth.ClientSecret), options)
		if err != nil {
			return nil, fmt.Errorf("tenantId/clientId/activeDirectoryEndpoint: %s", cosmosDBExcerpt(err.Error())) // holds no secret
		}
		return cred, nil
	}}, nil
}

// newCosmosDBWorkloadCredential returns KEDA's workload identity with a
// scope of the cloud's Cosmos DB audience from KEDA's Azure environments
// (checkCosmosDBDestination has held its accounts to that cloud's hosts).
// Whoever wrote the trigger or its TriggerAuthentication, the identity is
// the KEDA operator's, or one federated with KEDA's service account that the
// TriggerAuthentication names with identityId.
func newCosmosDBWorkloadCredential(auth CosmosDBAuth, transport policy.Transporter, logger logr.Logger) (cosmosDBTokenSource, error) {
	env, err := cosmosDBWorkloadEnvironment(auth.Cloud)
	if err != nil {
		return cosmosDBTokenSource{}, err
	}
	resource := env.ResourceIdentifiers.CosmosDB
	if err := checkCosmosDBURL("cloud: the environment's resourceIdentifiers.cosmosDB", resource); err != nil {
		return cosmosDBTokenSource{}, err
	}
	key := cosmosDBTokenKey{kind: "workload identity", tenant: auth.PodIdentity.GetIdentityTenantID(), clientID: auth.PodIdentity.GetIdentityID(),
		scope: strings.TrimSuffix(resource, "/") + "/.default", transport: cosmosDBTransportKey(transport)}
	return cosmosDBTokenSource{key: key, build: func() (azcore.TokenCredential, error) {
		cred, err := NewChainedCredential(logger, auth.PodIdentity)
		if err != nil {
			return nil, fmt.Errorf("azure-workload identity: %w", err)
		}
		return cred, nil
	}}, nil
}

func checkCosmosDBServicePrincipal(auth CosmosDBAuth) error {
	var missing []string
	for _, p := range []struct{ name, value string }{{"tenantId", auth.TenantID}, {"clientId", auth.ClientID}, {"clientSecret", string(auth.ClientSecret)}} {
		if p.value == "" {
			missing = append(missing, p.name)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 3:
		return errors.New("an account without a key needs bearer-token authentication: configure azure-workload identity or tenantId, clientId and clientSecret (or give cosmosDBKey/leaseCosmosDBKey or a connection string)")
	}
	return fmt.Errorf("service-principal authentication needs tenantId, clientId and clientSecret together; missing %s", strings.Join(missing, ", "))
}

// checkCosmosDBURL checks that a URL parameter is absolute, with a host
// name within the DNS limit.
func checkCosmosDBURL(param, raw string) error {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("%s: not an absolute URL", param)
	}
	if len(strings.TrimSuffix(u.Hostname(), ".")) > 253 {
		return fmt.Errorf("%s: host name must be at most 253 characters long (the DNS limit), got %d", param, len(u.Hostname()))
	}
	return nil
}

// cosmosDBAccountName is the first DNS label of a host, or an IP as it is.
func cosmosDBAccountName(host string) string {
	host = strings.ToLower(host)
	if net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return host
	}
	label, _, _ := strings.Cut(host, ".")
	return label
}

// cosmosDBExcerpt echoes a user-supplied value (never a secret) in an
// error: whole up to Cosmos DB's id limit, else its first 32 characters.
func cosmosDBExcerpt(value string) string {
	if len(value) <= 255 || utf8.RuneCountInString(value) <= 255 {
		return value
	}
	return fmt.Sprintf("%s… (%d bytes)", string([]rune(value[:128])[:32]), len(value))
}
