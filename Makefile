# aso build, test and demo targets. `make help` lists them.
GO      ?= go
BIN     ?= bin/aso
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/asyncstageout/aso/cmd.Version=$(VERSION)

.PHONY: all build test lint demo bench chaos fuzz clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/aso
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

test: ## run the whole test suite with the race detector
	$(GO) test -race -count=1 ./...

lint: ## go vet and staticcheck
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@2025.1.1 ./...

clean: ## remove build outputs
	rm -rf bin bench/results.json
