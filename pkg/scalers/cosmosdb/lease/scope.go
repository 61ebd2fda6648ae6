package lease

import (
	"strings"

	"github.com/kedacore/keda-cosmosdb-scaler/pkg/scalers/cosmosdb/account"
)

// Scope identifies the leases of one processor on one monitored container.
//
// Real processors name their leases
//
//	{processor}{accountHost}_{databaseRid}_{containerRid}..{leaseToken}
//
// (Java v4 PK-range leases use the database and container names instead of
// RIDs), next to "{prefix}.info" and "{prefix}.lock" bookkeeping documents.
// Two deployments may share a lease container with the same processor name on
// different monitored containers, and one processor name may be a prefix of
// another, so a lease is ours only when every part matches.
type Scope struct {
	Processor string
	// Account is the monitored account's name (see account.NameFromHost); a
	// lease written through a private-link or regional host name still matches.
	Account                   string
	DatabaseRID, ContainerRID string
	DatabaseID, ContainerID   string
}

// Owns reports whether the document id names a lease of this scope.
func (s Scope) Owns(id string) bool {
	rest, ok := strings.CutPrefix(id, s.Processor)
	if !ok {
		return false
	}
	// Host names and RIDs hold no '_', so the host ends at the first one.
	host, container, ok := strings.Cut(rest, "_")
	if !ok || !s.accountMatches(account.NameFromHost(host)) {
		return false
	}
	return hasLeaseSuffix(container, s.DatabaseRID, s.ContainerRID) || hasLeaseSuffix(container, s.DatabaseID, s.ContainerID)
}

// hasLeaseSuffix reports whether rest is "{database}_{container}..{token}".
func hasLeaseSuffix(rest, database, container string) bool {
	if database == "" || container == "" {
		return false
	}
	token, ok := strings.CutPrefix(rest, database+"_"+container+"..")
	return ok && token != ""
}

// OwnsProcessorAndAccount reports whether the id is this processor's on this
// account, whatever container it names: used to notice that cached RIDs may
// be stale (the monitored container was recreated).
func (s Scope) OwnsProcessorAndAccount(id string) bool {
	rest, ok := strings.CutPrefix(id, s.Processor)
	if !ok {
		return false
	}
	host, container, ok := strings.Cut(rest, "_")
	return ok && strings.Contains(container, "..") && s.accountMatches(account.NameFromHost(host))
}

// accountMatches accepts the account's own name and its regional host label
// "<account>-<region>" (regions are lowercase letters and digits).
func (s Scope) accountMatches(name string) bool {
	if name == s.Account {
		return true
	}
	region, ok := strings.CutPrefix(name, s.Account+"-")
	if !ok || region == "" {
		return false
	}
	for _, r := range region {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
