# Isobar's build. `make test` is the test command; `make verify` checks that
# generated files and formatting are current. Everything runs with the Go
# toolchain installed on the machine and tools pinned in hack/go.mod.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local
# vtprotobuf compiles in go-control-plane's generated marshalling, which
# stage two uses for routes (controller/pkg/xds/marshal.go).
export GOFLAGS := -buildvcs=false -tags=vtprotobuf

MODULES := api operator controller e2e hack
PACKAGES := $(foreach m,$(MODULES),./$(m)/...)
CONTROLLER_GEN := go tool controller-gen
# Extra `go test` flags, e.g. TESTFLAGS='-count=1 -run Validation'.
TESTFLAGS ?=

.PHONY: all
all: build

.PHONY: build
build: ## Build both binaries into bin/.
	go build -o bin/ isobar.dev/operator/cmd/isobar-operator isobar.dev/controller/cmd/isobar-controller

# The images' registry and path, and their tag (the release the binaries
# report). make images writes bin/images/NAME-VERSION.tar; make deploy
# builds them and applies config/default with them.
IMG_PREFIX ?= ghcr.io/isobar-dev
VERSION ?= v0.1.0

.PHONY: images
images: ## Build the operator and controller images as archives in bin/images (no container daemon).
	go run isobar.dev/hack/images -root . -prefix $(IMG_PREFIX) -version $(VERSION)

.PHONY: deploy
deploy: ## Build the images, then apply config/default with them (bin/deploy); load or push the images first (see docs/quickstart.md).
	go run isobar.dev/hack/images -root . -prefix $(IMG_PREFIX) -version $(VERSION) -deploy
	kubectl apply --server-side -k bin/deploy

.PHONY: generate
generate: ## Generate deepcopy functions.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: ## Generate the CRD YAML into config/crd/bases, the operator's RBAC into config/rbac, and Contour's CRDs (config/crd/contour, with their defaults for the offline loader).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=isobar-operator paths=./operator/... output:rbac:dir=config/rbac
	go run isobar.dev/hack/contourcrds -root .

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/.
	go run isobar.dev/hack/bundle -root .

.PHONY: bundle-image
bundle-image: ## Build the OLM bundle image, its CSV naming IMG_PREFIX's images, as bin/images/isobar-operator-bundle-VERSION.tar (no container daemon).
	go run isobar.dev/hack/images -root . -prefix $(IMG_PREFIX) -version $(VERSION) -bundle

.PHONY: docs
docs: manifests ## Generate docs/reference/contourdeployment.md and docs/features.md.
	go run isobar.dev/hack/docs -root .

.PHONY: demo
demo: ## Run Isobar on a local API server with config/samples and a simulated Envoy; Ctrl-C stops it.
	@mkdir -p $(HOME)/.cache/isobar
	go build -o $(HOME)/.cache/isobar/demo isobar.dev/hack/demo
	KUBEBUILDER_ASSETS="$$(bash hack/envtest/build.sh)" exec $(HOME)/.cache/isobar/demo $(DEMOFLAGS)

.PHONY: envtest
envtest: ## Build (once) the kube-apiserver, kube-controller-manager, etcd and kubectl the tests run.
	@bash hack/envtest/build.sh

.PHONY: test
# Each channel's conformance report and test list go to bin/conformance/,
# and are checked against the committed ones in conformance/reports/.
# The packages whose code runs goroutines or shares state between them (the
# xDS server, the serve loop and its watches, batching, draining, the fleet
# report, rollouts, the simulated data plane, the e2e harness): make test
# runs them with the race detector too.
RACE_PACKAGES := $(addprefix ./controller/pkg/,batch drain envoysim fleetreport programmed resources serve xdsserver) \
	./controller/cmd/isobar-controller ./operator/pkg/rollout ./e2e/harness ./e2e/dataplane

test: ## Unit and envtest tests against a real kube-apiserver built from Go modules, the concurrent packages with -race; e2e, with every test of the official conformance suite's profiles, on both Gateway API channels.
	KUBEBUILDER_ASSETS="$$(bash hack/envtest/build.sh)" go test -race -timeout 15m $(TESTFLAGS) $(RACE_PACKAGES)
	KUBEBUILDER_ASSETS="$$(bash hack/envtest/build.sh)" ISOBAR_CONFORMANCE_REPORTS=$(CURDIR)/bin/conformance go test -timeout 30m $(TESTFLAGS) $(PACKAGES)
	KUBEBUILDER_ASSETS="$$(bash hack/envtest/build.sh)" ISOBAR_CONFORMANCE_REPORTS=$(CURDIR)/bin/conformance ISOBAR_GATEWAY_API_CHANNEL=experimental go test -timeout 30m $(TESTFLAGS) ./e2e/...

# The official Gateway API conformance suite, every test of the profiles we
# implement, on both channels; the reports and test lists it writes to
# conformance/reports/ are the ones `make test` checks its runs against.
REPORTS := $(CURDIR)/conformance/reports

.PHONY: conformance
conformance: ## Run the Gateway API conformance suite (every test of our profiles) on both channels; reports, test lists and logs in conformance/reports/.
	mkdir -p $(REPORTS)
	status=0; for channel in standard experimental; do \
	  echo "--- conformance, $$channel channel (log: $(REPORTS)/$$channel-all.log)"; \
	  KUBEBUILDER_ASSETS="$$(bash hack/envtest/build.sh)" ISOBAR_GATEWAY_API_CHANNEL=$$channel ISOBAR_CONFORMANCE=all \
	    ISOBAR_CONFORMANCE_REPORTS=$(REPORTS) go test -count=1 -timeout 60m -run '^TestConformance$$' -v ./e2e/conformance \
	    > $(REPORTS)/$$channel-all.log 2>&1 || status=1; \
	  grep -aE '^    --- (PASS|FAIL|SKIP)' $(REPORTS)/$$channel-all.log || true; \
	  sed -n '/conformance (all/,/test list written/p' $(REPORTS)/$$channel-all.log; \
	done; exit $$status

# Coverage-guided fuzzing: every fuzz target of the repository in turn,
# FUZZTIME each. A new interesting input is minimized for at most
# FUZZMINIMIZETIME, so that large YAML inputs do not take the time that
# should go to fuzzing. New inputs go to Go's fuzz cache; a failing one
# is written to the package's testdata/fuzz for a regression test.
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 2s

.PHONY: fuzz
fuzz: ## Run every fuzz target coverage-guided, FUZZTIME (60s) each.
	@for dir in $$(grep -rl --include='*_test.go' '^func Fuzz' $(MODULES) | xargs -n1 dirname | sort -u); do \
	  for target in $$(grep -h '^func Fuzz' $$dir/*_test.go | sed 's/^func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "--- ./$$dir $$target"; \
	    go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) ./$$dir || exit 1; \
	  done; \
	done

.PHONY: vet
vet:
	go vet $(PACKAGES)

# golangci-lint is built from hack/lint's module, pinned there and kept
# apart from ours so that its dependencies do not move our modules'.
GOLANGCI_LINT := bin/golangci-lint

$(GOLANGCI_LINT): hack/lint/go.mod hack/lint/go.sum
	cd hack/lint && GOWORK=off go build -o ../../$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml.
	$(GOLANGCI_LINT) run --allow-parallel-runners $(PACKAGES)

BENCH_ROUTES ?= 10000
BENCHCOUNT ?= 6

.PHONY: bench
bench: ## Run the translation benchmarks at BENCH_ROUTES (10000) routes, BENCHCOUNT (6) times.
	ISOBAR_BENCH_ROUTES=$(BENCH_ROUTES) go test ./controller/pkg/offline -run '^$$' -bench '^BenchmarkTranslate$$/.*/check=false' -count $(BENCHCOUNT)
	ISOBAR_BENCH_ROUTES=$(BENCH_ROUTES) go test ./controller/pkg/offline -run '^$$' -bench '^BenchmarkOneRouteChange$$' -count $(BENCHCOUNT)

.PHONY: verify
verify: ## Fail when generated files are stale, code is unformatted or vet complains.
	bash hack/verify.sh

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'
