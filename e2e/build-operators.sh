#!/usr/bin/env bash
# Builds the external operators upstream Kueue's extended e2e suites need (JobSet, LeaderWorkerSet,
# AppWrapper, Kubeflow Trainer, the Kubeflow training-operator, the MPI operator, KubeRay) at the versions upstream Kueue's own go.mod pins (as upstream's
# hack/make/deps.mk reads them), and the Prometheus operator with its config reloader (the sidecar it adds to
# Prometheus pods) at the version upstream's hack/make/test.mk pins (PROMETHEUS_OPERATOR_VERSION) and Prometheus
# at the version that operator's go.mod requires (its default Prometheus), from the Go module proxy, into the same cache as the control plane
# (e2e/build-binaries.sh). Each builds in a module of its own made in the cache, whose go.mod requires
# just that operator at that version: its build list is the operator's own go.mod, as its release's.
# (`go install pkg@version` would do the same, but it first asks the proxy for the module's version
# list, which the proxy here refuses for some of these modules.) A binary is named
# <operator>-<version>: its presence is the stamp, so a warm cache costs one `go list`.
# e2e/operators.py runs them on the local stack.
#
#   e2e/build-operators.sh [NAME...]     # default: the first seven; NAME in jobset lws appwrapper trainer
#                                        # training-operator mpi-operator kuberay prometheus-operator
#                                        # prometheus-config-reloader prometheus
# Prints the bin directory on stdout as its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${PYKUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pykueue}"
bin="$cache/operators/bin"
mkdir -p "$bin"

command -v go >/dev/null || { echo "build-operators: step 'find go' failed: no Go toolchain on PATH" >&2; exit 1; }

# name  module  main package (inside the module)  where upstream pins its version: go.mod, a
# variable of hack/make/test.mk (the e2e targets' operators that are no Go dependency of Kueue), or
# prometheus-operator: the go.mod of the Prometheus operator at its pinned version
operators="
jobset                     sigs.k8s.io/jobset                               .                             go.mod
lws                        sigs.k8s.io/lws                                  cmd                           go.mod
appwrapper                 github.com/project-codeflare/appwrapper          cmd                           go.mod
trainer                    github.com/kubeflow/trainer/v2                   cmd/trainer-controller-manager go.mod
training-operator          github.com/kubeflow/training-operator            cmd/training-operator.v1      go.mod
mpi-operator               github.com/kubeflow/mpi-operator                 cmd/mpi-operator              go.mod
kuberay                    github.com/ray-project/kuberay/ray-operator      .                             go.mod
prometheus-operator        github.com/prometheus-operator/prometheus-operator cmd/operator                PROMETHEUS_OPERATOR_VERSION
prometheus-config-reloader github.com/prometheus-operator/prometheus-operator cmd/prometheus-config-reloader PROMETHEUS_OPERATOR_VERSION
prometheus                 github.com/prometheus/prometheus                 cmd/prometheus                prometheus-operator
"

# go.sum lines for modules the checksum database does not answer for (sum.golang.org has no entry for
# github.com/prometheus-operator/prometheus-operator/pkg/client v0.89.0, which the operator's release
# replaces with its own subdirectory): each wrapper's go.sum starts with them, so go checks the proxy's
# download against them instead of asking the database. Checked on 2026-11-28: the zip's files are those
# of the project's tag pkg/client/v0.89.0 (commit e13fb157, also v0.89.0), plus the root LICENSE go adds.
pinned_sums="\
github.com/prometheus-operator/prometheus-operator/pkg/client v0.89.0 h1:1vM3LYUbixaCObAhWj2JaDXVgq13laYGLVncKCQPjn4=
github.com/prometheus-operator/prometheus-operator/pkg/client v0.89.0/go.mod h1:SdM9A8pyN23e5KAPumIqCPjCG075srdLJCemqr3bV6w=
"

wanted=("$@")
if [ ${#wanted[@]} -eq 0 ]; then
  wanted=(jobset lws appwrapper trainer training-operator mpi-operator kuberay)
fi

exec 9>"$bin/.lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "build-operators: waiting for another build-operators.sh to finish ..." >&2
  flock 9
fi

# `go mod download` (not `go list -m`, which names no directory while the module is not yet in a fresh
# module cache) fetches upstream Kueue's module if needed and says where it is.
kueue_dir="$(cd "$here/tools/kueue" && GOFLAGS=-mod=mod go mod download -json sigs.k8s.io/kueue |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')" && [ -n "$kueue_dir" ] ||
  { echo "build-operators: step 'find upstream kueue module' failed" >&2; exit 1; }
kueue_go_mod="$kueue_dir/go.mod"
kueue_test_mk="$kueue_dir/hack/make/test.mk"

total=$SECONDS
for name in "${wanted[@]}"; do
  read -r _ module pkg pin < <(awk -v n="$name" '$1==n' <<<"$operators") ||
    { echo "build-operators: unknown operator '$name'" >&2; exit 2; }
  if [ "$pin" = go.mod ]; then
    pinned_in="$kueue_go_mod"
    version="$(awk -v m="$module" '$1==m {print $2; exit}' "$kueue_go_mod")"
  elif [ "$pin" = prometheus-operator ]; then
    op_version="$(awk '$1=="PROMETHEUS_OPERATOR_VERSION" && $2=="?=" {print $3; exit}' "$kueue_test_mk")"
    pinned_in="$(GOFLAGS= go mod download -json "github.com/prometheus-operator/prometheus-operator@$op_version" |
      sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
    version="$(awk -v m="$module" '$1==m {print $2; exit}' "$pinned_in")"
  else  # `NAME ?= vX.Y.Z` in test.mk
    pinned_in="$kueue_test_mk"
    version="$(awk -v v="$pin" '$1==v && $2=="?=" {print $3; exit}' "$kueue_test_mk")"
  fi
  [ -n "$version" ] || { echo "build-operators: step 'read $module version' failed: not in $pinned_in" >&2; exit 1; }
  out="$name-$version"
  if [ -x "$bin/$out" ]; then
    echo "build-operators: $out cached" >&2
    continue
  fi
  start=$SECONDS
  target="$module"
  [ "$pkg" = . ] || target="$module/$pkg"
  echo "build-operators: building $out from $target@$version ..." >&2
  wrapper="$cache/operators/src/$name-$version"
  mkdir -p "$wrapper"
  printf 'module pykueue.local/e2e/operators/%s\n\ngo 1.26\n\nrequire %s %s\n' "$name" "$module" "$version" >"$wrapper/go.mod"
  printf '%s' "$pinned_sums" >"$wrapper/go.sum"
  if ! ( cd "$wrapper" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$bin/$out.tmp.$$" "$target" ); then
    rm -f "$bin/$out.tmp.$$"
    echo "build-operators: step 'build $out' failed" >&2
    exit 1
  fi
  mv "$bin/$out.tmp.$$" "$bin/$out"
  echo "build-operators: $out built in $((SECONDS - start))s" >&2
done
echo "build-operators: ${wanted[*]} ready in $((SECONDS - total))s" >&2
echo "$bin"
