GO ?= go
PKGS := ./...

.PHONY: build test test-race lint demo bench ci

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

ci: lint test
