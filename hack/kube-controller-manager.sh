#!/usr/bin/env bash
# Build kube-controller-manager from the Go module proxy and cache it outside
# the repo, keyed by version, for the tests that need Deployments, ReplicaSets
# and EndpointSlices made for them (test/kubetest WithControllerManager: the
# Gateway API conformance suite's cluster): hack/kube-binary.sh
# kube-controller-manager. A no-op when the cached binary exists. The last
# line on stdout is the binary's path.
#
#   KUBE_VERSION                   kubernetes version to build (default v1.32.4)
#   KUBE_CONTROLLER_MANAGER_CACHE  path of the cached binary (default
#                                  ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test/kube-controller-manager-$KUBE_VERSION)
#
#   --path                         print the cached binary's path and exit (built or not)
set -euo pipefail
KUBE_BINARY_CACHE="${KUBE_CONTROLLER_MANAGER_CACHE:-}" exec "$(dirname "$0")/kube-binary.sh" kube-controller-manager "$@"
