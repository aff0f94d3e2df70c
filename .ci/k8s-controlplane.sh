#!/usr/bin/env bash
# Builds the Kubernetes control plane the `k8s run` tests start on loopback (internal/k8stest):
# kube-apiserver and kube-controller-manager of k8s.io/kubernetes VERSION, into a cache outside
# the clone keyed by version (~/.cache/llmbench/k8s/VERSION/bin), so a machine pays the build
# (~4-5 minutes on 2 cores) once. Installs Debian's etcd-server when etcd is missing. Prints the
# bin directory on its last line. Idempotent.
#
# The module zip of k8s.io/kubernetes has no staging/ directory, so its `./staging/...` replaces
# are pointed at the published k8s.io/* modules of the same release (v0.MINOR.PATCH).
set -euo pipefail
version="${1:-v1.37.2}"
cache="${LLMBENCH_K8S_CACHE:-$HOME/.cache/llmbench/k8s}/$version"
bin="$cache/bin"
sudo_=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo_="sudo -n"; fi
if ! command -v etcd >/dev/null 2>&1; then
  echo "== k8s: installing etcd-server" >&2
  { $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq etcd-server; } >/dev/null 2>&1 ||
    echo "!! k8s: apt-get install etcd-server failed" >&2
  # Debian starts the packaged etcd as a service on the default ports; the tests run their own.
  { $sudo_ systemctl stop etcd || $sudo_ service etcd stop || true; } >/dev/null 2>&1
fi
if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ]; then
  echo "$bin"
  exit 0
fi
echo "== k8s: building kube-apiserver and kube-controller-manager $version into $bin (once per machine)" >&2
staging="v0.${version#v1.}"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
rm -rf go.work go.work.sum vendor
sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+#\1\2 => \2 $staging#" go.mod
mkdir -p "$bin.tmp"
GOWORK=off GOFLAGS=-mod=mod go build -ldflags=-s -o "$bin.tmp/" ./cmd/kube-apiserver ./cmd/kube-controller-manager >&2
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "$bin"
