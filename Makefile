GO ?= go
PKGS := ./...

# `make help` lists every target that has a `## description` after its name.
.DEFAULT_GOAL := build

.PHONY: help build test test-unit lint ci demo bench bench-compare bench-fleet bench-instructions external-kedaclient intree intree-patch e2e-local e2e-local-external
.PHONY: image image-push helm-lint helm-template helm-package tools dist

help: ## List the targets and what each does
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-20s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## Compile every package and both commands (go build ./...)
	$(GO) build $(PKGS)

test: ## The README's test command: unit and embedded-server tests, race detector on (needs cgo and a C compiler)
	$(GO) test -race -count=1 $(PKGS)

test-unit: ## The inner loop: make test with -short, which leaves out the steps that build tools, images or commands or run the SDK suites (no network needed once the modules are downloaded)
	$(GO) test -race -short -count=1 $(PKGS)

lint: ## gofmt check of every tracked Go file, then go vet
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

ci: ## Exactly what CI runs: .ci/run (lint, vet of the e2e-tagged tests, the race test suite with a pass/fail count)
	.ci/run

demo: ## The README's main command: go run ./cmd/cosmoslag demo
	$(GO) run ./cmd/cosmoslag demo

bench: ## Our scaler alone and the bare-HTTP floor of the same poll, 1 to 10,000 leases, 2 ms per request (COSMOSDB_BENCH_LATENCY to change)
	$(GO) test -run '^$$' -bench 'CosmosDBPoll|HTTPFloor' -benchtime 10x -benchmem ./tests/emulator/

bench-compare: ## Ours and KEDA v2.21.0's scaler side by side (own module; compiles all of KEDA's scalers)
	cd bench/kedacompare && $(GO) test -run '^$$' -bench . -benchtime 10x -count 3 -benchmem .

bench-fleet: ## N ScaledObjects (1 to 1,000, 100 or 1,000 leases each) on one account, polled on KEDA's cadence (compressed 6x), ours and v2.21.0's interleaved, 2 repetitions: latency, connections, memory, CPU (own module; compiles all of KEDA's scalers; 8 min per repetition on a quiet 2-core machine with the shared bound, 27 min before it under load; FLEET_ARGS=-reps 1)
	cd bench/fleet && $(GO) build -o ../../bin/fleet . && ../../bin/fleet run -out ../../bin/fleet-results.jsonl -plot ../../docs/fleet.svg $(FLEET_ARGS)

bench-instructions: ## Instructions per operation under valgrind, steady where times are not: the client's lease read (an estimate of 64) and the server's change feed answer
	hack/bench-instructions.sh ./tests/emulator/ 'LeaseRead$$' 20 120
	hack/bench-instructions.sh ./pkg/cosmostest/ 'ServeChangeFeedRead$$'

external-kedaclient: ## The external scaler driven by KEDA v2.21.0's own clients (own module)
	cd cmd/cosmosdb-external-scaler/kedaclient && $(GO) test -count=1 .

intree: ## KEDA v2.21.0 with this scaler in-tree: build operator + adapter, KEDA's pinned golangci-lint with its .golangci.yml (installed once), our and KEDA's tests of the packages, vet of the e2e suites; then hack/pr/spec-behaviours on the stack's head, built, linted and tested (slow cold: compiles all of KEDA)
	hack/intree.sh

PATCH_DIR ?= /tmp/keda-pr
AUTHOR ?=
intree-patch: ## The stack of pull requests for KEDA v2.21.0 in PATCH_DIR (default /tmp/keda-pr), authored and signed off by AUTHOR="Name <email>" (default: git config user.name/user.email; a placeholder is refused): one folder per pull request in hack/pr/stack/series order (its git format-patch and PULL_REQUEST.md), ISSUE.md and the private advisory (hack/advisory.sh write) in PATCH_DIR/advisory; hack/pr/stack.sh applies them in order onto a fresh KEDA and checks each head (build, vet, KEDA's golangci-lint, the scaler's tests, at most 300 production lines, v2.21.0's tests kept). No keda-docs patch is written. Edit a pull request: hack/pr/stack.sh apply DIR, git rebase -i there, hack/pr/stack.sh save DIR.
	PATCH_DIR=$(PATCH_DIR) INTREE_AUTHOR="$(AUTHOR)" hack/intree.sh patch

e2e-local: ## KEDA with this scaler on a real control plane, scaling on the embedded Cosmos DB server, in a private network namespace (root; cold ~50 CPU-min of compiling, warm a few minutes)
	hack/e2e-local.sh

e2e-local-external: ## Stock KEDA v2.21.0 (no patch) on the same control plane, scaling through type: external on cmd/cosmosdb-external-scaler run as the Helm chart renders it (mutual TLS)
	E2E_LOCAL_MODE=external hack/e2e-local.sh

# ---- the external scaler's image and Helm chart -------------------------------
# Stamped into the binaries (internal/version) and the image labels.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
IMAGE_TAR ?= bin/cosmosdb-external-scaler-image.tar
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE ?= ghcr.io/kedacore/cosmosdb-external-scaler:$(VERSION)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
# Go module proxy tools, pinned. `make tools` installs them into .cache/bin
# (what .ci/run does first, and what the tests use when present).
HELM_PKG := helm.sh/helm/v3/cmd/helm@v3.22.0
ACTIONLINT_PKG := github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
TOOLS_BIN := $(CURDIR)/.cache/bin
HELM ?= $(if $(wildcard $(TOOLS_BIN)/helm),$(TOOLS_BIN)/helm,$(GO) run $(HELM_PKG))
CHART := deploy/helm/cosmosdb-external-scaler
# A helm built by go install assumes Kubernetes v1.20.0, below the chart's kubeVersion.
HELM_TEMPLATE_FLAGS ?= --kube-version 1.32.0
IMAGE_BUILD = SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || echo 0) \
	$(GO) -C deploy/image run . -repo $(CURDIR) -platforms $(IMAGE_PLATFORMS) \
	-version $(VERSION) -commit $(COMMIT) -ca-bundle $(CA_BUNDLE)

image: ## The external scaler's image as an OCI image tarball, no container engine (IMAGE_TAR=bin/cosmosdb-external-scaler-image.tar; linux/amd64 and linux/arm64)
	$(IMAGE_BUILD) -output $(abspath $(IMAGE_TAR))

image-push: ## Build the same multi-arch image and push it (IMAGE=registry/repository:tag; credentials of ~/.docker/config.json)
	$(IMAGE_BUILD) -push $(IMAGE)

helm-lint: ## helm lint --strict of the external scaler's chart (helm from the Go module proxy, pinned)
	$(HELM) lint --strict $(CHART)

helm-template: ## Render the external scaler's chart with its default values
	$(HELM) template cosmosdb-external-scaler $(CHART) --namespace keda $(HELM_TEMPLATE_FLAGS)

helm-package: ## Package the chart into bin/ (CHART_VERSION, APP_VERSION default to the chart's own)
	$(HELM) package $(CHART) --destination bin $(if $(CHART_VERSION),--version $(CHART_VERSION)) $(if $(APP_VERSION),--app-version $(APP_VERSION))

tools: ## Install the pinned helm and actionlint from the Go module proxy into .cache/bin
	GOBIN=$(TOOLS_BIN) GOFLAGS=-buildvcs=false $(GO) install $(HELM_PKG)
	GOBIN=$(TOOLS_BIN) GOFLAGS=-buildvcs=false $(GO) install $(ACTIONLINT_PKG)

DIST_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
dist: ## cosmoslag release binaries for DIST_PLATFORMS into bin/dist, with SHA256SUMS (version stamped as in the image)
	@mkdir -p bin/dist
	@set -e; for p in $(DIST_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  out=bin/dist/cosmoslag-$(VERSION)-$$os-$$arch$$ext; echo "go build $$out"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -buildvcs=false \
	    -ldflags "-s -w -X github.com/kedacore/keda-cosmosdb-scaler/internal/version.version=$(VERSION) -X github.com/kedacore/keda-cosmosdb-scaler/internal/version.commit=$(COMMIT)" \
	    -o $$out ./cmd/cosmoslag; \
	done; cd bin/dist && sha256sum cosmoslag-* > SHA256SUMS
