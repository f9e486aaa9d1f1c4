#!/usr/bin/env bash
# Build kube-apiserver from the Go module proxy and cache it outside the repo,
# keyed by version, for the end-to-end tests against a real API server
# (test/kubetest): hack/kube-binary.sh kube-apiserver. A no-op when the
# cached binary exists. The last line on stdout is the binary's path.
#
#   KUBE_VERSION          kubernetes version to build (default v1.32.4)
#   KUBE_APISERVER_CACHE  path of the cached binary
#                         (default ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test/kube-apiserver-$KUBE_VERSION)
#
#   --path                print the cached binary's path and exit (built or not)
set -euo pipefail
KUBE_BINARY_CACHE="${KUBE_APISERVER_CACHE:-}" exec "$(dirname "$0")/kube-binary.sh" kube-apiserver "$@"
