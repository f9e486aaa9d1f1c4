#!/usr/bin/env bash
# Build a Kubernetes component (kube-apiserver, kube-controller-manager)
# from the Go module proxy and cache it outside the repo, keyed by version,
# for the end-to-end tests against a real cluster (test/kubetest). A no-op
# when the cached binary exists. The last line on stdout is the binary's
# path. hack/kube-apiserver.sh and hack/kube-controller-manager.sh call it.
#
#   hack/kube-binary.sh COMPONENT [--path]
#
#   KUBE_VERSION        kubernetes version to build (default v1.32.4)
#   KUBE_BINARY_CACHE   path of the cached binary
#                       (default ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test/COMPONENT-$KUBE_VERSION)
#
#   --path              print the cached binary's path and exit (built or not)
#
# The build is a throwaway module in a temporary directory that requires
# k8s.io/kubernetes and replaces every staging module with its matching
# v0.x release (the kubernetes go.mod points them at ./staging, which the
# proxy does not have). About 5 minutes on 2 cores the first time (less for
# the second component: the build cache holds most of what they share).
set -euo pipefail

component="${1:?usage: hack/kube-binary.sh kube-apiserver|kube-controller-manager [--path]}"
case "$component" in
  kube-apiserver | kube-controller-manager) ;;
  *) echo "hack/kube-binary.sh: unknown component $component" >&2; exit 2 ;;
esac
version="${KUBE_VERSION:-v1.32.4}"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test"
out="${KUBE_BINARY_CACHE:-$cache_root/$component-$version}"
go="${GO:-go}"

if [ "${2:-}" = "--path" ]; then
  echo "$out"
  exit 0
fi

if [ -x "$out" ]; then
  echo "$out"
  exit 0
fi

# v1.32.4 -> v0.32.4 for the staging modules.
staging_version="v0.${version#v1.}"
staging=(
  api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
  cloud-provider cluster-bootstrap code-generator component-base
  component-helpers controller-manager cri-api cri-client csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
  kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver
)

mkdir -p "$(dirname "$out")"
work="$(mktemp -d "${TMPDIR:-/tmp}/kube-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "building $component $version into $out (takes a few minutes the first time)" >&2
{
  echo "module kubebuild"
  echo
  echo "go 1.23"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "replace ("
  for m in "${staging[@]}"; do
    echo "	k8s.io/$m => k8s.io/$m $staging_version"
  done
  echo ")"
} >"$work/go.mod"
cat >"$work/tools.go" <<GO
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/$component"
GO

(
  cd "$work"
  export GONOSUMDB=k8s.io GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}" GOWORK=off
  "$go" get "k8s.io/kubernetes/cmd/$component@$version" >&2
  # Stamp the version (as the Kubernetes build does) so /version tells it.
  minor="${version#v1.}"
  minor="${minor%%.*}"
  ldflags="-X k8s.io/component-base/version.gitVersion=$version"
  ldflags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
  "$go" build -trimpath -ldflags "$ldflags" -o "$work/$component" "k8s.io/kubernetes/cmd/$component" >&2
)
"$work/$component" --version >&2
# Atomic install: a half-written binary is never at the cache path.
mv -f "$work/$component" "$out.tmp.$$"
mv -f "$out.tmp.$$" "$out"
echo "$out"
