#!/usr/bin/env bash
# Runs every Go fuzz target in the repository (each `func FuzzX(f *testing.F)` in a *_test.go
# file) for a short, bounded time, one after another, and fails on the first crash.
#
#   .ci/fuzz.sh                 # each target for $FUZZTIME (default 4s)
#   FUZZTIME=30s .ci/fuzz.sh    # longer
#   .ci/fuzz.sh ./traces        # only the targets under ./traces
#
# Each package's instrumented test binary is built once. A crashing input is saved under the
# package's testdata/fuzz/FuzzX/ (commit it with the fix: it then runs as a regular test
# case). One summary line per target; the total time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS=${GOFLAGS:--mod=mod}

fuzztime=${FUZZTIME:-4s}
# Targets whose every execution summarizes records (HdrHistograms: a few ms each, under the
# fuzzer's instrumentation more) reach only a handful of executions in a short run, most of it
# spent minimizing the first interesting inputs; they get $FUZZTIME_SLOW instead (measured on
# 2 cores: FuzzSummarize 6 executions in 2 s, about 1,500 in 12 s).
slow_targets=" FuzzSummarize FuzzParseSummary FuzzOpenFile "
slowtime=${FUZZTIME_SLOW:-12s}
# Per-target wall limit in seconds (a hung target is killed and counts as a failure).
limit=${FUZZ_TARGET_TIMEOUT:-180}
roots=("${@:-.}")

# "dir name" pairs, sorted, from every test file outside testdata, vendor and hidden folders.
mapfile -t targets < <(
  find "${roots[@]}" -name '*_test.go' -not -path '*/testdata/*' -not -path '*/vendor/*' -not -path '*/.*/*' -print0 |
    xargs -0 -r grep -H -o -E '^func Fuzz[A-Za-z0-9_]+\(' |
    sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#\1 \2#' |
    sort -u
)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets found under ${roots[*]}" >&2
  exit 1
fi

echo "fuzz: ${#targets[@]} targets, ${fuzztime} each (${slowtime} for${slow_targets% })"
start=$SECONDS
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
cache=$(go env GOCACHE)/fuzz
failed=0
built=""
for t in "${targets[@]}"; do
  dir=${t% *}
  name=${t#* }
  pkg=./${dir#./}
  bin=$bindir/$(echo "$pkg" | tr -c 'A-Za-z0-9\n' '_').test
  log=$bindir/log
  t0=$SECONDS
  # Build each package's instrumented test binary once (go test would relink it per target).
  if [ "$built" != "$pkg" ]; then
    if ! go test -c -fuzz=. -o "$bin" "$pkg" >"$log" 2>&1; then
      printf 'fuzz: FAIL  %-28s %-22s build failed\n' "$name" "$pkg"
      sed 's/^/    /' "$log"
      failed=1
      break
    fi
    built=$pkg
    importpath=$(go list "$pkg")
  fi
  # Run from the package directory like go test does, so that the seed corpus is found and a
  # crashing input lands in the package's testdata/fuzz/NAME/; -test.run '^$' skips the
  # ordinary tests.
  corpus=$dir/testdata/fuzz/$name
  tt=$fuzztime
  case "$slow_targets" in *" $name "*) tt=$slowtime ;; esac
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  if (cd "$dir" && timeout --kill-after=10 "$limit" "$bin" -test.run '^$' -test.fuzz "^${name}\$" \
    -test.fuzztime "$tt" -test.fuzzcachedir "$cache/$importpath") >"$log" 2>&1; then
    execs=$(grep -o -E 'execs: [0-9]+' "$log" | tail -1 | grep -o -E '[0-9]+' || echo "?")
    printf 'fuzz: ok    %-28s %-22s %3ds  %s execs\n' "$name" "$pkg" $((SECONDS - t0)) "$execs"
  else
    rc=$?
    after=$(ls "$corpus" 2>/dev/null | sort || true)
    # Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a failure
    # ("context deadline exceeded", go.dev/issue/75804). That is no crash: no input is saved.
    if [ "$before" = "$after" ] && grep -q -x -E '\s*context deadline exceeded' "$log" && ! grep -q -E 'panic:|Failing input' "$log"; then
      printf 'fuzz: ok    %-28s %-22s %3ds  (stopped by go.dev/issue/75804 at the deadline; no failing input)\n' "$name" "$pkg" $((SECONDS - t0))
      continue
    fi
    printf 'fuzz: FAIL  %-28s %-22s %3ds  exit %d\n' "$name" "$pkg" $((SECONDS - t0)) "$rc"
    grep -v -E '^\s+/|^runtime\.|^goroutine |^\s*$' "$log" | tail -n 40 | sed 's/^/    /'
    if [ "$before" != "$after" ]; then
      echo "    the failing input is under $corpus/ (git status shows the new file);"
      echo "    reproduce with: go test -run '^$name/' $pkg"
    fi
    failed=1
    break
  fi
done
echo "fuzz: done in $((SECONDS - start))s"
exit $failed
