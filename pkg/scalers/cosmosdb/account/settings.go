package account

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// Settings are the trigger's account and credential parameters. The scaler
// embeds them in its metadata, so KEDA's typed config fills them (each
// `keda:` tag names the parameter and where it is looked up) and every tool
// that lists the trigger's parameters reads these tags.
type Settings struct {
	Connection      Secret `keda:"name=connection,       order=authParams;resolvedEnv;triggerMetadata, optional"`
	LeaseConnection Secret `keda:"name=leaseConnection,  order=authParams;resolvedEnv;triggerMetadata, optional"`
	Endpoint        string `keda:"name=endpoint,         order=authParams;triggerMetadata, optional"`
	LeaseEndpoint   string `keda:"name=leaseEndpoint,    order=authParams;triggerMetadata, optional"`
	Key             Secret `keda:"name=cosmosDBKey,      order=authParams;resolvedEnv;triggerMetadata, optional"`
	LeaseKey        Secret `keda:"name=leaseCosmosDBKey, order=authParams;resolvedEnv;triggerMetadata, optional"`

	TenantID     string `keda:"name=tenantId,     order=authParams;triggerMetadata, optional"`
	ClientID     string `keda:"name=clientId,     order=authParams;triggerMetadata, optional"`
	ClientSecret Secret `keda:"name=clientSecret, order=authParams;triggerMetadata, optional"`

	Cloud                   string `keda:"name=cloud,                   order=triggerMetadata;authParams, optional"`
	CosmosDBResourceURL     string `keda:"name=cosmosDBResourceURL,     order=triggerMetadata;authParams, optional"`
	ActiveDirectoryEndpoint string `keda:"name=activeDirectoryEndpoint, order=triggerMetadata;authParams, optional"`

	// PodIdentity is not a trigger parameter: the scaler copies it from the
	// TriggerAuthentication KEDA resolved.
	PodIdentity kedav1alpha1.AuthPodIdentity
}

// Secret is a parameter value that is a credential (an account key, a
// connection string holding one, a client secret). The type marks the
// parameter as secret for whatever lists the trigger's parameters, and
// formats as "[redacted]" so that printing Settings never shows one.
type Secret string

// String hides the value; use string(s) for the value itself.
func (Secret) String() string { return "[redacted]" }

// GoString hides the value from %#v too.
func (Secret) GoString() string { return `account.Secret("[redacted]")` }
