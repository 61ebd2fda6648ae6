package account

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers/azure"
)

// CredentialOptions carries what token credentials need from the caller.
type CredentialOptions struct {
	// Transport sends token requests; KEDA's shared HTTP client in production.
	Transport policy.Transporter
}

// newTokenCredential builds the bearer-token credential shared by every
// account that has no key, and the token scope "<resource URL>/.default".
func newTokenCredential(s Settings, opts CredentialOptions) (azcore.TokenCredential, string, error) {
	resourceURL, authority, err := cloudEndpoints(s)
	if err != nil {
		return nil, "", err
	}
	scope := strings.TrimSuffix(resourceURL, "/") + "/.default"
	clientOptions := azcore.ClientOptions{Transport: opts.Transport}
	// A private cloud's authority is not known to the public cloud: MSAL's
	// instance discovery against login.microsoftonline.com would fail there.
	private := strings.EqualFold(s.Cloud, azure.PrivateCloud)

	if usesWorkloadIdentity(s) {
		// As KEDA's Azure helpers do: client and tenant from the pod identity
		// when given, else from the webhook-injected AZURE_* environment,
		// which also supplies the authority host.
		cred, err := azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{
			ClientOptions:            clientOptions,
			ClientID:                 s.PodIdentity.GetIdentityID(),
			TenantID:                 s.PodIdentity.GetIdentityTenantID(),
			DisableInstanceDiscovery: private,
		})
		if err != nil {
			return nil, "", fmt.Errorf("azure-workload identity: %w", err)
		}
		return cred, scope, nil
	}
	if s.PodIdentity.Provider != "" && s.PodIdentity.Provider != kedav1alpha1.PodIdentityProviderNone {
		return nil, "", fmt.Errorf("podIdentity provider %q is not supported; use azure-workload", Excerpt(string(s.PodIdentity.Provider)))
	}
	if s.TenantID == "" {
		return nil, "", errors.New("an account without a key needs bearer-token authentication: configure azure-workload identity or tenantId, clientId and clientSecret (or give cosmosDBKey/leaseCosmosDBKey or a connection string)")
	}
	clientOptions.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: authority}
	cred, err := azidentity.NewClientSecretCredential(s.TenantID, s.ClientID, string(s.ClientSecret), &azidentity.ClientSecretCredentialOptions{ClientOptions: clientOptions, DisableInstanceDiscovery: private})
	if err != nil {
		// azidentity validates the tenant id format; its message holds no secret.
		return nil, "", fmt.Errorf("tenantId/clientId: %w", err)
	}
	return cred, scope, nil
}

// cloudEndpoints resolves the Cosmos DB token resource and the Entra ID
// authority for the configured cloud from KEDA's Azure environments.
// Private clouds must name both themselves; for known clouds the
// cosmosDBResourceURL parameter does not override the environment.
func cloudEndpoints(s Settings) (resourceURL, authority string, err error) {
	name := s.Cloud
	if name == "" {
		name = "AzurePublicCloud"
	}
	if strings.EqualFold(name, azure.PrivateCloud) {
		if s.CosmosDBResourceURL == "" {
			return "", "", errors.New("cosmosDBResourceURL is required when cloud is Private")
		}
		if err := checkHTTPSURL(s.CosmosDBResourceURL); err != nil {
			return "", "", fmt.Errorf("cosmosDBResourceURL: %w", err)
		}
		if !usesWorkloadIdentity(s) {
			if s.ActiveDirectoryEndpoint == "" {
				return "", "", errors.New("activeDirectoryEndpoint is required for service-principal authentication when cloud is Private")
			}
			if err := checkHTTPSURL(s.ActiveDirectoryEndpoint); err != nil {
				return "", "", fmt.Errorf("activeDirectoryEndpoint: %w", err)
			}
		}
		return s.CosmosDBResourceURL, s.ActiveDirectoryEndpoint, nil
	}
	env, err := CloudEnvironment(name)
	if err != nil {
		return "", "", err
	}
	return env.ResourceIdentifiers.CosmosDB, env.ActiveDirectoryEndpoint, nil
}

// CloudEnvironment returns KEDA's environment for a known cloud name; the
// names accepted are the trigger's documented values, case-insensitively.
func CloudEnvironment(name string) (azure.AzEnvironment, error) {
	switch strings.ToUpper(name) {
	case "AZUREPUBLICCLOUD", "AZUREUSGOVERNMENTCLOUD", "AZURECHINACLOUD", "AZUREGERMANCLOUD":
		return azure.EnvironmentFromName(name)
	}
	return azure.AzEnvironment{}, fmt.Errorf("cloud %q is not one of AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud, AzureGermanCloud, Private", Excerpt(name))
}

// checkHTTPSURL accepts absolute https URLs (http only for loopback hosts,
// which is how tests reach a local token service).
func checkHTTPSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("not an absolute URL")
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !isLoopback(u.Hostname())) {
		return fmt.Errorf("scheme must be https, got %q", Excerpt(u.Scheme))
	}
	if n := len(u.Hostname()); n > maxHostLength {
		return fmt.Errorf("host name must be at most %d characters long (the DNS limit), got %d", maxHostLength, n)
	}
	return nil
}

func isIP(host string) bool { return net.ParseIP(host) != nil }
