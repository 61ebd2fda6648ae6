package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
	"github.com/kedacore/keda-cosmosdb-scaler/internal/redact"
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	pb "github.com/kedacore/keda/v2/pkg/scalers/externalscaler"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// KEDA hands an external scaler nothing but the trigger's metadata (no
// TriggerAuthentication, no resolved secrets of its own choosing), so the
// credentials of this server come from its own process environment. The
// secret trigger parameters are never accepted as metadata values:
//
//	<param>FromScalerEnv: NAME  reads the server's environment variable NAME
//	<param>FromEnv: NAME        the same, for callers that send the name as is
//
// KEDA rewrites every metadata key ending in "FromEnv" before calling an
// external scaler: it replaces the variable name with that variable's value
// from the scale target's containers, or drops the key when the scale
// target has no such variable (KEDA v2.21.0, pkg/scalers/external_scaler.go,
// parseExternalScalerMetadata). So behind KEDA only the FromScalerEnv form
// reaches this server as a name; a FromEnv key that carries something other
// than a variable name is a secret KEDA resolved, and it is refused.

// kedaExternalScalerKeys are the metadata keys KEDA's own external scaler
// client reads (KEDA v2.21.0, pkg/scalers/external_scaler.go,
// externalScalerMetadata): scalerAddress, enableTLS and unsafeSsl from the
// trigger metadata, caCert, tlsClientCert and tlsClientKey from the
// TriggerAuthentication (sent here only when a user also wrote them into
// the metadata). KEDA forwards the whole metadata, so these reach this
// server with every call; they configure KEDA's side of the connection and
// are not parameters of the scaler, so they are dropped before the in-tree
// scaler sees them (which would warn "Unmatched input property" for each).
var kedaExternalScalerKeys = []string{"scalerAddress", "enableTLS", "unsafeSsl", "caCert", "tlsClientCert", "tlsClientKey"}

// Pod identity: the server's own Azure workload identity, chosen per trigger.
const (
	paramPodIdentityProvider = "podIdentityProvider"
	paramPodIdentityID       = "podIdentityId"
	paramPodIdentityTenantID = "podIdentityTenantId"
)

// triggerConfig is a ScaledObjectRef turned into what the in-tree scaler's
// constructor takes, plus the secret values it carries (to scrub them from
// any message that might quote one).
type triggerConfig struct {
	scaler  *scalersconfig.ScalerConfig
	secrets []string
}

// buildTriggerConfig validates ref and maps its metadata onto a
// ScalerConfig: secrets read from the server's environment go into
// AuthParams (the first place the in-tree scaler looks), everything else
// stays trigger metadata. Errors are gRPC status errors that name the
// parameter and never quote a secret value.
func buildTriggerConfig(ref *pb.ScaledObjectRef, lookupEnv func(string) (string, bool), httpTimeout time.Duration) (*triggerConfig, error) {
	if err := checkScaledObjectRef(ref); err != nil {
		return nil, err
	}
	md := ref.ScalerMetadata
	triggerMetadata := make(map[string]string, len(md))
	for k, v := range md {
		triggerMetadata[k] = v
	}
	for _, k := range kedaExternalScalerKeys {
		delete(triggerMetadata, k)
	}
	authParams := map[string]string{}
	var secrets []string
	for _, param := range secretParams {
		delete(triggerMetadata, param)
		delete(triggerMetadata, param+"FromEnv")
		delete(triggerMetadata, param+"FromScalerEnv")
		value, ok, err := secretFromEnv(md, param, lookupEnv)
		if err != nil {
			return nil, err
		}
		if ok {
			authParams[param] = value
			secrets = append(secrets, value)
		}
	}

	podIdentity, err := podIdentityFrom(md)
	if err != nil {
		return nil, err
	}
	delete(triggerMetadata, paramPodIdentityProvider)
	delete(triggerMetadata, paramPodIdentityID)
	delete(triggerMetadata, paramPodIdentityTenantID)

	return &triggerConfig{
		scaler: &scalersconfig.ScalerConfig{
			ScalableObjectName:      ref.Name,
			ScalableObjectNamespace: ref.Namespace,
			TriggerType:             "azure-cosmosdb",
			TriggerMetadata:         triggerMetadata,
			AuthParams:              authParams,
			ResolvedEnv:             map[string]string{},
			PodIdentity:             podIdentity,
			// KEDA's HTTP client falls back to 300 ms when this is zero.
			GlobalHTTPTimeout: httpTimeout,
			// KEDA prefixes "s<index>-" itself on its side of the protocol.
			TriggerIndex: 0,
		},
		secrets: secrets,
	}, nil
}

// checkScaledObjectRef requires the ScaledObject's namespace and name,
// within Kubernetes' own limits: a namespace is a DNS label, a name a DNS
// subdomain.
func checkScaledObjectRef(ref *pb.ScaledObjectRef) error {
	if ref == nil {
		return status.Error(codes.InvalidArgument, "scaledObjectRef is required")
	}
	if ref.Namespace == "" || ref.Name == "" {
		return status.Error(codes.InvalidArgument, "scaledObjectRef.namespace and scaledObjectRef.name are required")
	}
	if n := utf8.RuneCountInString(ref.Namespace); n > 63 {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.namespace must be at most 63 characters long, got %d", n)
	}
	if n := utf8.RuneCountInString(ref.Name); n > 253 {
		return status.Errorf(codes.InvalidArgument, "scaledObjectRef.name must be at most 253 characters long, got %d", n)
	}
	return nil
}

// secretFromEnv is the secret parameter param, read from the external
// scaler's environment through the variable named by paramFromScalerEnv
// (or paramFromEnv, holding a name); ok is false when neither is set. A
// secret in the metadata itself is refused.
func secretFromEnv(md map[string]string, param string, lookupEnv func(string) (string, bool)) (value string, ok bool, err error) {
	fromEnv, fromScalerEnv := param+"FromEnv", param+"FromScalerEnv"
	if _, ok := md[param]; ok {
		return "", false, status.Errorf(codes.InvalidArgument,
			"%s: secrets are not accepted in scalerMetadata, which KEDA stores and sends in plain text; put the value in the external scaler's environment and set %s to the variable's name",
			param, fromScalerEnv)
	}
	key, name, isSet := "", "", false
	if v, ok := md[fromScalerEnv]; ok {
		key, name, isSet = fromScalerEnv, v, true
	}
	if v, ok := md[fromEnv]; ok {
		if isSet {
			return "", false, status.Errorf(codes.InvalidArgument, "%s and %s are both set: use %s", fromEnv, fromScalerEnv, fromScalerEnv)
		}
		if !redact.IsEnvVarName(v) {
			return "", false, status.Errorf(codes.InvalidArgument,
				"%s does not hold an environment variable name: KEDA replaced it with the value of that variable in the scale target's containers, and this scaler does not take secrets from metadata; use %s with the name of a variable in the external scaler's own environment (the value received is not shown)",
				fromEnv, fromScalerEnv)
		}
		key, name, isSet = fromEnv, v, true
	}
	if !isSet {
		return "", false, nil
	}
	if !redact.IsEnvVarName(name) {
		return "", false, status.Errorf(codes.InvalidArgument, "%s must be an environment variable name (letters, digits and '_', not starting with a digit)", key)
	}
	value, _ = lookupEnv(name)
	if value == "" {
		return "", false, status.Errorf(codes.FailedPrecondition, "%s: the variable it names is not set, or is empty, in the external scaler's environment", key)
	}
	return value, true, nil
}

func podIdentityFrom(md map[string]string) (kedav1alpha1.AuthPodIdentity, error) {
	var id kedav1alpha1.AuthPodIdentity
	switch p := md[paramPodIdentityProvider]; p {
	case "", string(kedav1alpha1.PodIdentityProviderNone):
		if md[paramPodIdentityID] != "" || md[paramPodIdentityTenantID] != "" {
			return id, status.Errorf(codes.InvalidArgument, "%s and %s need %s: azure-workload", paramPodIdentityID, paramPodIdentityTenantID, paramPodIdentityProvider)
		}
		return id, nil
	case string(kedav1alpha1.PodIdentityProviderAzureWorkload):
		id.Provider = kedav1alpha1.PodIdentityProviderAzureWorkload
	default:
		return id, status.Errorf(codes.InvalidArgument, "%s %q is not supported: use azure-workload (the external scaler's own workload identity) or none", paramPodIdentityProvider, excerpt.Of(p))
	}
	if v := md[paramPodIdentityID]; v != "" {
		id.IdentityID = &v
	}
	if v := md[paramPodIdentityTenantID]; v != "" {
		id.IdentityTenantID = &v
	}
	return id, nil
}

// metadataHash identifies a trigger configuration: SHA-256 over the sorted
// key/value pairs, each length-prefixed so no two maps collide by joining.
func metadataHash(md map[string]string) string {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%d:%s%d:%s", len(k), k, len(md[k]), md[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}
