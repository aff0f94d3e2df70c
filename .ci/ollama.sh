#!/usr/bin/env bash
# Builds Ollama, the real inference server the wire-claim tests start on loopback
# (internal/realserver, cmd/llmbench/realserver_test.go): `go install` of the module
# github.com/ollama/ollama at VERSION, with its CPU engine (llama.cpp and ggml, compiled by
# cgo), into a cache outside the clone keyed by version (~/.cache/llmbench/ollama/VERSION/bin),
# so a machine pays the build once: 6 CPU-minutes (31 minutes of wall time on a 2-core machine
# shared with other builds). Prints the bin directory on its last line. Idempotent.
#
# cgo needs g++ (installed from Debian when missing). v0.6.8's module zip carries the C++
# headers its engine includes (llama/llama.cpp/common/json.hpp, stb_image.h); later releases
# keep some under vendor/ directories, which module zips drop, and need them from Debian.
set -euo pipefail
version="${1:-v0.6.8}"
cache="${LLMBENCH_OLLAMA_CACHE:-$HOME/.cache/llmbench/ollama}/$version"
bin="$cache/bin"
if [ -x "$bin/ollama" ]; then
  echo "$bin"
  exit 0
fi
sudo_=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo_="sudo -n"; fi
if ! command -v g++ >/dev/null 2>&1; then
  echo "== ollama: installing g++ for cgo" >&2
  { $sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq g++; } >/dev/null 2>&1 ||
    echo "!! ollama: apt-get install g++ failed" >&2
fi
echo "== ollama: building $version into $bin (once per machine)" >&2
rm -rf "$bin.tmp"
mkdir -p "$bin.tmp"
# `go install pkg@version` builds outside this module: CI's GOFLAGS are not for it. The version
# is stamped as Ollama's own release builds do, so /api/version reports it.
GOFLAGS= GOWORK=off CGO_ENABLED=1 GOBIN="$bin.tmp" nice -n 19 go install -ldflags="-s -X github.com/ollama/ollama/version.Version=${version#v}" "github.com/ollama/ollama@$version" >&2
rm -rf "$bin" && mv "$bin.tmp" "$bin"
echo "$bin"
