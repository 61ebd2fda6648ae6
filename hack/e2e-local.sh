#!/usr/bin/env bash
# Local end-to-end run (make e2e-local): the real KEDA operator and metrics
# adapter, built with this repository's azure-cosmosdb scaler in KEDA's tree,
# on a real control plane (etcd, kube-apiserver, kube-controller-manager),
# scaling Deployments on change feed lag served by the embedded Cosmos DB
# server (cosmoslag serve). Everything runs inside a private network
# namespace; nothing listens outside it. No container engine, no kubelet:
# pods stay Pending, and spec.replicas is what the tests assert.
#
#   hack/e2e-local.sh                build or reuse, start, test (-tags e2elocal), tear down
#   E2E_LOCAL_MODE=external hack/e2e-local.sh
#                                    (make e2e-local-external) a stock KEDA v2.21.0
#                                    instead, built from its pristine module: a
#                                    ScaledObject of type external on
#                                    cmd/cosmosdb-external-scaler, run with the command
#                                    line, environment and TLS Secrets that the Helm
#                                    chart renders (helm template; mutual TLS, KEDA
#                                    presenting the chart's ClusterTriggerAuthentication)
#
# Environment:
#   E2E_LOCAL_MODE    intree (default): KEDA with this scaler in its tree, the
#                     azure-cosmosdb trigger; external: stock KEDA, the external scaler
#   E2E_LOCAL_CACHE   binaries and the in-tree KEDA copy, kept between runs
#                     (default ${XDG_CACHE_HOME:-~/.cache}/keda-cosmosdb-e2e)
#   E2E_LOCAL_KEEP    1: keep the work directory (certificates, logs) after a pass too
#   E2E_LOCAL_RUN     go test -run pattern (default: the mode's tests; intree:
#                     'TestAzureCosmosDB|TestCosmoslagCheck'). TestFleet runs only
#                     when named: 200 ScaledObjects, the operator's RSS and CPU
#
# Needs root (ip netns) on Linux, Go, openssl, iproute2 and etcd (Debian's
# etcd-server; installed with apt-get when missing). Cold, the first run
# compiles Kubernetes' kube-apiserver, kube-controller-manager and kubectl
# and all of KEDA: about 50 CPU-minutes. Later runs reuse the control-plane
# binaries and Go's build cache and take a few minutes.
set -uo pipefail

{

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${E2E_LOCAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keda-cosmosdb-e2e}
bin=$cache/bin
work=$(mktemp -d /tmp/keda-cosmosdb-e2e.XXXXXX)
logs=$work/logs
netns=kedacosmos-e2e-$$
mkdir -p "$bin" "$logs"
mode=${E2E_LOCAL_MODE:-intree}
keda_version=v2.21.0

# Addresses inside the namespace. The API server refuses loopback addresses
# in Endpoints, and the aggregated external-metrics API reaches the adapter
# through one, so the adapter gets its own address on the namespace's lo.
apiserver_ip=10.244.0.1   # advertised by kube-apiserver; the KEDA operator's gRPC
adapter_ip=10.244.0.10    # keda-metrics-apiserver endpoint
cosmos_ip=10.244.0.20     # the embedded Cosmos DB account
scaler_ip=10.244.0.30     # the external scaler (external mode), by its Service's DNS name
cosmos_key='C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=='

script_start=$(date +%s)
step_name=""
step_start=0
step() {
	step_name=$1
	step_start=$(date +%s)
	echo "==> [$(date +%H:%M:%S)] $step_name"
}
done_step() { echo "    ok ($(($(date +%s) - step_start))s)"; }
fail() {
	echo "FAILED at step: $step_name ($(($(date +%s) - step_start))s into the step, $(($(date +%s) - script_start))s in total)" >&2
	[ $# -gt 0 ] && echo "    $*" >&2
	echo "    logs: $logs" >&2
	exit 1
}

# in_ns CMD...: run CMD inside the private network namespace.
in_ns() { ip netns exec "$netns" "$@"; }

pids=()
# start NAME CMD...: start a long-running process inside the namespace,
# output to $logs/NAME.log.
start() {
	local name=$1
	shift
	in_ns "$@" >"$logs/$name.log" 2>&1 &
	pids+=($!)
	echo "    $name started (pid $!, log $logs/$name.log)"
}

status=1
cleanup() {
	local code=$?
	[ "$status" = 0 ] || code=1
	echo "==> [$(date +%H:%M:%S)] tear down"
	if ip netns list 2>/dev/null | grep -qw "$netns"; then
		# Everything started inside the namespace, and nothing else, is in it.
		for sig in TERM KILL; do
			ns_pids=$(ip netns pids "$netns" 2>/dev/null)
			[ -n "$ns_pids" ] || break
			kill -s "$sig" $ns_pids 2>/dev/null
			sleep 2
		done
		ip netns delete "$netns" 2>/dev/null
	fi
	rm -rf "/etc/netns/$netns"
	wait 2>/dev/null
	if [ "$code" = 0 ] && [ "${E2E_LOCAL_KEEP:-0}" != 1 ]; then
		rm -rf "$work"
	else
		echo "    kept $work (logs in $logs)"
	fi
	echo "e2e-local: $([ "$code" = 0 ] && echo PASSED || echo FAILED) in $(($(date +%s) - script_start))s"
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for WHAT SECONDS CMD...: retry CMD every half second.
wait_for() {
	local what=$1 seconds=$2
	shift 2
	local deadline=$(($(date +%s) + seconds))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || fail "$what not ready within ${seconds}s"
		sleep 0.5
	done
}

# --- 1. tools ------------------------------------------------------------------
step "tools"
case $mode in
intree | external) ;;
*) fail "E2E_LOCAL_MODE must be intree or external, not $mode" ;;
esac
[ "$(id -u)" = 0 ] || fail "needs root for ip netns (run as root, or in a VM/sandbox where you are root)"
for tool in go openssl ip curl; do
	command -v "$tool" >/dev/null || fail "$tool not found"
done
if ! command -v etcd >/dev/null; then
	echo "    etcd not found: apt-get install -y etcd-server"
	apt-get install -y etcd-server >"$logs/apt-etcd.log" 2>&1 || fail "apt-get install etcd-server (log: $logs/apt-etcd.log)"
fi
echo "    $(go version); $(etcd --version | head -1); cache $cache"
# A run killed with SIGKILL cannot tear down; its namespace (named after its
# pid) is cleaned up here once that pid is gone.
for stale in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^kedacosmos-e2e-[0-9]+$'); do
	kill -0 "${stale##*-}" 2>/dev/null && continue
	echo "    removing the namespace $stale of an earlier run that did not tear down"
	stale_pids=$(ip netns pids "$stale" 2>/dev/null)
	[ -z "$stale_pids" ] || kill -KILL $stale_pids 2>/dev/null
	ip netns delete "$stale" 2>/dev/null
	rm -rf "/etc/netns/$stale"
done
echo "    mode: $mode"
done_step

# --- 2. control plane binaries --------------------------------------------------
cp_module=$repo/tests/local/controlplane
k8s_version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$cp_module/go.mod")
[ -n "$k8s_version" ] || fail "no k8s.io/kubernetes requirement in $cp_module/go.mod"
cp_stamp=$(cat "$cp_module/go.mod" "$cp_module/go.sum" | sha256sum | cut -c1-16)
step "kube-apiserver, kube-controller-manager, kubectl $k8s_version"
if [ "$(cat "$bin/.controlplane" 2>/dev/null)" = "$cp_stamp" ] &&
	[ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ] && [ -x "$bin/kubectl" ]; then
	echo "    reusing $bin (built from the same go.mod/go.sum)"
else
	echo "    building (cold: ~20 CPU-minutes; log $logs/build-controlplane.log)"
	minor=${k8s_version#v1.}
	minor=${minor%%.*}
	(cd "$cp_module" && go build -o "$bin/" \
		-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl) \
		>"$logs/build-controlplane.log" 2>&1 || {
		tail -n 40 "$logs/build-controlplane.log" >&2
		fail "go build of the control plane"
	}
	echo "$cp_stamp" >"$bin/.controlplane"
fi
done_step

# --- 3. KEDA ------------------------------------------------------------------------
if [ "$mode" = intree ]; then
	keda_src=$cache/keda-src
	keda_bin=$bin
	step "KEDA with this scaler in its tree (hack/intree.sh patch; log $logs/intree.log)"
	# One pull request's commits (INTREE_SERIES=single): the stack's size
	# limits are the contribution's business, not this run's.
	INTREE_SERIES=single INTREE_DIR=$keda_src PATCH=$cache/keda-azure-cosmosdb.patch "$repo/hack/intree.sh" patch >"$logs/intree.log" 2>&1 || {
		tail -n 30 "$logs/intree.log" >&2
		fail "hack/intree.sh patch"
	}
	grep -E '^ +(our files|[0-9]+ files copied)' "$logs/intree.log"
	done_step

	step "go build KEDA's operator and metrics adapter (cold: ~30 CPU-minutes; warm: about a minute)"
	(cd "$keda_src" && go build -o "$keda_bin/keda-operator" ./cmd/operator && go build -o "$keda_bin/keda-adapter" ./cmd/adapter) \
		>"$logs/build-keda.log" 2>&1 || {
		tail -n 40 "$logs/build-keda.log" >&2
		fail "go build of KEDA"
	}
	done_step
else
	# Stock KEDA: its release module as the module proxy serves it, untouched,
	# built once; the binaries are kept apart from the in-tree build's.
	keda_src=$cache/keda-stock-src
	keda_bin=$bin/stock
	step "stock KEDA $keda_version operator and metrics adapter (pristine module; cold: ~30 CPU-minutes)"
	keda_mod=$(cd "$repo" && go mod download -json "github.com/kedacore/keda/v2@$keda_version") || fail "go mod download github.com/kedacore/keda/v2@$keda_version"
	keda_dir=$(awk -F'"' '$2 == "Dir" {print $4}' <<<"$keda_mod")
	keda_sum=$(awk -F'"' '$2 == "Sum" {print $4}' <<<"$keda_mod")
	[ -n "$keda_sum" ] && [ -d "$keda_dir" ] || fail "go mod download github.com/kedacore/keda/v2@$keda_version gave no directory"
	if [ "$(cat "$keda_bin/.keda" 2>/dev/null)" = "$keda_version $keda_sum" ] &&
		[ -x "$keda_bin/keda-operator" ] && [ -x "$keda_bin/keda-adapter" ] && [ -d "$keda_src/config/crd/bases" ]; then
		echo "    reusing $keda_bin (KEDA $keda_version, module $keda_sum)"
	else
		echo "    building from $keda_dir (log $logs/build-keda.log)"
		rm -rf "$keda_src" "$keda_src.tmp" && cp -r "$keda_dir" "$keda_src.tmp" && chmod -R u+w "$keda_src.tmp" &&
			mv "$keda_src.tmp" "$keda_src" || fail "copy $keda_dir"
		mkdir -p "$keda_bin"
		(cd "$keda_src" && GOFLAGS=-buildvcs=false go build -o "$keda_bin/keda-operator" ./cmd/operator &&
			GOFLAGS=-buildvcs=false go build -o "$keda_bin/keda-adapter" ./cmd/adapter) >"$logs/build-keda.log" 2>&1 || {
			tail -n 40 "$logs/build-keda.log" >&2
			fail "go build of stock KEDA"
		}
		echo "$keda_version $keda_sum" >"$keda_bin/.keda"
	fi
	done_step

	step "cosmosdb-external-scaler and the Makefile's pinned helm"
	(cd "$repo" && go build -o "$work/cosmosdb-external-scaler" ./cmd/cosmosdb-external-scaler) >"$logs/build-external-scaler.log" 2>&1 || {
		tail -n 40 "$logs/build-external-scaler.log" >&2
		fail "go build ./cmd/cosmosdb-external-scaler"
	}
	helm_pkg=$(awk '$1 == "HELM_PKG" && $2 == ":=" {print $3}' "$repo/Makefile")
	[ -n "$helm_pkg" ] || fail "no HELM_PKG := in the Makefile"
	(GOBIN=$repo/.cache/bin GOFLAGS=-buildvcs=false go install "$helm_pkg") >"$logs/build-helm.log" 2>&1 || {
		tail -n 40 "$logs/build-helm.log" >&2
		fail "go install $helm_pkg"
	}
	helm=$repo/.cache/bin/helm
	# The name KEDA dials: the chart's Service in the namespace helm installs
	# it into (keda), resolved inside the network namespace only.
	scaler_host=$("$helm" template cosmosdb-external-scaler "$repo/deploy/helm/cosmosdb-external-scaler" --namespace keda \
		--kube-version 1.32.0 --show-only templates/service.yaml |
		awk '$1 == "name:" && !n {n = $2} $1 == "namespace:" && !ns {ns = $2} END {if (n && ns) print n "." ns ".svc.cluster.local"}')
	[ -n "$scaler_host" ] || fail "helm template rendered no Service name"
	echo "    $("$helm" version --short); KEDA dials $scaler_host"
	done_step
fi
(cd "$repo" && go build -o "$work/cosmoslag" ./cmd/cosmoslag) >"$logs/build-cosmoslag.log" 2>&1 || {
	tail -n 40 "$logs/build-cosmoslag.log" >&2
	fail "go build ./cmd/cosmoslag"
}

# --- 4. certificates, tokens, kubeconfig -------------------------------------------
step "certificates and credentials in $work/pki"
pki=$work/pki
mkdir -p "$pki/keda" "$pki/cosmos-ca"
{
	# ca NAME CN: a self-signed certificate authority.
	ca() { openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$2" -keyout "$pki/$1.key" -out "$pki/$1.crt"; }
	# leaf NAME CA CN SANS EKU: a certificate signed by CA.
	leaf() {
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$3" -keyout "$pki/$1.key" -out "$pki/$1.csr"
		printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' "$4" "$5" >"$pki/$1.ext"
		openssl x509 -req -in "$pki/$1.csr" -CA "$pki/$2.crt" -CAkey "$pki/$2.key" -CAcreateserial -days 2 -extfile "$pki/$1.ext" -out "$pki/$1.crt"
	}
	ca cluster-ca kubernetes-ca
	leaf apiserver cluster-ca kube-apiserver \
		"IP:127.0.0.1,IP:$apiserver_ip,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" serverAuth
	ca front-proxy-ca front-proxy-ca
	leaf front-proxy-client front-proxy-ca front-proxy-client "DNS:front-proxy-client" clientAuth
	openssl genrsa -out "$pki/sa.key" 2048
	openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
	# KEDA's own certificates (the operator's gRPC server, the adapter's
	# HTTPS), as its cert rotation would make them, for the Service names.
	ca keda-ca keda-ca
	leaf keda keda-ca keda-operator \
		"DNS:keda-operator.keda.svc.cluster.local,DNS:keda-operator.keda.svc,DNS:keda-operator,DNS:keda-metrics-apiserver.keda.svc.cluster.local,DNS:keda-metrics-apiserver.keda.svc,DNS:keda-metrics-apiserver,IP:$apiserver_ip,IP:$adapter_ip" \
		serverAuth,clientAuth
} >"$logs/openssl.log" 2>&1 || fail "openssl (log: $logs/openssl.log)"
cp "$pki/keda-ca.crt" "$pki/keda/ca.crt"
cp "$pki/keda.crt" "$pki/keda/tls.crt"
cp "$pki/keda.key" "$pki/keda/tls.key"
admin_token=$(openssl rand -hex 24)
echo "$admin_token,admin,admin,system:masters" >"$pki/tokens.csv"
kubeconfig=$work/kubeconfig
cat >"$kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: $pki/cluster-ca.crt
users:
- name: admin
  user:
    token: $admin_token
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
chmod 600 "$kubeconfig" "$pki/tokens.csv"
export KUBECONFIG=$kubeconfig
export PATH=$bin:$PATH
done_step

# --- 5. the namespace ------------------------------------------------------------
step "network namespace $netns"
# ip netns exec mounts /etc/netns/NAME/hosts over /etc/hosts: the external
# scaler's Service name resolves inside the namespace only.
mkdir -p "/etc/netns/$netns"
{
	echo "127.0.0.1 localhost"
	[ "$mode" = external ] && echo "$scaler_ip $scaler_host"
} >"/etc/netns/$netns/hosts"
ip netns add "$netns" || fail "ip netns add"
in_ns ip link set lo up || fail "lo up"
for ip in $apiserver_ip $adapter_ip $cosmos_ip $scaler_ip; do
	in_ns ip addr add "$ip/32" dev lo || fail "ip addr add $ip"
done
echo "    lo: 127.0.0.1, $apiserver_ip (API server, KEDA operator), $adapter_ip (KEDA adapter), $cosmos_ip (Cosmos DB), $scaler_ip (external scaler)"
done_step

# --- 6. control plane -------------------------------------------------------------
step "etcd"
start etcd etcd --data-dir "$work/etcd" --listen-client-urls http://127.0.0.1:2379 \
	--advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 --unsafe-no-fsync
wait_for etcd 30 in_ns curl -fsS http://127.0.0.1:2379/health
done_step

step "kube-apiserver"
start kube-apiserver kube-apiserver \
	--etcd-servers=http://127.0.0.1:2379 \
	--bind-address=127.0.0.1 --advertise-address=$apiserver_ip --secure-port=6443 \
	--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/cluster-ca.crt" --token-auth-file="$pki/tokens.csv" \
	--authorization-mode=Node,RBAC \
	--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-cluster-ip-range=10.96.0.0/16 \
	--enable-aggregator-routing=true \
	--requestheader-client-ca-file="$pki/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
	--requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
	--requestheader-extra-headers-prefix=X-Remote-Extra- \
	--proxy-client-cert-file="$pki/front-proxy-client.crt" --proxy-client-key-file="$pki/front-proxy-client.key"
wait_for kube-apiserver 90 in_ns kubectl get --raw /readyz
done_step

step "kube-controller-manager (HPA sync every 5s)"
start kube-controller-manager kube-controller-manager \
	--kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig" \
	--leader-elect=false --controllers='*' \
	--service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/cluster-ca.crt" \
	--horizontal-pod-autoscaler-sync-period=5s --bind-address=127.0.0.1
wait_for kube-controller-manager 60 in_ns curl -fsk https://127.0.0.1:10257/healthz
done_step

# --- 7. Cosmos DB ----------------------------------------------------------------
step "embedded Cosmos DB server (cosmoslag serve)"
start cosmos "$work/cosmoslag" serve -addr "$cosmos_ip:8081" -control-addr "$cosmos_ip:8082" \
	-key "$cosmos_key" -ca-file "$pki/cosmos-ca/cosmos.crt"
wait_for "cosmoslag serve" 30 in_ns curl -fsS "http://$cosmos_ip:8082/control/healthz"
[ -s "$pki/cosmos-ca/cosmos.crt" ] || fail "cosmoslag serve wrote no certificate"
done_step

# --- 8. KEDA ---------------------------------------------------------------------
step "KEDA CRDs, namespace, metrics APIService"
kc() { in_ns kubectl "$@" >>"$logs/kubectl.log" 2>&1 || fail "kubectl $*"; }
kc create namespace keda
kc apply --server-side -f "$keda_src/config/crd/bases"
ca_bundle=$(base64 -w0 <"$pki/keda-ca.crt")
in_ns kubectl apply -f - >>"$logs/kubectl.log" 2>&1 <<EOF || fail "apply the metrics APIService"
apiVersion: v1
kind: Service
metadata: {name: keda-metrics-apiserver, namespace: keda}
spec:
  ports: [{name: https, port: 443, targetPort: 6443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: keda-metrics-apiserver, namespace: keda}
subsets:
- addresses: [{ip: $adapter_ip}]
  ports: [{name: https, port: 6443}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.external.metrics.k8s.io}
spec:
  service: {name: keda-metrics-apiserver, namespace: keda, port: 443}
  group: external.metrics.k8s.io
  version: v1beta1
  caBundle: $ca_bundle
  groupPriorityMinimum: 100
  versionPriority: 100
EOF
wait_for "KEDA CRDs" 30 in_ns kubectl get scaledobjects.keda.sh -A
done_step

keda_env=(env KUBECONFIG="$kubeconfig" POD_NAMESPACE=keda WATCH_NAMESPACE= KEDA_CLUSTER_OBJECT_NAMESPACE=keda)
step "KEDA operator ($([ "$mode" = intree ] && echo "our scaler inside" || echo "stock $keda_version"))"
start keda-operator "${keda_env[@]}" "$keda_bin/keda-operator" \
	--zap-log-level=debug --zap-encoder=console \
	--enable-cert-rotation=false --cert-dir="$pki/keda" \
	--metrics-bind-address=127.0.0.1:18080 --health-probe-bind-address=127.0.0.1:18081 \
	--metrics-service-bind-address=$apiserver_ip:9666 \
	--ca-dir="$pki/cosmos-ca"
wait_for "KEDA operator" 60 in_ns curl -fsS http://127.0.0.1:18081/readyz
done_step

step "KEDA metrics adapter"
start keda-adapter "${keda_env[@]}" "$keda_bin/keda-adapter" \
	--secure-port=6443 --bind-address=$adapter_ip \
	--tls-cert-file="$pki/keda/tls.crt" --tls-private-key-file="$pki/keda/tls.key" --cert-dir="$pki/keda" \
	--lister-kubeconfig="$kubeconfig" --authentication-kubeconfig="$kubeconfig" --authorization-kubeconfig="$kubeconfig" \
	--metrics-service-address=$apiserver_ip:9666 --metrics-service-grpc-authority=keda-operator.keda.svc.cluster.local \
	--port=18083 --zap-log-level=info
wait_for "APIService v1beta1.external.metrics.k8s.io Available" 90 \
	in_ns kubectl wait --for=condition=Available --timeout=2s apiservice/v1beta1.external.metrics.k8s.io
done_step
# Nothing of the run may listen outside the namespace.
outside=$(ss -ltnH 2>/dev/null | awk '{print $4}' | grep -E ':(2379|2380|6443|8081|8082|9666|10257|18080|18081|18083|6000|6001)$')
[ -z "$outside" ] || fail "listening outside the namespace: $outside"
echo "    control plane and KEDA up $(($(date +%s) - script_start))s after start; nothing listens outside $netns"

# --- 9. the tests -----------------------------------------------------------------
step "go test -tags e2elocal ./tests/local/"
# The test process trusts the Cosmos DB server's certificate twice: for its
# own REST calls (COSMOS_CA_FILE) and for the in-process scaler it compares
# KEDA's metric with (KEDA's HTTP client uses the system pool: SSL_CERT_FILE).
# In external mode the test starts the external scaler itself, from what
# helm template renders.
default_run=$([ "$mode" = intree ] && echo 'TestAzureCosmosDB|TestCosmoslagCheck' || echo TestExternalScaler)
(cd "$repo" && in_ns env KUBECONFIG="$kubeconfig" PATH="$PATH" \
	COSMOS_ENDPOINT="https://$cosmos_ip:8081/" COSMOS_CONTROL_URL="http://$cosmos_ip:8082" \
	COSMOS_KEY="$cosmos_key" COSMOS_CA_FILE="$pki/cosmos-ca/cosmos.crt" SSL_CERT_FILE="$pki/cosmos-ca/cosmos.crt" \
	E2E_LOCAL_MODE="$mode" E2E_LOCAL_LOGS="$logs" E2E_HELM="${helm:-}" E2E_EXTERNAL_SCALER="$work/cosmosdb-external-scaler" \
	E2E_KEDA_BIN="$keda_bin" \
	go test -tags e2elocal -count=1 -v -timeout 20m -run "${E2E_LOCAL_RUN:-$default_run}" ./tests/local/) 2>&1 | tee "$logs/test.log"
test_status=${PIPESTATUS[0]}
passed=$(grep -cE '^[[:space:]]*--- PASS' "$logs/test.log")
failed=$(grep -cE '^[[:space:]]*--- FAIL' "$logs/test.log")
skipped=$(grep -cE '^[[:space:]]*--- SKIP' "$logs/test.log")
echo "tests: $passed passed, $failed failed, $skipped skipped"
if [ "$test_status" -ne 0 ]; then
	# For the reader only: nothing is derived from KEDA's log.
	echo "    last lines of the KEDA operator's log:" >&2
	tail -n 30 "$logs/keda-operator.log" | sed 's/^/    | /' >&2
	fail "go test exited $test_status"
fi
[ "$passed" -gt 0 ] || fail "no test ran"
# cosmoslag serve prints how to connect, the emulator's published key included
# (cosmos.log); every other log must not hold it.
if grep -qF "$cosmos_key" $(ls "$logs"/*.log | grep -v '/cosmos\.log$'); then
	fail "the account key appears in the output of KEDA, the external scaler or the tests"
fi
# Evidence that KEDA ran this repository's scaler comes from the served
# account's request log (tests/local: the requests only this scaler makes),
# in external mode from the external scaler's /metrics; no KEDA log is read.
grep -E 'request log: |the scaler served ' "$logs/test.log" | sed 's/^ *[a-z_]*\.go:[0-9]*: /    /'
done_step
status=0
exit 0
}
