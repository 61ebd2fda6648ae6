package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/internal/excerpt"
)

// defaultAllowedEndpoints are the known clouds' Cosmos DB domains (Cosmos DB
// in Microsoft Fabric included) and loopback.
const defaultAllowedEndpoints = "*.documents.azure.com,*.cosmos.fabric.microsoft.com,*.documents.azure.us,*.documents.azure.cn,*.documents.microsoftazure.de,localhost,127.0.0.1,::1"

// endpointAllowList limits the endpoints the external scaler signs for. Its
// credentials (environment, pod identity) serve every caller, and a caller
// chooses endpoint and leaseEndpoint: without a limit, any caller could have
// the production key sign a request for a host of its own.
type endpointAllowList struct {
	patterns []string // host names, or "*.suffix" for any name under suffix
	explicit bool     // set with --allowed-endpoints: cloud: Private is then allowed for these hosts
}

// parseEndpointAllowList reads --allowed-endpoints: comma-separated host
// names and "*.suffix" patterns.
func parseEndpointAllowList(list string, explicit bool) (endpointAllowList, error) {
	a := endpointAllowList{explicit: explicit}
	for p := range strings.SplitSeq(list, ",") {
		p = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(p)), ".")
		if bare := strings.TrimPrefix(p, "*."); bare == "" || strings.ContainsAny(bare, "*/@ ") {
			return endpointAllowList{}, fmt.Errorf("--allowed-endpoints: %q is not a host name or a *.suffix pattern", excerpt.Of(p))
		}
		a.patterns = append(a.patterns, p)
	}
	if len(a.patterns) == 0 {
		return endpointAllowList{}, errors.New("--allowed-endpoints: no host given")
	}
	return a, nil
}

// allows reports whether host, lower-cased without a trailing dot, matches.
func (a endpointAllowList) allows(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, p := range a.patterns {
		if suffix, wild := strings.CutPrefix(p, "*."); wild && strings.HasSuffix(host, "."+suffix) || host == p {
			return true
		}
	}
	return false
}

// destinationParams decide where the scaler's credentials go.
var destinationParams = []string{"endpoint", "leaseEndpoint", "cloud", "cosmosDBResourceURL", "activeDirectoryEndpoint"}

// check refuses a trigger whose endpoint or leaseEndpoint is not allowed,
// and cloud: Private unless --allowed-endpoints names its hosts; with cloud:
// Private, the hosts of cosmosDBResourceURL (the token's audience) and
// activeDirectoryEndpoint (where a client secret goes) must be listed too.
// Endpoints inside connection strings come from the scaler's own
// environment, which its operator chose, and are not checked.
func (a endpointAllowList) check(metadata map[string]string) error {
	private := strings.EqualFold(strings.TrimSpace(metadata["cloud"]), "Private")
	if private && !a.explicit {
		return errors.New("cloud: Private is refused by this external scaler unless --allowed-endpoints lists the private cloud's hosts")
	}
	params := []string{"endpoint", "leaseEndpoint"}
	if private {
		params = append(params, "cosmosDBResourceURL", "activeDirectoryEndpoint")
	}
	for _, param := range params {
		raw := strings.TrimSpace(metadata[param])
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			continue // the scaler reports the malformed URL itself
		}
		if !a.allows(u.Hostname()) {
			return fmt.Errorf("%s: host %q is not in this external scaler's --allowed-endpoints (%s)", param, excerpt.Of(u.Hostname()), strings.Join(a.patterns, ","))
		}
	}
	return nil
}

// adopt checks the trigger's destinations and moves them from the caller's
// metadata into AuthParams. The scaler's keys and client secrets (its
// environment) are its operator's, and --allowed-endpoints is the
// operator's word on where they may go: it takes the place the
// TriggerAuthentication has in KEDA, whose destinations alone the in-tree
// scaler lets take a key or client secret outside the Cosmos DB DNS
// suffixes of KEDA's Azure environments. The scaler's workload identity is
// not widened by it: the in-tree scaler keeps that to the trigger's cloud's
// Cosmos DB hosts (cloud: AzureStackCloud: this process's environment file,
// AZURE_ENVIRONMENT_FILEPATH) and never uses it with cloud: Private
// (TestCallerCannotSendTheScalersWorkloadIdentity).
func (a endpointAllowList) adopt(metadata, authParams map[string]string) error {
	if err := a.check(metadata); err != nil {
		return err
	}
	for _, param := range destinationParams {
		if value, ok := metadata[param]; ok {
			authParams[param] = value
			delete(metadata, param)
		}
	}
	return nil
}
