GO ?= go
PKGS := ./...

# `make help` lists every target that has a `## description` after its name.
.DEFAULT_GOAL := build

.PHONY: help build test lint ci demo bench bench-compare external-kedaclient intree intree-patch e2e-local

help: ## List the targets and what each does
	@awk 'BEGIN { FS = ":.*## " } /^[a-zA-Z0-9_-]+:.*## / { printf "  %-20s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## Compile every package and both commands (go build ./...)
	$(GO) build $(PKGS)

test: ## The README's test command: unit and embedded-server tests, race detector on (needs cgo and a C compiler)
	$(GO) test -race -count=1 $(PKGS)

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

external-kedaclient: ## The external scaler driven by KEDA v2.21.0's own clients (own module)
	cd cmd/cosmosdb-external-scaler/kedaclient && $(GO) test -count=1 .

intree: ## KEDA v2.21.0 with this scaler in-tree: build operator + adapter, KEDA's pinned golangci-lint with its .golangci.yml (installed once), our and KEDA's tests of the packages, vet of the e2e suites (slow cold: compiles all of KEDA)
	hack/intree.sh

PATCH_DIR ?= /tmp/keda-pr
intree-patch: ## The pull request for KEDA v2.21.0 in PATCH_DIR (default /tmp/keda-pr): git format-patch series (signed off; INTREE_AUTHOR_NAME/EMAIL), PULL_REQUEST.md, keda-docs.patch; size check; git am onto a fresh KEDA. PATCH=file: the series as one mbox too
	PATCH_DIR=$(PATCH_DIR) hack/intree.sh patch

e2e-local: ## KEDA with this scaler on a real control plane, scaling on the embedded Cosmos DB server, in a private network namespace (root; cold ~50 CPU-min of compiling, warm a few minutes)
	hack/e2e-local.sh
