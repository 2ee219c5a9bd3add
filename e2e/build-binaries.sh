#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok) and helm (the e2e suite renders charts/pykueue)
# from the Go modules pinned in e2e/tools/*/go.mod into a cache outside the repository, and reuses the cache when it is complete.
# With --node it also builds what a real node runs (`make e2e-real`, e2e/node.py): kubelet and
# kube-proxy from the same k8s.io/kubernetes module, and the pod sandbox's pause. Each binary is
# checked on its own, so a cache made before --node existed gets just the missing ones.
# Prints the bin directory on stdout as its last line.
set -euo pipefail

node=false
case "${1:-}" in
  "") ;;
  --node) node=true ;;
  *) echo "usage: $0 [--node]" >&2; exit 2 ;;
esac

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
k8s_version="$(awk '$1=="k8s.io/kubernetes" {print $2; exit}' "$here/tools/k8s/go.mod")"
kwok_version="$(awk '$1=="require" && $2=="sigs.k8s.io/kwok" {print $3}' "$here/tools/kwok/go.mod")"
cache="${PYKUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pykueue}"
bin="$cache/k8s-$k8s_version-kwok-$kwok_version/bin"
mkdir -p "$bin"

command -v go >/dev/null || { echo "build-binaries: step 'find go' failed: no Go toolchain on PATH" >&2; exit 1; }

# Stamp the release into the binaries so `kubectl version` and the API's /version tell the truth.
minor="${k8s_version#v1.}"; minor="${minor%%.*}"
stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  stamp+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

build() { # module-dir package output
  local dir="$1" pkg="$2" out="$3"
  if [ -x "$bin/$out" ]; then
    echo "build-binaries: $out cached" >&2
    return
  fi
  local start=$SECONDS
  echo "build-binaries: building $out from $pkg ..." >&2
  ( cd "$here/tools/$dir" &&
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="-s -w$stamp" -o "$bin/$out.tmp" "$pkg" ) ||
    { echo "build-binaries: step 'build $out' failed" >&2; exit 1; }
  mv "$bin/$out.tmp" "$bin/$out"
  echo "build-binaries: $out built in $((SECONDS - start))s" >&2
}

total=$SECONDS
build k8s go.etcd.io/etcd/server/v3 etcd
build k8s k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver
build k8s k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager
build k8s k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler
build k8s k8s.io/kubernetes/cmd/kubectl kubectl
build kwok sigs.k8s.io/kwok/cmd/kwok kwok
build helm helm.sh/helm/v3/cmd/helm helm
if $node; then
  build k8s k8s.io/kubernetes/cmd/kubelet kubelet
  build k8s k8s.io/kubernetes/cmd/kube-proxy kube-proxy
  build pause . pause
fi
echo "build-binaries: all binaries ready in $((SECONDS - total))s" >&2
echo "$bin"
