# rcamesh Makefile. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
# Tools from the pinned tools module (outside the workspace on purpose).
TOOL := GOWORK=off $(GO) tool -modfile=tools/go.mod
GATEWAY_V1 := github.com/grpc-ecosystem/grpc-gateway@v1.16.0
BENCHMARKS ?= ../shared/benchmarks
BIN := bin/rcamesh

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  %-18s %s\n", $$1, $$2}'

.cache/googleapis/google/api/annotations.proto:
	@dir=$$(GOWORK=off GOFLAGS=-mod=mod $(GO) mod download -json $(GATEWAY_V1) | sed -n 's/.*"Dir": "\(.*\)".*/\1/p'); \
	  test -n "$$dir" || { echo "cannot download $(GATEWAY_V1)"; exit 1; }; \
	  mkdir -p .cache/googleapis/google/api; \
	  cp $$dir/third_party/googleapis/google/api/{annotations,http,httpbody}.proto .cache/googleapis/google/api/; \
	  chmod -R u+w .cache/googleapis

.PHONY: googleapis
googleapis: .cache/googleapis/google/api/annotations.proto ## Copy google/api protos from the Go module cache.

.PHONY: generate
generate: googleapis ## Regenerate gen/ from proto/ (offline, local plugins).
	$(TOOL) buf format -w proto
	$(TOOL) buf generate

.PHONY: check-generate
check-generate: generate ## Fail when regeneration changes anything.
	@git diff --exit-code -- gen proto || { echo "generated code is stale: run make generate and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- gen)" || { git status --porcelain -- gen; echo "untracked generated files"; exit 1; }

.PHONY: lint
lint: googleapis ## go vet, buf lint, buf format.
	$(GO) vet ./...
	$(TOOL) buf lint proto
	$(TOOL) buf format -d --exit-code proto

.PHONY: build
build: cc ## Build the rcamesh binary into bin/.
	$(GO) build -o $(BIN) ./cmd/rcamesh

.PHONY: cc
cc: ## Install a C compiler when missing (cgo builds the tree-sitter grammars of SAST triage).
	@{ command -v gcc >/dev/null 2>&1 && [ -e /usr/include/stdlib.h ]; } || { s=""; [ "$$(id -u)" -eq 0 ] || s=sudo; \
	  $$s apt-get update && DEBIAN_FRONTEND=noninteractive $$s apt-get install -y --no-install-recommends gcc libc6-dev; }

.PHONY: run
run: build ## Investigate the bundled demo scenario (all services, embedded NATS).
	$(BIN) investigate --format md

.PHONY: test
test: ## Unit tests (fast; -short skips the slow ones).
	$(GO) test -short ./...

.PHONY: test-cluster
test-cluster: ## The three-node NATS cluster fault test alone (kills a node and a brain; test-integration runs it too). COUNT=n repeats it.
	$(GO) test -count=$(or $(COUNT),1) -run TestClusterSurvivesLosingANodeAndABrain -timeout 60m -v ./cmd/rcamesh

.PHONY: test-integration
test-integration: ## All tests, including the ones that start real servers.
	$(GO) test -count=1 -timeout 40m ./...

# Fuzzing: every func FuzzX (discovered by scripts/fuzz.sh), one after another.
FUZZTIME ?= 10m
FUZZTIME_SHORT ?= 6s

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME (10m) each, one after another.
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

.PHONY: fuzz-short
fuzz-short: ## Run every Go fuzz target for FUZZTIME_SHORT (6s) each (part of test-all, about 1.5 minutes).
	FUZZTIME=$(FUZZTIME_SHORT) scripts/fuzz.sh

.PHONY: setup
setup: ## Install what the full test suite needs (Debian packages, Go tools, kube-apiserver + kwok builds).
	scripts/setup.sh

.PHONY: test-all
test-all: setup lint check-generate test-integration fuzz-short ## What CI runs: set-up, lint, generated code, every test, a short run of every fuzz target.

.PHONY: bench
bench: ## Benchmarks.
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: eval
eval: build ## Run the evaluation suites and print their tables.
	$(BIN) eval --benchmarks $(BENCHMARKS) --out eval-results

LAB_SCENARIO ?= scenarios/demo

.PHONY: kube-bins
kube-bins: ## Build kube-apiserver (k8s.io/kubernetes) and kwok into ~/.cache/rcamesh (cached by version).
	scripts/kube-apiserver.sh

.PHONY: lab
lab: kube-bins ## Start Prometheus, Alertmanager and Kubernetes loaded with LAB_SCENARIO; print the integrations file (Ctrl-C stops).
	$(GO) build -o bin/rcamesh-lab ./cmd/rcamesh-lab
	bin/rcamesh-lab -scenario $(LAB_SCENARIO)

.PHONY: clean
clean: ## Remove build outputs.
	rm -rf bin .cache eval-results
