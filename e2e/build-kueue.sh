#!/usr/bin/env bash
# Builds upstream Kueue's scheduler performance runner, minimalkueue, manager
# (cmd/kueue) and CLI (cmd/kueuectl, as kubectl-kueue: the calibration for the
# suite's Kueuectl spec) from the Go module pinned in e2e/tools/kueue/go.mod into the same
# cache as the control plane (e2e/build-binaries.sh), reusing it when complete.
# Also upstream's e2e suites (singlecluster and sequential, baseline and extended; tas/baseline;
# multikueue/baseline and sequential) as test
# binaries (go test -c; run by e2e/upstream_suite.py, unchanged). Only bench/ and that runner use these:
# nothing from upstream is committed.
# Prints the bin directory on stdout as its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(awk '$1=="require" && $2=="sigs.k8s.io/kueue" {print $3}' "$here/tools/kueue/go.mod")"
cache="${PYKUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pykueue}"
bin="$cache/kueue-$version/bin"
mkdir -p "$bin"

# Concurrent callers (make targets, the smoke test in a parallel pytest run) build once.
exec 9>"$bin/.lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "build-kueue: waiting for another build-kueue.sh to finish ..." >&2
  flock 9
fi

command -v go >/dev/null || { echo "build-kueue: step 'find go' failed: no Go toolchain on PATH" >&2; exit 1; }

stamp="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$version"

build() { # package output [test]: `go build`, or `go test -c` for a test package
  local pkg="$1" out="$2" cmd=(build) ldflags="-s -w $stamp"
  if [ "${3:-}" = test ]; then cmd=(test -c); ldflags="-s -w"; fi
  if [ -x "$bin/$out" ]; then
    echo "build-kueue: $out cached" >&2
    return
  fi
  local start=$SECONDS
  echo "build-kueue: building $out from $pkg@$version ..." >&2
  ( cd "$here/tools/kueue" &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go "${cmd[@]}" -trimpath -ldflags="$ldflags" -o "$bin/$out.tmp.$$" "$pkg" ) ||
    { rm -f "$bin/$out.tmp.$$"; echo "build-kueue: step 'build $out' failed" >&2; exit 1; }
  mv "$bin/$out.tmp.$$" "$bin/$out"
  echo "build-kueue: $out built in $((SECONDS - start))s" >&2
}

total=$SECONDS
build sigs.k8s.io/kueue/test/performance/scheduler/runner performance-scheduler-runner
build sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue minimalkueue
build sigs.k8s.io/kueue/cmd/kueue kueue-manager
build sigs.k8s.io/kueue/cmd/kueuectl kubectl-kueue
build sigs.k8s.io/kueue/test/e2e/singlecluster/baseline singlecluster-baseline.test test
build sigs.k8s.io/kueue/test/e2e/singlecluster/extended singlecluster-extended.test test
build sigs.k8s.io/kueue/test/e2e/sequential/baseline sequential-baseline.test test
build sigs.k8s.io/kueue/test/e2e/sequential/extended sequential-extended.test test
build sigs.k8s.io/kueue/test/e2e/tas/baseline tas-baseline.test test
build sigs.k8s.io/kueue/test/e2e/multikueue/baseline multikueue-baseline.test test
build sigs.k8s.io/kueue/test/e2e/multikueue/sequential multikueue-sequential.test test
echo "build-kueue: all binaries ready in $((SECONDS - total))s" >&2
echo "$bin"
