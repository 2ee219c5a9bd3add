#!/usr/bin/env bash
# Builds cluster-autoscaler (with its kwok cloud provider, which makes kwok nodes from node templates) from
# the Go module proxy into the same cache as the control plane (e2e/build-binaries.sh), for the
# ProvisioningRequest e2e (e2e/autoscaler.py runs it on the local stack).
#
# Version: the cluster-autoscaler module has no semver tags (its releases are tagged
# cluster-autoscaler-1.X.Y), so it is fetched by the pseudo-version of a release commit. Of the release
# commits of 1.33 to 1.35 the proxy here serves only 1.33.0's (pseudo-versions are served only once
# someone asked for them), and the checksum database does not list it: its hash is pinned below and the
# download is checked against it. 1.33 runs against our 1.34 control plane (one minor of client skew,
# the ProvisioningRequest API autoscaling.x-k8s.io/v1 it serves is unchanged since).
#
# `go install pkg@version` refuses the module (its go.mod has replace directives), and its go.mod
# replaces k8s.io/autoscaler/cluster-autoscaler/apis with ./apis, a nested module the module zip leaves
# out. So it builds in a writable copy of the downloaded module whose apis replace points at the apis
# module from the proxy at the pseudo-version whose sources are 1.33.0's apis/ (only its go.mod differs);
# every other replace stays as the release has it. Built with the `kwok` tag, which links the kwok cloud
# provider alone (cloudprovider/builder/builder_kwok.go) instead of every cloud's SDK. The binary is named
# cluster-autoscaler-<version>: its presence is the stamp. The ProvisioningRequest CRD comes from the apis
# module (config/crd) and is copied beside it.
#
#   e2e/build-autoscaler.sh      # prints the CRD's path, then the binary's, as the last two lines of stdout
set -euo pipefail

module=k8s.io/autoscaler/cluster-autoscaler
release=1.33.0
version=v0.0.0-20250613073258-1959f5f61f6c # cluster-autoscaler-1.33.0
sum="h1:gGUthCoel/TlD1fh33foTFCs1n75w8sqmpD3qf2zqk4="
apis_module=k8s.io/autoscaler/cluster-autoscaler/apis
apis_version=v0.0.0-20240830133931-adfbe7e45277 # apis/ unchanged from here to 1.33.0 but for go.mod

cache="${PYKUEUE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pykueue}"
bin="$cache/autoscaler/bin"
out="$bin/cluster-autoscaler-$version"
mkdir -p "$bin"

command -v go >/dev/null || { echo "build-autoscaler: step 'find go' failed: no Go toolchain on PATH" >&2; exit 1; }

exec 9>"$bin/.lock"
if command -v flock >/dev/null && ! flock -n 9; then
  echo "build-autoscaler: waiting for another build-autoscaler.sh to finish ..." >&2
  flock 9
fi

download() { # module@version [extra env]: prints `Dir Sum` of the module in the module cache
  local json
  json="$(cd "$cache/autoscaler" && env GOFLAGS=-mod=mod "${@:2}" go mod download -json "$1")" ||
    { echo "build-autoscaler: step 'download $1' failed: $json" >&2; exit 1; }
  printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"\(Dir\|Sum\)": "\(.*\)",\{0,1\}$/\2/p' | paste -sd' '
}

crd="$bin/provisioningrequests-$apis_version.yaml"
if [ ! -f "$crd" ]; then
  info="$(download "$apis_module@$apis_version")"
  read -r apis_dir _ <<<"$info"
  cp "$apis_dir/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml" "$crd.tmp.$$" && mv "$crd.tmp.$$" "$crd"
fi
if [ -x "$out" ]; then
  echo "build-autoscaler: cluster-autoscaler $release cached" >&2
  printf '%s\n%s\n' "$crd" "$out"
  exit 0
fi

start=$SECONDS
echo "build-autoscaler: building cluster-autoscaler $release ($module@$version) ..." >&2
# Outside any module (the cache directory has no go.mod), so only the module itself is fetched.
info="$(download "$module@$version" GONOSUMDB="$module")"
read -r dir got <<<"$info"
[ "$got" = "$sum" ] || { echo "build-autoscaler: step 'verify $module@$version' failed: hash $got, pinned $sum" >&2; exit 1; }

src="$cache/autoscaler/src/cluster-autoscaler-$version"
rm -rf "$src"
mkdir -p "$(dirname "$src")"
cp -r "$dir" "$src"
chmod -R u+w "$src"
(cd "$src" && go mod edit -replace "$apis_module=$apis_module@$apis_version") ||
  { echo "build-autoscaler: step 'replace ./apis' failed" >&2; exit 1; }
if ! (cd "$src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -tags kwok -trimpath -ldflags="-s -w" -o "$out.tmp.$$" .); then
  rm -f "$out.tmp.$$"
  echo "build-autoscaler: step 'build cluster-autoscaler' failed" >&2
  exit 1
fi
mv "$out.tmp.$$" "$out"
rm -rf "$src" # 240 MB of every cloud's sources; the binary is what is kept
echo "build-autoscaler: cluster-autoscaler $release built in $((SECONDS - start))s" >&2
printf '%s\n%s\n' "$crd" "$out"
