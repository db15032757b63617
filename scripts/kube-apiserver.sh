#!/usr/bin/env bash
# Builds kube-apiserver from the k8s.io/kubernetes Go module and installs
# sigs.k8s.io/kwok's kwok, both cached under $RCAMESH_CACHE (default
# $HOME/.cache/rcamesh), keyed by version: a second run is instant.
#
# k8s.io/kubernetes' go.mod requires its staging modules (k8s.io/api, ...) at
# v0.0.0 and replaces them with ./staging folders that are not in the module
# zip. A throwaway module outside the repo requires k8s.io/kubernetes and
# replaces every k8s.io/* v0.0.0 requirement with the published v0.<minor>.<patch>.
#
# Usage: scripts/kube-apiserver.sh [-print]   (-print: only print the bin dir)
# Output: the bin directory holding kube-apiserver and kwok (last line).
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"   # matches k8s.io/client-go v0.37.2 in go.mod
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE="${RCAMESH_CACHE:-$HOME/.cache/rcamesh}"
BIN="$CACHE/kube-$KUBE_VERSION-kwok-$KWOK_VERSION/bin"

if [[ "${1:-}" == "-print" ]]; then echo "$BIN"; exit 0; fi
mkdir -p "$BIN"
cd "$CACHE"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOWORK=off
export CGO_ENABLED=0

if [[ ! -x "$BIN/kube-apiserver" ]]; then
  start=$(date +%s)
  tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  staging="v0.${KUBE_VERSION#v1.}"          # v1.37.2 -> v0.37.2
  cd "$tmp"
  go mod init rcamesh.local/kubebuild >/dev/null 2>&1
  gomod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [[ -n "$gomod" ]] || { echo "kube-apiserver.sh: cannot download k8s.io/kubernetes@$KUBE_VERSION" >&2; exit 1; }
  {
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo "replace ("
    grep -E '^\s+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "$gomod" | awk -v v="$staging" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } >> go.mod
  go mod download k8s.io/kubernetes >/dev/null
  go get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" >/dev/null
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  vpkg=k8s.io/component-base/version
  go build -trimpath -o "$BIN/kube-apiserver.tmp" \
    -ldflags="-s -w -X $vpkg.gitVersion=$KUBE_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver
  mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
  echo "kube-apiserver.sh: built kube-apiserver $KUBE_VERSION in $(( $(date +%s) - start ))s" >&2
fi

if [[ ! -x "$BIN/kwok" ]]; then
  start=$(date +%s)
  GOBIN="$BIN" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  echo "kube-apiserver.sh: installed kwok $KWOK_VERSION in $(( $(date +%s) - start ))s" >&2
fi

# kwok needs Stage objects in its configuration (kwokctl normally supplies
# them): copy the upstream ones of the same version next to the binary.
STAGES="$BIN/../kwok-stages"
if [[ ! -f "$STAGES/pod-ready.yaml" ]]; then
  src="$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')/kustomize/stage"
  mkdir -p "$STAGES.tmp"
  cp "$src/node/fast/node-initialize.yaml" "$src/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
     "$src"/pod/fast/pod-{ready,complete,delete}.yaml "$STAGES.tmp/"
  chmod -R u+w "$STAGES.tmp"
  rm -rf "$STAGES" && mv "$STAGES.tmp" "$STAGES"
fi

echo "$BIN"
