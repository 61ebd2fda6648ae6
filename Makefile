GO ?= go
PKGS := ./...

.PHONY: build test lint demo bench bench-compare external-kedaclient ci

build:
	$(GO) build $(PKGS)

## test: the README's test command (unit + embedded-server tests, race detector on)
test:
	$(GO) test -race -count=1 $(PKGS)

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## demo: the README's main command
demo:
	$(GO) run ./cmd/cosmoslag demo

## bench: our scaler alone and the bare-HTTP floor of the same poll, 1 to 10,000 leases, 2 ms per request (COSMOSDB_BENCH_LATENCY to change)
bench:
	$(GO) test -run '^$$' -bench 'CosmosDBPoll|HTTPFloor' -benchtime 10x -benchmem ./pkg/scalers/

## bench-compare: ours and KEDA v2.21.0's scaler side by side (own module; compiles all of KEDA's scalers)
bench-compare:
	cd bench/kedacompare && $(GO) test -run '^$$' -bench . -benchtime 10x -count 3 -benchmem .

ci: lint test

.PHONY: intree intree-patch e2e-local

## intree: drop the scaler into a fresh copy of KEDA v2.21.0, build operator + adapter, run its tests there (slow cold: compiles all of KEDA)
intree:
	hack/intree.sh

## intree-patch: the same change as a patch against KEDA v2.21.0 (PATCH=keda-azure-cosmosdb.patch)
intree-patch:
	hack/intree.sh patch

## external-kedaclient: the external scaler driven by KEDA v2.21.0's own clients (own module)
external-kedaclient:
	cd cmd/cosmosdb-external-scaler/kedaclient && $(GO) test -count=1 .

## e2e-local: KEDA with this scaler on a real control plane, scaling on the embedded Cosmos DB server, in a private network namespace (root; cold ~50 CPU-min of compiling, warm a few minutes)
e2e-local:
	hack/e2e-local.sh
