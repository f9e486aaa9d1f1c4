# openshift-router (Go reimplementation of OpenShift's HAProxy template router)

SHELL     := bash
BIN       ?= bin
GO        ?= go
DEMO_DIR  ?= /tmp/openshift-router-demo
HTTP_PORT ?= 8080
HTTPS_PORT?= 8443
STATS_PORT?= 1936
# apt-get runs through sudo unless make runs as root.
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all build test test-deps unit e2e e2e-haproxy3 vet fmt run haproxy kube-apiserver conformance conformance-check clean

all: build

# -buildvcs=true: the binary names its commit (`openshift-router version`)
# even where GOFLAGS says -buildvcs=false. Go stamps a checkout whose .git is
# a directory; a git worktree (.git is a file) builds without the stamp.
VCS_FLAG  ?= -buildvcs=true

build:
	$(GO) build $(VCS_FLAG) -o $(BIN)/openshift-router ./cmd/openshift-router
	$(GO) build -o $(BIN)/demo-backends ./cmd/demo-backends

# The README's test command: installs what is missing (hack/test-deps.sh:
# haproxy, etcd, wrk, iproute2, patchelf from Debian's packages, the cached
# kube-apiserver and kube-controller-manager builds and Debian 13's HAProxy 3.0 beside the system's
# haproxy), then static checks, unit tests, the end-to-end tests (real
# haproxy, real requests, real kube-apiserver + etcd) and the benchmark
# smoke test, then the core end-to-end tests again on HAProxy 3.0
# (CORE_E2E_TESTS, HAPROXY=...), then the Gateway API conformance run
# (conformance-check). Every test runs: a missing component is a
# failure, never a skip. Prints every skipped test and one
# "N passed, N failed, N skipped" for both runs (the second run's own counts
# on the line before); a failure in either fails it. The JSON of the runs:
# $(BIN)/test.json and $(BIN)/test-haproxy3.json.
test: test-deps vet
	@set -o pipefail; mkdir -p $(BIN); \
	kas="$$(hack/kube-apiserver.sh | tail -n 1)"; hap3="$$(hack/haproxy3.sh | tail -n 1)"; \
	[ -x "$$hap3" ] || { echo "make test: no HAProxy 3.0 (hack/haproxy3.sh)" >&2; exit 1; }; \
	hap3v="$$("$$hap3" -v | sed -n '1s/^HAProxy version \([^ -]*\).*/\1/p')"; \
	{ rc=0; \
	  KUBE_APISERVER="$$kas" $(GO) test -count=1 -timeout 30m -json $$($(GO) list ./... | grep -v /test/conformance) 2>&1 | tee $(BIN)/test.json || rc=1; \
	  echo "testsummary-run: core e2e on HAProxy $$hap3v"; \
	  KUBE_APISERVER="$$kas" HAPROXY="$$hap3" $(GO) test -count=1 -timeout 15m -json -run '$(CORE_E2E)' ./test/e2e/ 2>&1 \
	    | tee $(BIN)/test-haproxy3.json || rc=1; \
	  exit $$rc; } | $(GO) run ./hack/testsummary
	@$(MAKE) --no-print-directory conformance-check

# The Gateway API conformance run of `make test` (about 2 minutes): the
# core tests the router is known to fail skipped (test/conformance
# knownFailures, listed in the report), any other failure fails it; prints
# each profile's summary. Log: $(BIN)/conformance.log.
conformance-check:
	@set -o pipefail; mkdir -p $(BIN); \
	echo "conformance: the Gateway API's suite, GATEWAY-HTTP and GATEWAY-TLS (log: $(BIN)/conformance.log)"; \
	rc=0; KUBE_APISERVER="$$(hack/kube-apiserver.sh | tail -n 1)" \
	  KUBE_CONTROLLER_MANAGER="$$(hack/kube-controller-manager.sh | tail -n 1)" \
	  CONFORMANCE_SKIP_KNOWN_FAILURES=1 \
	  $(GO) test -count=1 -timeout 20m -v ./test/conformance/ -run TestGatewayAPIConformance > $(BIN)/conformance.log 2>&1 || rc=1; \
	awk '/^profiles:/{p=1;next} p && /^    (supportedFeatures|unsupportedFeatures):/{skip=1;next} p && skip && /^    - /{next} {skip=0} p' \
	  $(BIN)/conformance-report.yaml 2>/dev/null || true; \
	grep -E '^    --- FAIL' $(BIN)/conformance.log || true; \
	[ $$rc = 0 ] && echo "conformance: passed" || { echo "conformance: FAILED (see $(BIN)/conformance.log)"; exit 1; }

# The core end-to-end tests, run a second time on HAProxy 3.0 by `make test`
# and by `make e2e-haproxy3` (about 4 minutes): the haproxy under test runs
# every router and warns about none of our configurations; every route type
# and path routing; edits, refused configurations, reloads and reload
# scripts, restarts after a kill; endpoint and certificate changes through
# the runtime API without reloads, and the fallbacks to a reload; route
# changes under load; routes deleted and created again without a reload,
# and random route changes answered as a fresh start; old processes bounded by hard-stop-after; certificate
# forms, default certificates, client certificates and CRLs; per-route
# metrics from HAProxy's statistics; the sidecar mode (master CLI); routes
# and endpoint slices from a real API server; HTTPRoutes served next to
# Routes, changed without a reload, and their status.
CORE_E2E_TESTS = \
  TestRoutersRunTheHAProxyUnderTest \
  TestRouteTypesAnswerFromTheRightBackend TestPathBasedRoutingTable54 \
  TestInsecureEdgeTerminationPolicies TestAlternateBackendWeights TestAnnotations \
  TestOpenShiftStyleTemplateServesEveryRouteType TestH2CBackendReachedOverHTTP2 \
  TestRouteHeaderActionsReachBackendAndClient TestCheckDefaultTemplate TestEnvDefaults \
  TestEditingManifestsChangesRouting TestRefusedConfigKeepsServing TestReloadScriptIsCalled \
  TestHAProxyIsRestartedWhenItDies TestRoutesAddedOrRemovedAreSplicedAndReloaded \
  TestRouteUpdatesAreWorkedOutWithoutAFullRender \
  TestEndpointChangesNeedNoReload TestEndpointMovesLeaveNoConnectionToTheOldEndpoint \
  TestEndpointsBeyondThePoolAreAddedAtRuntime TestRuntimeAPIFailureFallsBackToReload \
  TestRoutesDeletedAndCreatedAgainNeedNoReload TestARouteOfAnotherNameTakesOverADeletedRoutesBackend \
  TestARouteOfANewNameWithTheDefaultStickyCookieNeedsNoReload \
  TestAReencryptRouteWithItsOwnDestinationCAIsAddedWithoutAReload TestAnnotationChangesThatRewriteABackendMoveItWithoutAReload \
  TestRandomRouteChangesServeWhatAFreshStartServes TestARouteTimeoutChangesWithoutAReload TestTheFirstRouteTimeoutReloadsOnce \
  TestARouteThatTakesOverABackendKeepsItsForwardedHeadersPolicy TestTheFirstRouteOfAnotherForwardedHeadersPolicyReloadsOnce \
  TestRequestsAreCleanedAsOpenShiftCleansThem TestRouteLookupIgnoresTheHostsPort TestRedirectToHTTPSKeepsThePathWhateverTheRequestsForm TestARouteAllowlistChangesWithoutAReload \
  TestARouteHSTSHeaderChangesWithoutAReload TestARouteRateLimitChangesWithoutAReload \
  TestRouteChangesUnderLoadLoseNoRequests TestHardStopAfterBoundsOldProcesses \
  TestCertificateChangesNeedNoReload TestACertificateTooLargeForTheRuntimeAPIIsReloaded \
  TestSanitisedCertificateFormsServeOverTLS TestDefaultCertificateSources \
  TestMutualTLSCRLsFromTheCADistributionPointsAndCAChanges \
  TestMetricsCountTrafficPerRoute TestSidecarModeServesAndReloadsThroughTheMasterSocket \
  TestKubeRouteLifecycle TestKubeEndpointSliceScalingNeedsNoReload \
  TestHTTPRouteServedNextToRoutes TestHTTPRouteChangesNeedNoReload TestKubeHTTPRouteServedWithStatus \
  TestHTTPSListenerServesTheGatewaysCertificate TestKubeHTTPSListenerSecretNeedsTheRoutersAccess \
  TestHTTPRouteHeaderModifiersReachBackendAndClient TestHTTPRouteWithoutHostnameServesEveryHost \
  TestHTTPRouteRewritesAndTimeouts TestHTTPRouteRegularExpressionsMatchWholeValues TestHTTPRouteRuleSpreadsOverMoreThanFourBackends TestHTTPRouteRetriesFailedRequests TestTLSRoutePassesTLSThrough TestKubeTLSRouteServedWithStatus \
  TestHTTPRouteRedirectsHTTPToHTTPS TestHTTPRouteCORSAnswersPreflightsAndMarksResponses
empty :=
space := $(empty) $(empty)
CORE_E2E = ^($(subst $(space),|,$(strip $(CORE_E2E_TESTS))))$$

test-deps:
	@hack/test-deps.sh

# The quick path: unit tests only (no end-to-end tests against the real
# router binary, no kube-apiserver tests, no benchmark smoke); tests that need
# haproxy run if it is installed and are skipped (and listed) if not.
unit: vet
	@set -o pipefail; mkdir -p $(BIN); \
	ROUTER_TEST_QUICK=1 $(GO) test -count=1 -json \
	  $$($(GO) list ./... | grep -v -e /test/e2e -e /test/kubetest -e /test/conformance -e /cmd/router-bench) 2>&1 | $(GO) run ./hack/testsummary

e2e:
	$(GO) test -count=1 -timeout 30m -v ./test/e2e/

# The Gateway API project's conformance suite (sigs.k8s.io/gateway-api/conformance,
# the version in go.mod), profile GATEWAY-HTTP, core features, against the
# router on a kubetest cluster (test/conformance), every core test (make
# test runs it with the known failures skipped: conformance-check). About
# 2 minutes. Report: $(BIN)/conformance-report.yaml (CONFORMANCE_REPORT);
# CONFORMANCE_ROUTER_BIN tests another router binary.
conformance: test-deps
	KUBE_APISERVER="$$(hack/kube-apiserver.sh | tail -n 1)" \
	  KUBE_CONTROLLER_MANAGER="$$(hack/kube-controller-manager.sh | tail -n 1)" \
	  $(GO) test -count=1 -timeout 80m -v ./test/conformance/ -run TestGatewayAPIConformance

# The core end-to-end tests on Debian 13's HAProxy 3.0 only (hack/haproxy3.sh
# installs it beside the system's haproxy the first time).
e2e-haproxy3: test-deps
	@set -o pipefail; mkdir -p $(BIN); \
	hap3="$$(hack/haproxy3.sh | tail -n 1)"; \
	[ -x "$$hap3" ] || { echo "make e2e-haproxy3: no HAProxy 3.0 (hack/haproxy3.sh)" >&2; exit 1; }; \
	KUBE_APISERVER="$$(hack/kube-apiserver.sh | tail -n 1)" HAPROXY="$$hap3" \
	  $(GO) test -count=1 -timeout 15m -json -run '$(CORE_E2E)' ./test/e2e/ 2>&1 | tee $(BIN)/test-haproxy3.json | $(GO) run ./hack/testsummary

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Install haproxy from Debian's packages if it is missing.
haproxy:
	@command -v haproxy >/dev/null 2>&1 || { \
	  echo "installing haproxy (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

# Build and cache kube-apiserver for the end-to-end tests against a real API
# server (test/kubetest); a no-op once cached (see hack/kube-apiserver.sh).
kube-apiserver:
	@hack/kube-apiserver.sh

# The demo: demo backends on loopback (ports 9001-9003, 9443, 9444) and the
# router on examples/, HAProxy's HTTP on $(HTTP_PORT) and HTTPS on
# $(HTTPS_PORT) (every interface), /metrics and /healthz without
# authentication on 127.0.0.1:$(STATS_PORT). Ctrl-C stops everything.
run: build haproxy
	@mkdir -p $(DEMO_DIR)
	@$(BIN)/demo-backends --tls-dir examples/tls & backends=$$!; \
	trap "kill $$backends 2>/dev/null" EXIT INT TERM; \
	ROUTER_SERVICE_HTTP_PORT=$(HTTP_PORT) ROUTER_SERVICE_HTTPS_PORT=$(HTTPS_PORT) RELOAD_INTERVAL=1s \
	  ROUTER_METRICS_TYPE=haproxy ROUTER_LISTEN_ADDR=127.0.0.1:$(STATS_PORT) ROUTER_GRACEFUL_SHUTDOWN_DELAY=0s \
	  $(BIN)/openshift-router --manifests examples --working-dir $(DEMO_DIR)

# Benchmarks (numbers in docs/performance.md): render + write of 1,000 / 10,000 /
# 50,000 routes, then the real router with real haproxy and wrk
# (cmd/router-bench): cold start of 1,000 and 10,000 routes, endpoint churn,
# route churn, memory at 10,000 routes, data plane 1 vs 10,000 routes, HAProxy's
# instructions per request (callgrind) at 10,000 Routes and HTTPRoutes.
# Takes a while: if endpoint changes reload, each churn change waits about
# RELOAD_INTERVAL (the phase stops after -phase-timeout, 20m, and says so).
# The result lines are printed, and
# appended as JSON to $(BENCH_JSON). bench-router runs only the
# router-bench part; BENCH_FLAGS adds flags to every run.
BENCH_JSON ?= $(BIN)/bench.json
ROUTER_BENCH = $(BIN)/router-bench -router $(BIN)/openshift-router -json $(BENCH_JSON) $(BENCH_FLAGS)

.PHONY: bench bench-router fuzz-tenants
# The tenant fuzzer's long run (templates/tenant_fuzz_test.go); its seed
# corpus runs with the unit tests.
FUZZTIME ?= 30m
FUZZPARALLEL ?= 2
fuzz-tenants: haproxy
	$(GO) test -run XXX -fuzz FuzzTenants -fuzztime $(FUZZTIME) -fuzzminimizetime 0 -parallel $(FUZZPARALLEL) ./templates/

bench:
	$(GO) test -run XXX -bench . -benchtime 3x ./router/pipeline/
	@$(MAKE) --no-print-directory bench-router

bench-router: haproxy
	@command -v wrk >/dev/null 2>&1 || { \
	  echo "installing wrk (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null; }
	@command -v valgrind >/dev/null 2>&1 || { \
	  echo "installing valgrind (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; }
	$(GO) build -o $(BIN)/openshift-router ./cmd/openshift-router
	$(GO) build -o $(BIN)/router-bench ./cmd/router-bench
	@rm -f $(BENCH_JSON)
	$(ROUTER_BENCH) -scenario cold-start -routes 1000
	$(ROUTER_BENCH) -scenario cold-start -routes 10000
	$(ROUTER_BENCH) -scenario churn -churn-routes 2000 -churn-changes 500
	$(ROUTER_BENCH) -scenario route-churn -route-churn-routes 2000 -route-changes 200
	$(ROUTER_BENCH) -scenario memory -routes 10000
	$(ROUTER_BENCH) -scenario dataplane -dataplane-routes 10000 -wrk-args "-t2 -c32 -d10s"
	$(ROUTER_BENCH) -scenario request-cost -dataplane-routes 10000 -kinds unsecured
	$(ROUTER_BENCH) -scenario request-cost -dataplane-routes 10000 -kinds httproute
	@echo "results (JSON lines): $(BENCH_JSON)"

# The pipeline diagram: docs/*.dot → docs/*.svg with Graphviz's dot
# (hack/diagrams; its test fails while an SVG is older than its source).
.PHONY: diagrams plots
diagrams:
	@command -v dot >/dev/null 2>&1 || { \
	  echo "installing graphviz (apt-get)"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; }
	$(GO) run ./hack/diagrams -dir docs

# The side-by-side benchmark's plots: docs/performance/*.svg from the JSON
# results committed beside them (hack/benchplot; its test fails while a plot
# differs from what the JSON gives). New results: run
# BenchmarkDataPlaneSideBySide with ROUTER_BENCH_SIDEBYSIDE_JSON=FILE, copy
# FILE over docs/performance/sidebyside.json, then make plots.
plots:
	$(GO) run ./hack/benchplot -in docs/performance/sidebyside.json -out docs/performance

clean:
	rm -rf $(BIN)
