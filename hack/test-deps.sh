#!/usr/bin/env bash
# Installs what `make test` needs and is missing, saying what it does:
# haproxy, etcd (etcd-server), wrk, ip (iproute2), openssl, patchelf, dot
# (graphviz, for the test that the diagrams in docs/ are current) and
# valgrind (router-bench's request-cost scenario, run small by its test) from
# Debian's packages, the cached kube-apiserver build (hack/kube-apiserver.sh:
# about 5 minutes on 2 cores the first time, a no-op afterwards), the cached
# kube-controller-manager build (hack/kube-controller-manager.sh: a few
# minutes more the first time) and the
# cached HAProxy 3.0 from Debian 13 for the second e2e run
# (hack/haproxy3.sh: a few seconds the first time, beside the system's
# haproxy). Needs root (or password-less sudo) only when a package is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A pkg=([haproxy]=haproxy [etcd]=etcd-server [wrk]=wrk [ip]=iproute2 [openssl]=openssl [patchelf]=patchelf [dot]=graphviz [valgrind]=valgrind)
need=()
for bin in haproxy etcd wrk ip openssl patchelf dot valgrind; do
  command -v "$bin" >/dev/null 2>&1 || need+=("${pkg[$bin]}")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "test-deps: missing ${need[*]}; installing them needs root: run 'sudo apt-get install -y ${need[*]}'" >&2
      exit 1
    fi
  fi
  echo "test-deps: installing ${need[*]} from Debian's packages (apt-get)" >&2
  began=$SECONDS
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  echo "test-deps: installed in $((SECONDS - began)) s" >&2
fi

kas_path=$(hack/kube-apiserver.sh --path)
if [ ! -x "$kas_path" ]; then
  echo "test-deps: building kube-apiserver for the Kubernetes end-to-end tests into $kas_path" >&2
  echo "test-deps: (the first time only: about 5 minutes on 2 cores; later runs reuse it)" >&2
fi
dep_log=$(mktemp)
trap 'rm -f "$dep_log"' EXIT
began=$SECONDS
if ! kas=$(hack/kube-apiserver.sh 2>"$dep_log" | tail -n 1); then
  cat "$dep_log" >&2
  echo "test-deps: building kube-apiserver failed" >&2
  exit 1
fi
if [ $((SECONDS - began)) -gt 2 ]; then
  echo "test-deps: built kube-apiserver in $((SECONDS - began)) s: $kas" >&2
fi
kcm_path=$(hack/kube-controller-manager.sh --path)
if [ ! -x "$kcm_path" ]; then
  echo "test-deps: building kube-controller-manager for the tests with Deployments and Pods into $kcm_path" >&2
  echo "test-deps: (the first time only: a few minutes, most of it shared with kube-apiserver's build)" >&2
fi
began=$SECONDS
if ! kcm=$(hack/kube-controller-manager.sh 2>"$dep_log" | tail -n 1); then
  cat "$dep_log" >&2
  echo "test-deps: building kube-controller-manager failed" >&2
  exit 1
fi
if [ $((SECONDS - began)) -gt 2 ]; then
  echo "test-deps: built kube-controller-manager in $((SECONDS - began)) s: $kcm" >&2
fi
if ! hack/haproxy3.sh --path >/dev/null; then
  echo "test-deps: installing Debian 13's HAProxy 3.0 beside the system's haproxy for the second e2e run (hack/haproxy3.sh)" >&2
fi
began=$SECONDS
if ! hap3=$(hack/haproxy3.sh 2>"$dep_log" | tail -n 1); then
  cat "$dep_log" >&2
  echo "test-deps: installing HAProxy 3.0 failed" >&2
  exit 1
fi
if [ $((SECONDS - began)) -gt 2 ]; then
  echo "test-deps: installed HAProxy 3.0 in $((SECONDS - began)) s: $hap3" >&2
fi
echo "test-deps: haproxy $(haproxy -v | sed -n '1s/^HAProxy version \([^ ]*\).*/\1/p'), $(etcd --version 2>/dev/null | sed -n 1p), $(go version | cut -d' ' -f3), kube-apiserver $kas, haproxy $("$hap3" -v | sed -n '1s/^HAProxy version \([^ ]*\).*/\1/p') for the second e2e run" >&2
