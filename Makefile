# tokendata: the official public data service of one Solana token.
# `make help` lists the targets. Tools are pinned in hack/tools/go.mod.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

MODULES := shared shared/simulator shared/testkit services/edge services/supply services/market services/holders services/standalone
SERVICES := edge supply market holders standalone
BIN := $(CURDIR)/.bin
TOOLS_MOD := $(CURDIR)/hack/tools/go.mod

# VERSION is the release (hack/version.sh: the tag, else the VERSION file's
# with +dev), COMMIT the short commit: build.version of /api/health is never
# the bare commit.
VERSION ?= $(shell hack/version.sh 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w \
	-X github.com/tokendata/tokendata/shared/buildinfo.Version=$(VERSION) \
	-X github.com/tokendata/tokendata/shared/buildinfo.Commit=$(COMMIT)

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | sort | \
		awk 'BEGIN {FS = ":.*## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

.PHONY: run
run: ## Run standalone (demo mode on a simulated token unless TOKEN_CONFIG/TOKEN_MINT is set) on :8080
	go run -ldflags '$(LDFLAGS)' ./services/standalone/cmd/standalone

.PHONY: deps
deps: ## Install what the tests need when missing (redis-server...)
	hack/install-test-deps.sh

.PHONY: test
test: ## Every module's tests with -race, every fuzz target briefly, the chart checks (a real kube-apiserver; the chart installed, tested, upgraded and uninstalled on a real local node, skaffold deploying to it; beside the module tests; installs what is missing, builds the pinned tools once per machine); ends with the timing table of its steps
	hack/make-test.sh $(MODULES)

.PHONY: ci-fresh
ci-fresh: ## Rehearse CI on a fresh machine: .ci/run in a new clone of HEAD with every cache empty (Go's, npm's, the pinned tools'); WARM=1 keeps this machine's caches; prints the timing table
	hack/ci-fresh.sh $(if $(WARM),--warm,--cold)

.PHONY: fault-matrix
fault-matrix: deps ## Run the fault matrix alone and rewrite the recovery-time table of docs/operations.md from what it measured
	hack/fault-matrix.sh --write

.PHONY: alert-times
alert-times: ## Run the node test alone (the local cluster) and rewrite docs/operations.md's table of each alert's measured time to fire and to resolve
	hack/alert-times.sh

.PHONY: fuzz
fuzz: ## Every fuzz target of every module for FUZZTIME each (default 8s), FUZZPARALLEL workers (default 1)
	hack/fuzz.sh $(MODULES)

.PHONY: docs
docs: ## Regenerate docs/environment.md (every variable of every service) from the config structs, and docs/chart-values.md (every value of the chart) from values.yaml
	cd services/standalone && go generate ./envdoc
	cd hack/chartcheck && GOWORK=off go run ./cmd/valuesdoc

.PHONY: dashboards
dashboards: ## Write the chart's Grafana dashboards (charts/tokendata/files/dashboards/*.json) from their Go source, hack/chartcheck/dashboards
	cd hack/chartcheck && GOWORK=off go run ./cmd/dashboards

.PHONY: chart-check
chart-check: deps ## helm lint, render matrix, strict decoding, policies, the cache tier run for real, and a real kube-apiserver: installs and upgrades
	hack/chart-check.sh

.PHONY: kube
kube: ## Build the pinned kube-apiserver and kubectl into .bin/ (cached: rebuilt only when hack/tools/kube's pin changes)
	hack/build-kube.sh

.PHONY: lint
lint: $(BIN)/golangci-lint ## gofmt, go vet and golangci-lint over every module
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && go vet ./... && $(BIN)/golangci-lint run --allow-parallel-runners --config $(CURDIR)/hack/golangci.yml ./...) || exit 1; done
	@bad=$$(gofmt -l hack/bench hack/imagebuild hack/chartcheck hack/tools/certmanager); if [ -n "$$bad" ]; then echo "gofmt would change:"; echo "$$bad"; exit 1; fi
	@for m in hack/bench hack/imagebuild hack/chartcheck hack/tools/certmanager; do (cd $$m && GOWORK=off go vet ./... && GOWORK=off $(BIN)/golangci-lint run --allow-parallel-runners --config $(CURDIR)/hack/golangci.yml ./...) || exit 1; done
	@echo "lint: clean"

.PHONY: tidy
tidy: ## go mod tidy in every module, sync the workspace, then tidy again (sync can raise versions)
	@for m in $(MODULES) hack/tools hack/tools/kind hack/tools/kube hack/tools/prometheus hack/tools/metricsserver hack/tools/certmanager hack/chartcheck hack/bench; do (cd $$m && GOWORK=off go mod tidy); done
	go work sync
	@for m in $(MODULES) hack/chartcheck hack/bench; do (cd $$m && GOWORK=off go mod tidy); done

.PHONY: build
build: ## Build every service binary into .bin/ with version and commit
	@mkdir -p $(BIN)
	@for s in $(SERVICES); do CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/$$s ./services/$$s/cmd/$$s; done
	@echo "built: $(addprefix .bin/,$(SERVICES))"

.PHONY: build-modules
build-modules: ## Build each module on its own (GOWORK=off), as image builds do
	@for m in $(MODULES); do (cd $$m && GOWORK=off go build ./...) || exit 1; done
	@echo "every module builds on its own"

.PHONY: images
images: ## Build the five service images without Docker (hack/imagebuild: the Dockerfile's image) and push them to REGISTRY (default: the local cluster's), tagged with the version
	hack/push-images.sh

.PHONY: images-docker
images-docker: ## Build the container images with Docker from services/Dockerfile (REGISTRY, TAG, PUSH=1 with SBOM and provenance, PLATFORMS, DRY_RUN=1)
	hack/images.sh

.PHONY: release
release: ## On a clean checkout tagged v<VERSION>: make test (SKIP_TESTS=1 skips), multi-arch images with SBOM and provenance, chart packaged and pushed (DRY_RUN=1: checks and package only)
	.ci/release

.PHONY: cluster-up
cluster-up: ## A real Kubernetes cluster here, no Docker (root): control plane, kubelet, containerd, CoreDNS, NetworkPolicies, a registry; NODES=3 for three nodes (default 1); prints the kubeconfig (idempotent)
	CLUSTER_NODES=$(or $(NODES),1) hack/cluster/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and put the host back as cluster-up found it
	hack/cluster/down.sh

.PHONY: dev-local
dev-local: ## skaffold dev against the local cluster (make cluster-up): images built without Docker, pushed to its registry, the chart deployed and redeployed on every change
	hack/dev.sh --local

.PHONY: kind-up
kind-up: ## Create a local kind cluster with ingress (MONITORING=1 adds kube-prometheus-stack); needs Docker
	hack/kind-up.sh

.PHONY: dev
dev: ## skaffold dev against the kind cluster (build, deploy the chart, watch); needs Docker
	hack/dev.sh

.PHONY: kind-down
kind-down: ## Delete the local kind cluster
	hack/kind-down.sh

.PHONY: bench
bench: ## Load test (wrk, 64 connections) of the edge as deployed vs a minimal Gin handler: rps, p50, p99, RSS
	hack/bench/edge/run.sh

.PHONY: bench-events
bench-events: ## 10,000 subscribers of /api/events on one edge: its RSS, one change to all of them (p50, p99, max), CPU per delivered event, and the edge row of make bench with them connected vs without
	hack/bench/edge/events.sh

.PHONY: bench-redis
bench-redis: ## What each process costs its Redis: a real redis-server, the simulator, 3 collectors and 2 edges at default timings; commands/s per process with and without client traffic, bytes, RSS, Redis memory
	hack/bench/redisops/run.sh

.PHONY: bench-holders
bench-holders: ## Holders at 1M accounts: the enumeration, ours vs solana-go (wall time, accounts/s, peak RSS), then the live count under a stream of changes (latency, RSS, CPU, bytes a day)
	hack/bench/holders/run.sh

$(BIN)/golangci-lint: $(TOOLS_MOD)
	@mkdir -p $(BIN)
	cd hack/tools && GOWORK=off go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
