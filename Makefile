# aso build, test and demo targets. `make help` lists them.
GO      ?= go
BIN     ?= bin/aso
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/asyncstageout/aso/cmd.Version=$(VERSION)

.PHONY: all build size man test test-busy test-setup lint demo-setup demo tour bench bench-fleet bench-serve bench-poll chaos fuzz enqueue-large concurrency-large couch-views clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/aso
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

size: ## the code lines (not blank, not comment) of each package linked into bin/aso, cmd's and the total; test support is not counted (and must not be linked)
	@$(GO) run ./internal/tools/codesize .

man: build ## write a man page per command, generated from the help, into man/
	$(BIN) man man

test: test-setup ## run the whole test suite with the race detector (installs what it needs first; see test-setup)
	$(GO) test -race -count=1 -timeout 30m ./...

BUSY_CPUS ?= 2
test-busy: test-setup ## the whole test suite, as make test, while stress-ng keeps BUSY_CPUS (2) cores busy: it must pass on a loaded machine
	@stress-ng --cpu $(BUSY_CPUS) --quiet & pid=$$!; trap 'kill $$pid; wait $$pid' EXIT; \
	echo "+ go test -race -count=1 -timeout 30m ./...   (stress-ng --cpu $(BUSY_CPUS), pid $$pid)"; $(GO) test -race -count=1 -timeout 30m ./...

test-setup: ## install what the tests need: gfal-rm, gfal2 plugins, Node.js, stress-ng (apt-get, as root) and the test server's npm packages; else print the command to run
	@./scripts/test-setup

lint: ## gofmt, go vet, staticcheck (pinned in go.mod) and the code-shape rules: no function over 80 lines, a type's methods in its own files, no agent type over 25 methods
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -count=1 ./internal/habits

demo-setup: ## install only what make demo and make tour use: gfal-rm (with gfal-stat, gfal-sum) and its file:// plugin (scripts/test-setup demo)
	@./scripts/test-setup demo

demo: ## the main job offline: install gfal-rm and its file:// plugin only (demo-setup), build, create a file store, enqueue a few hundred requests between two file:// sites, run the agent to completion, show the status; prints how long each step took
	@set -e; t0=$$(date +%s); \
	echo "+ scripts/test-setup demo"; ./scripts/test-setup demo; t1=$$(date +%s); \
	echo "+ make build"; $(MAKE) --no-print-directory build; t2=$$(date +%s); \
	dir=$${DEMO_DIR:-$$(mktemp -d /tmp/aso-demo.XXXXXX)}; \
	$(GO) run ./internal/demo $$dir 300; \
	export ASO_STATE=file:$$dir/state.aso ASO_USER=demo ASO_SITES=$$dir/sites.yaml; \
	echo "+ aso init"; $(BIN) init; \
	echo "+ aso enqueue -f $$dir/requests.jsonl"; $(BIN) enqueue -f $$dir/requests.jsonl; \
	echo "+ aso run --sim-transfer-time 2s --progress always"; $(BIN) run --sim-transfer-time 2s --progress always; \
	echo "+ aso status"; $(BIN) status; t3=$$(date +%s); \
	echo "demo files, state and sites file are in $$dir"; \
	echo "demo took $$((t3-t0)) s: installing $$((t1-t0)) s, building $$((t2-t1)) s, the demo itself $$((t3-t2)) s"

tour: demo-setup ## the README's five-minute tour as a newcomer types it, in a fresh /tmp directory: every step's exit code and key output checked (scripts/tour)
	@./scripts/tour

BENCH_N        ?= 10000,100000
BENCH_BACKENDS ?= memfile,couch
BENCH_FLAGS    ?=
bench: build test-setup ## throughput, round trips, FTS requests and memory, agent/limit against sequential and pipelined references, growth, and on CouchDB the crowded series (10,000 transfers beside 1,000,000 documents of other users; BENCH_FLAGS=-crowd 100000 for a quicker one, -crowd 0 for none) (BENCH_FLAGS=-repeat 5 for the targets; BENCH_N=10000 BENCH_BACKENDS=memfile for a quick run); table + bench/results.json
	$(GO) build -o bin/aso-bench ./bench
	bin/aso-bench -aso $(BIN) -n $(BENCH_N) -backends $(BENCH_BACKENDS) -out bench/results.json $(BENCH_FLAGS)

FLEET_USERS    ?= 1000
FLEET_PER_USER ?= 100
FLEET_FLAGS    ?=
bench-fleet: build test-setup ## a fleet: FLEET_USERS x FLEET_PER_USER transfers, 4 run --all-users parents of 8 agents on CouchDB, one on memfile; limit/drain, lost lock races, slot idle time; table + bench/fleet-results.json
	$(GO) build -o bin/aso-bench ./bench
	bin/aso-bench -fleet -aso $(BIN) -users $(FLEET_USERS) -per-user $(FLEET_PER_USER) $(FLEET_FLAGS)

SERVE_N        ?= 100000
SERVE_BACKENDS ?= memfile,couch
bench-serve: build test-setup ## aso serve at SERVE_N transfers: overview render time (cold, warm), one /metrics scrape's store requests and time, a list and a transfer page
	$(GO) build -o bin/aso-bench ./bench
	bin/aso-bench -serve -aso $(BIN) -n $(SERVE_N) -backends $(SERVE_BACKENDS)

bench-poll: build demo-setup ## how often aso run polls: the README tour drained with the default --first-poll and with a fixed --interval, and the FTS status requests of a job that runs an hour
	$(GO) build -o bin/aso-bench ./bench
	bin/aso-bench -poll -aso $(BIN)

# Every fuzz target, as package:target. Each runs FUZZTIME on its own; the
# seed corpora under each package's testdata/fuzz/ also run in `make test`.
FUZZ_TARGETS := \
	./enqueue:FuzzRecordReader \
	./state:FuzzTransferJSON \
	./state:FuzzRequestJSON \
	./state/memfile:FuzzStateFile \
	./state/memfile:FuzzOpen \
	./state/memfile:FuzzFlippedByte \
	./state/memfile:FuzzDecodeDoc \
	./state/memfile:FuzzWritten \
	./state/couch:FuzzDecode \
	./state/couch:FuzzExtraFields \
	./fts:FuzzParseStatus \
	./fts:FuzzParseError \
	./fts:FuzzUnquote \
	./fts:FuzzParseReason \
	./fts/ftssim:FuzzSubmit \
	./srm:FuzzInterpretRun \
	./srm:FuzzStorageXML \
	./srm:FuzzSitesFile \
	./srm:FuzzStorageJSON
FUZZTIME ?= 10s

# A target that fails without writing a failing input (the fuzz engine's own
# "context deadline exceeded" when -fuzztime ends mid-run) is run once more;
# a failure that writes an input under testdata/fuzz fails at once. Minimising
# a new input is bounded (2s), so that a run of FUZZTIME ends near it.
fuzz: ## run every fuzz target for FUZZTIME (default 10s) each
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  for try in 1 2; do \
	    echo "+ go test -run '^$$' -fuzz '^$$name$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg"; \
	    if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg >$$log 2>&1; then cat $$log; break; fi; \
	    cat $$log; \
	    if grep -q 'Failing input written' $$log || [ $$try = 2 ]; then exit 1; fi; \
	    echo "fuzz: $$name failed without a failing input; running it once more"; \
	  done; \
	done

enqueue-large: ## aso enqueue of 1,000,000 JSON lines with 1% bad ones: every bad line reported, memory bounded
	ASO_TEST_LARGE=1 $(GO) test -race -count=1 -timeout 30m -v -run '^TestEnqueue_MillionLinesWithBadOnes$$' ./cmd

couch-views: test-setup ## the CouchDB tests that read views, on PouchDB's own view code instead of the test server's faster index
	ASO_TEST_COUCH_VIEWS=pouchdb $(GO) test -count=1 -run '^(TestStore|TestViews|TestInit|TestInit_UpgradesMangoQueueIndexes|TestStore_Flow)$$' ./state/couch/

concurrency-large: test-setup ## five users' agents, run as processes on one CouchDB, drain 5,000 transfers with no loss and no duplicate
	ASO_TEST_LARGE=1 $(GO) test -count=1 -timeout 20m -v -run '^TestRun_Concurrency$$' ./cmd

chaos: test-setup ## the full fault suite: every scenario on memfile and CouchDB, a table of faults, lost, duplicated, stuck; then the property test's long random sequence on both (ASO_CHAOS_SEED=N to vary or replay)
	@log=$$(mktemp /tmp/aso-chaos.XXXXXX); echo "+ ASO_CHAOS=full go test -race -v -run 'TestChaos|TestProperty' ./chaos (full log: $$log)"; \
	ASO_CHAOS=full $(GO) test -race -count=1 -timeout 90m -v -run '^(TestChaos|TestProperty)$$' ./chaos >$$log 2>&1; rc=$$?; \
	grep -v -e '^=== ' -e '^        {' $$log; exit $$rc

clean: ## remove build outputs
	rm -rf bin man bench/results.json bench/fleet-results.json
