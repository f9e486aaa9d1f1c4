# openshift-router (Go reimplementation of OpenShift's HAProxy template router)

BIN       ?= bin
GO        ?= go
DEMO_DIR  ?= /tmp/openshift-router-demo
HTTP_PORT ?= 8080
HTTPS_PORT?= 8443

.PHONY: all build test unit e2e vet fmt run haproxy kube-apiserver clean

all: build

build:
	$(GO) build -o $(BIN)/openshift-router ./cmd/openshift-router
	$(GO) build -o $(BIN)/demo-backends ./cmd/demo-backends

# The README's test command: static checks, unit tests and the end-to-end
# tests (real haproxy, real requests).
test: vet
	$(GO) test -count=1 -timeout 30m ./...

unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/e2e)

e2e:
	$(GO) test -count=1 -timeout 30m -v ./test/e2e/

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# Install haproxy from Debian's packages if it is missing.
haproxy:
	@command -v haproxy >/dev/null 2>&1 || { \
	  echo "installing haproxy (apt-get)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }

# Build and cache kube-apiserver for the end-to-end tests against a real API
# server (test/kubetest); a no-op once cached (see hack/kube-apiserver.sh).
kube-apiserver:
	@hack/kube-apiserver.sh

# The demo: demo backends on loopback and the router on examples/, HTTP on
# $(HTTP_PORT) and HTTPS on $(HTTPS_PORT). Ctrl-C stops everything.
run: build haproxy
	@mkdir -p $(DEMO_DIR)
	@$(BIN)/demo-backends --tls-dir examples/tls & backends=$$!; \
	trap "kill $$backends 2>/dev/null" EXIT INT TERM; \
	ROUTER_SERVICE_HTTP_PORT=$(HTTP_PORT) ROUTER_SERVICE_HTTPS_PORT=$(HTTPS_PORT) RELOAD_INTERVAL=1s \
	  $(BIN)/openshift-router --manifests examples --working-dir $(DEMO_DIR)

# Benchmarks: render + write of 1,000 / 10,000 / 50,000 routes (numbers in README.md).
bench:
	$(GO) test -run XXX -bench . -benchtime 3x ./router/controller/

clean:
	rm -rf $(BIN)
