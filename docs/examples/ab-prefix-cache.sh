#!/bin/bash
# Prefix-cache hits of arm A's two measured runs in an A/B of two reference engines, with
# identical prompts in every repeat (off) and with salted repeats (salt, the default): the
# figures of docs/ab-repeats.md, "Why repeats must not send the same prompts".
#
#   go build -o /tmp/llmbench ./cmd/llmbench && docs/examples/ab-prefix-cache.sh /tmp/llmbench
#
# It starts two engines on 127.0.0.1:19101 and :19102 (llmbench serve --time-scale 10), runs
# the A/B with --warmup-requests 0, and reads arm A's vllm:prefix_cache_{hits,queries}_total
# while arm B runs (after A's run 1) and at the end (after A's run 2).
set -euo pipefail
L=${1:-llmbench}
T=$(dirname "$0")/../../traces/examples/prefix-small.jsonl
out=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$out"' EXIT
counters() {
  curl -s "http://127.0.0.1:$1/metrics" |
    awk '/^vllm:prefix_cache_hits_total/{h=$2} /^vllm:prefix_cache_queries_total/{q=$2} END{printf "%d %d\n", h, q}'
}
for mode in off salt; do
  "$L" serve --addr 127.0.0.1:19101 --time-scale 10 >/dev/null 2>&1 &
  pa=$!
  "$L" serve --addr 127.0.0.1:19102 --time-scale 10 >/dev/null 2>&1 &
  pb=$!
  sleep 1
  "$L" ab --trace "$T" --a-endpoint http://127.0.0.1:19101 --b-endpoint http://127.0.0.1:19102 --runs 2 \
    --rate-scale 10 --warmup-requests 0 --independent-repeats "$mode" --out "$out/$mode" --no-progress \
    >"$out/$mode.out" 2>"$out/$mode.err" &
  p=$!
  mid=""
  while kill -0 "$p" 2>/dev/null; do
    if [ -z "$mid" ] && grep -q "arm B, run 2 of 2" "$out/$mode.err"; then mid=$(counters 19101); fi
    sleep 0.05
  done
  wait "$p"
  end=$(counters 19101)
  read -r h1 q1 <<<"$mid"
  read -r h q <<<"$end"
  echo "$mode: arm A run 1: $h1 of $q1 prompt tokens from the prefix cache; run 2: $((h - h1)) of $((q - q1))"
  kill "$pa" "$pb"
  wait "$pa" "$pb" 2>/dev/null || true
done
