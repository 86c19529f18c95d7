# gpuheal — the two set-up commands on a fresh machine are `make demo` and
# `make test`; everything they need is installed or built from here.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
BIN      := $(CURDIR)/bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/gpuheal/gpuheal/internal/version.Version=$(VERSION)
PKGS     := ./...
# The agent links cgo (NVML) but only needs libc and libdl, which Go's own
# linker handles; with the external linker the agent pages in ~4 MiB more
# of its own binary (RssFile; docs/benchmarks.md, "agent RSS by linker").
AGENT_LINK := -linkmode=internal
export GPUHEAL_BIN_DIR := $(BIN)
# go-nvml's generated cgo wrappers call APIs NVIDIA marked deprecated; the
# warnings say nothing about our code and drown the build log.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: help
help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: controlplane
controlplane: ## build kube-apiserver, etcd and kwok from the Go module proxy into bin/ (once)
	./hack/build-controlplane.sh

.PHONY: build
build: ## build gpuheal, gpuheal-agent and gpuheal-controller into bin/
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/gpuheal ./cmd/gpuheal-controller
	$(GO) build -trimpath -ldflags '$(LDFLAGS) $(AGENT_LINK)' -o $(BIN)/ ./cmd/gpuheal-agent
	ln -sf gpuheal $(BIN)/kubectl-gpuheal

.PHONY: gpu-prebuilt
gpu-prebuilt: ## build the agent and the -tags gpu hardware test binary into .gpubin/ for a GPU machine without Go (hack/validate-gpu.sh)
	$(GO) build -trimpath -ldflags '$(LDFLAGS) $(AGENT_LINK)' -o .gpubin/ ./cmd/gpuheal-agent
	$(GO) test -c -tags gpu -ldflags='$(AGENT_LINK)' -o .gpubin/hardware.test ./test/hardware

.PHONY: fmt-check
fmt-check: ## fail when gofmt would change a file
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './hack/tools/*'))"; \
	if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## go vet, unit and integration files
	$(GO) vet -tags integration $(PKGS)

.PHONY: deps
deps: ## install what a fresh machine lacks (Debian packages, control plane)
	./hack/ensure-deps.sh
	./hack/ensure-dynalite.sh
	./hack/build-controlplane.sh
	./hack/build-helm.sh

# The unit tests without the race detector: the quick loop while editing.
# -vet=off: `make vet` runs every analyzer (go test's own subset would run
# again per test binary). The agent's link mode also links its packages'
# test binaries: the external linker took a quarter more CPU for them.
.PHONY: test-unit
test-unit: ## unit tests: no API server, kubelet or other outside part
	./hack/ensure-deps.sh
	$(GO) test -vet=off -ldflags='$(AGENT_LINK)' -count=1 $(PKGS)

# The same tests under the race detector, as `make test` and CI run them.
# The race runtime sleeps 1 s at exit by default, for goroutines still
# running to report; every test stops its goroutines before it ends, and the
# sleep would cost a second per package.
.PHONY: test-race
test-race: ## unit tests with -race (what make test runs)
	./hack/ensure-deps.sh
	GORACE=atexit_sleep_ms=0 $(GO) test -race -vet=off -ldflags='$(AGENT_LINK)' -count=1 $(PKGS)

# Only the packages that have integration tests: the others' tests ran in
# test-unit. Their scenarios wait mostly on real time (kwok's stages, the
# policies' durations), each on its own API server, so several run at once;
# the longest packages come first so that none starts last.
INTEGRATION_FIRST := ./test/soak ./test/e2e ./internal/remediation
INTEGRATION_PKGS = $(INTEGRATION_FIRST) $(filter-out $(INTEGRATION_FIRST),$(shell git ls-files '*_test.go' | xargs grep -l '^//go:build integration' | xargs -n1 dirname | sort -u | grep -v '^test/install$$' | sed 's|^|./|'))

.PHONY: test-integration
test-integration: deps ## tests against the real parts (API server + kwok, Prometheus, dynalite, chromium, built binaries), build tag integration
	$(GO) test -tags integration -vet=off -ldflags='$(AGENT_LINK)' -count=1 -p 3 -parallel 4 -timeout 30m $(INTEGRATION_PKGS)

.PHONY: test-install
test-install: deps ## the chart on a real kubelet with locally built images (needs root)
	$(GO) test -tags integration -count=1 -timeout 20m ./test/install/

# The install test runs last and alone: its image builds and kubelet load
# the machine, and the other suites' waits are on real time. (Running the
# race-detector unit tests beside the integration tests was slower:
# docs/benchmarks.md, "test suite wall time, third sitting".)
.PHONY: test
test: fmt-check test-race vet test-integration test-install ## all tests: gofmt, vet, unit (-race), integration, install

.PHONY: bench
bench: deps ## benchmarks (numbers go to docs/benchmarks.md); BENCH_AGENT_SECONDS=300
	$(GO) test -run '^$$' -bench . -skip 'XidToConditionFalse|RemediationFleet' -benchmem -count $${BENCH_COUNT:-3} $(PKGS)
	$(GO) test -run '^$$' -bench XidToConditionFalse -benchtime 1x -timeout 30m ./test/e2e/
	./hack/bench-diagnose.sh 1000000 0
	./hack/bench-agent.sh $${BENCH_AGENT_SECONDS:-300}

.PHONY: bench-e2e
bench-e2e: deps ## fleet benchmark: controller on the real API server + kwok, GPUHEAL_BENCH_NODES (default 5000) nodes
	$(GO) test -run '^$$' -bench RemediationFleet -benchtime 1x -timeout 60m ./test/e2e/

.PHONY: soak
soak: deps build ## long soak under chaos: NODES=200 DURATION=1h SPEED=1 (docs/reliability.md); COMPARE=1 for manual vs gpuheal, GATE_COMPARE=1 for the health gate off vs on, RESET_COMPARE=1 for reboot vs GPU reset
	$(BIN)/gpuheal soak --nodes $${NODES:-200} --duration $${DURATION:-1h} --speed $${SPEED:-1} \
		--work-dir $${SOAK_DIR:-$(CURDIR)/.soak} $${COMPARE:+--compare} $${GATE_COMPARE:+--gate-compare} $${RESET_COMPARE:+--reset-compare}

.PHONY: generate
generate: ## regenerate deep copies and CRD manifests with controller-gen (pinned in hack/tools/codegen)
	cd hack/tools/codegen && $(GO) build -o $(BIN)/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
	$(BIN)/controller-gen object paths=./api/... crd:crdVersions=v1 output:crd:artifacts:config=charts/gpuheal/crds

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 20s) each
	./hack/fuzz-all.sh $${FUZZTIME:-20s}

.PHONY: lint
lint: ## golangci-lint v2, pinned in hack/tools/lint
	cd hack/tools/lint && $(GO) build -o $(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint
	$(BIN)/golangci-lint run $(PKGS)

.PHONY: demo
demo: deps build ## the main job: a local GPU fleet that fails and heals itself (NODES=32 SPEED=1)
	$(BIN)/gpuheal demo --nodes $${NODES:-32} --speed $${SPEED:-1}

.PHONY: images
images: ## agent, controller and CLI images, offline, tarballs in bin/images/; ARCH=arm64 (or make images-arm64), docs/images.md
	VERSION='$(VERSION)' ./hack/build-images.sh $(ARCH)

.PHONY: images-arm64
images-arm64: ## the images for arm64 (GH200 nodes), cross-compiled
	VERSION='$(VERSION)' ./hack/build-images.sh arm64

.PHONY: dockerd-start
dockerd-start: ## start a dockerd for the image builds unless one answers (hack/dockerd.sh)
	./hack/dockerd.sh start

.PHONY: dockerd-stop
dockerd-stop: ## stop the dockerd that hack/dockerd.sh started
	./hack/dockerd.sh stop

.PHONY: clean
clean: ## remove built gpuheal binaries (keeps the control plane)
	rm -f $(BIN)/gpuheal $(BIN)/gpuheal-agent $(BIN)/gpuheal-controller $(BIN)/kubectl-gpuheal
