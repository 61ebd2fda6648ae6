package main

import (
	"encoding/base64"
	"net"
	"strings"
	"testing"
)

const errorsScaledObjectYAML = `apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: order-projector, namespace: shop}
spec:
  scaleTargetRef: {name: order-projector}
  triggers:
    - type: azure-cosmosdb
      metadata:
        databaseId: shop
        containerId: orders
        leaseDatabaseId: shop
        leaseContainerId: leases
        processorName: order-projector
%METADATA%      authenticationRef: {name: cosmos-auth}
---
apiVersion: keda.sh/v1alpha1
kind: TriggerAuthentication
metadata: {name: cosmos-auth, namespace: shop}
spec:
  secretTargetRef:
%PARAMS%---
apiVersion: v1
kind: Secret
metadata: {name: cosmos-secrets, namespace: shop}
stringData:
  connectionString: "%CONNECTION%"
  key: "%KEY%"
`

func errorsManifest(metadata, params, connection, key string) string {
	return strings.NewReplacer("%METADATA%", metadata, "%PARAMS%", params, "%CONNECTION%", connection, "%KEY%", key).Replace(errorsScaledObjectYAML)
}

// An account nobody answers for: check names the host, the operation, and
// how many tries were made within what time, never the key.
func TestCheckUnreachableAccountNamesHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := ln.Addr().String()
	ln.Close() // nothing listens there now: every try is refused
	key := base64.StdEncoding.EncodeToString([]byte("an account key nobody checks"))
	file := writeFile(t, t.TempDir(), "so.yaml", errorsManifest("",
		"    - {parameter: connection, name: cosmos-secrets, key: connectionString}\n",
		"AccountEndpoint=https://"+host+"/;AccountKey="+key+";", key))

	code, stdout, stderr := runCmd(t, "check", "-f", file)
	if code == exitOK {
		t.Fatalf("check succeeded against a closed port:\n%s", stdout)
	}
	if want := "read database shop at " + host + ": "; !strings.Contains(stdout+stderr, want) {
		t.Errorf("the error does not say %q:\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
	}
	assertNoSecret(t, key, stdout, stderr)
}

// A lease account given by leaseEndpoint with no key of its own (and no
// identity): validate names that account and its parameter.
func TestValidateNamesTheKeylessAccount(t *testing.T) {
	endpoint := noConnections(t)
	key := base64.StdEncoding.EncodeToString([]byte("a valid-looking account key!"))
	file := writeFile(t, t.TempDir(), "so.yaml", errorsManifest(
		"        endpoint: "+endpoint+"\n        leaseEndpoint: "+endpoint+"\n",
		"    - {parameter: cosmosDBKey, name: cosmos-secrets, key: key}\n", "", key))

	code, stdout, stderr := runCmd(t, "validate", "-f", file)
	if code != exitBadArgs {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitBadArgs, stdout, stderr)
	}
	if want := "the lease account (leaseEndpoint) has no account key"; !strings.Contains(stdout, want) {
		t.Errorf("stdout does not say %q:\n%s", want, stdout)
	}
	assertNoSecret(t, key, stdout, stderr)
}
