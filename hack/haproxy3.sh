#!/usr/bin/env bash
# Install Debian 13 (trixie)'s HAProxy 3.0 LTS beside the system's haproxy,
# for the HAProxy 3.0 run of `make test` (HAPROXY=<path> go test ./test/e2e),
# and cache it outside the repo, keyed by version. A no-op when a cached copy
# exists. The last line on stdout is the binary's path.
#
# Nothing of the system changes: a separate apt configuration (its own
# sources list with trixie only, its own lists and cache, in a temporary
# directory) downloads haproxy and the trixie libraries it loads,
# `dpkg -x` unpacks them into one directory, and a copy of the binary is
# patched (patchelf) to start with trixie's dynamic loader and to find every
# library, and the libraries' own dependencies (--force-rpath), there.
# Needs dpkg, apt-get and patchelf (hack/test-deps.sh installs patchelf);
# not root.
#
#   HAPROXY3_CACHE_ROOT  where the copies go (default
#                        ${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test;
#                        the binary is <root>/haproxy-<version>/bin/haproxy)
#   HAPROXY3_MIRROR      the Debian mirror to download from (default: the
#                        first non-security one of the system's apt sources)
#
#   --path               print the cached binary's path and exit, or exit 1
#                        when there is none yet
set -euo pipefail

cache_root="${HAPROXY3_CACHE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/openshift-router-test}"
series=3.0

# The trixie packages to unpack: haproxy and the libraries it loads, with
# theirs (libc6 brings the dynamic loader).
packages=(
  haproxy libc6 libcrypt1 libjemalloc2 liblua5.4-0 libopentracing-c-wrapper0t64
  libopentracing1 libpcre2-8-0 libssl3t64 libstdc++6 libgcc-s1 zlib1g libzstd1
)

# cached prints the newest cached binary of the series that runs.
cached() {
  local bin
  for bin in $(ls -d "$cache_root"/haproxy-"$series".*/bin/haproxy 2>/dev/null | sort -rV); do
    # (grep reads all of -v's output: grep -q would end it early, and
    # pipefail would count haproxy's SIGPIPE.)
    if [ -x "$bin" ] && "$bin" -v 2>/dev/null | grep "^HAProxy version $series\." >/dev/null; then
      echo "$bin"
      return 0
    fi
  done
  return 1
}

if [ "${1:-}" = "--path" ]; then
  cached
  exit
fi
if bin=$(cached); then
  echo "$bin"
  exit 0
fi

case "$(dpkg --print-architecture)" in
  amd64) multiarch=x86_64-linux-gnu ld=ld-linux-x86-64.so.2 ;;
  arm64) multiarch=aarch64-linux-gnu ld=ld-linux-aarch64.so.1 ;;
  *) echo "haproxy3: no known dynamic loader for architecture $(dpkg --print-architecture)" >&2; exit 1 ;;
esac
for tool in apt-get dpkg patchelf; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "haproxy3: $tool is missing: hack/test-deps.sh installs it (apt-get install $tool)" >&2
    exit 1
  fi
done
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [ ! -r "$keyring" ]; then
  echo "haproxy3: $keyring is missing (apt-get install debian-archive-keyring)" >&2
  exit 1
fi

# system_mirror prints the first Debian mirror of the system's apt sources
# that is not the security archive (deb822 .sources files first, then
# one-line .list files).
system_mirror() {
  local f
  {
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -r "$f" ] && sed -n 's/^URIs:[[:space:]]*//p' "$f" | tr ' \t' '\n\n'
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -r "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]\+\).*/\2/p' "$f"
    done
  } | grep -E '^(https?|file)://' | grep -v -e '-security' -e '/security' | head -n 1
}
mirror="${HAPROXY3_MIRROR:-$(system_mirror || true)}"
if [ -z "$mirror" ]; then
  echo "haproxy3: no Debian mirror in the system's apt sources; set HAPROXY3_MIRROR" >&2
  exit 1
fi

mkdir -p "$cache_root"
# One install at a time; a second caller waits, then finds the copy.
exec 9>"$cache_root/.haproxy3.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
  if bin=$(cached); then
    echo "$bin"
    exit 0
  fi
fi

work="$(mktemp -d "$cache_root/.haproxy3-work.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/deb"
echo "deb [signed-by=$keyring] $mirror trixie main" >"$work/sources.list"
apt=(
  apt-get -q
  -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=-
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache"
  -o Acquire::Languages=none -o APT::Sandbox::User="$(id -un)"
)
began=$SECONDS
echo "haproxy3: downloading Debian 13's haproxy $series and its libraries from $mirror (trixie main)" >&2
"${apt[@]}" update >&2
(cd "$work/deb" && "${apt[@]}" download "${packages[@]}" >&2)

deb=$(ls "$work"/deb/haproxy_*.deb)
pkg_version=$(dpkg-deb -f "$deb" Version)        # e.g. 3.0.11-1+deb13u4
version=${pkg_version#*:}
version=${version%%-*}                             # 3.0.11
case "$version" in
  "$series".*) ;;
  *) echo "haproxy3: trixie has haproxy $pkg_version, not $series.x" >&2; exit 1 ;;
esac

dest="$cache_root/haproxy-$version"
root="$dest/root"
rm -rf "$dest"
mkdir -p "$root" "$dest/bin"
for d in "$work"/deb/*.deb; do
  dpkg -x "$d" "$root"
done
lib="$root/usr/lib/$multiarch"
if [ ! -e "$lib/$ld" ]; then
  echo "haproxy3: the unpacked libc6 has no $lib/$ld" >&2
  exit 1
fi
tmp="$dest/bin/haproxy.tmp"
cp "$root/usr/sbin/haproxy" "$tmp"
patchelf --set-interpreter "$lib/$ld" --force-rpath --set-rpath "$lib" "$tmp"

# Every library must come from the unpacked trixie tree: a library of the
# system's (older) release would break in ways that are hard to tell.
loaded=$(LD_TRACE_LOADED_OBJECTS=1 "$tmp")
if grep -q 'not found' <<<"$loaded"; then
  echo "haproxy3: libraries not found (add their packages to hack/haproxy3.sh):" >&2
  grep 'not found' <<<"$loaded" >&2
  exit 1
fi
if outside=$(grep '=>' <<<"$loaded" | grep -v "=> $lib/"); then
  echo "haproxy3: libraries loaded from outside $lib (add their packages to hack/haproxy3.sh):" >&2
  echo "$outside" >&2
  exit 1
fi
if ! "$tmp" -v | grep "^HAProxy version $version" >/dev/null; then
  echo "haproxy3: the patched binary does not run:" >&2
  "$tmp" -v >&2 || true
  exit 1
fi
mv -f "$tmp" "$dest/bin/haproxy"
echo "haproxy3: installed HAProxy $pkg_version in $((SECONDS - began)) s" >&2
echo "$dest/bin/haproxy"
