#!/usr/bin/env bash
# The Secrets the Helm chart (deploy/helm/rcamesh) and the NATS it runs on
# reference, printed as YAML for `kubectl apply` (nothing is committed):
#
#   scripts/k8s-secrets.sh [release] | kubectl apply -n rcamesh -f -
#
#   <fullname>-mesh-<svc>   key mesh.cred: the credentials of one service only
#                           (`rcamesh mesh-credentials -per-service`), for
#                           router, tools, critic, brain, delivery, gateway
#   <fullname>-api-tokens   key api-tokens: the -auth.tokens-file (hashes only)
#   rcamesh-nats-auth       key auth.conf: the NATS users and permissions
#                           (`rcamesh nats-config -authorization-only`), which
#                           the NATS chart's config includes
#
# <fullname> is the release name if it contains "rcamesh", else
# <release>-rcamesh (the chart's rule); release defaults to rcamesh. The mesh
# key and the tokens file stay in $RCAMESH_SECRETS_DIR (default
# deploy/secrets, git-ignored; created by scripts/compose-secrets.sh, which
# prints a new admin token once, on stderr here). Re-running issues the same
# credentials from the same key. $RCAMESH is the rcamesh binary (default:
# rcamesh on PATH, else bin/rcamesh). Needs openssl, sha256sum, base64.
set -euo pipefail
release=${1:-rcamesh}
if [[ $release == *rcamesh* ]]; then fullname=$release; else fullname=$release-rcamesh; fi
dir=${RCAMESH_SECRETS_DIR:-deploy/secrets}
rcamesh=${RCAMESH:-$(command -v rcamesh || echo bin/rcamesh)}
here=$(cd "$(dirname "$0")" && pwd)
RCAMESH_SECRETS_DIR=$dir "$here/compose-secrets.sh" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
services=(router tools critic brain delivery gateway)
"$rcamesh" mesh-credentials -mesh.key-file="$dir/mesh.key" -per-service -out="$work/creds" \
  -targets="$(IFS=,; echo "${services[*]}")" >&2
"$rcamesh" nats-config -mesh.key-file="$dir/mesh.key" -authorization-only -out="$work/auth.conf"

secret() { # name key file
  cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: $1
  labels:
    app.kubernetes.io/name: rcamesh
    app.kubernetes.io/instance: $release
type: Opaque
data:
  $2: $(base64 -w0 < "$3")
YAML
}
for s in "${services[@]}"; do
  secret "$fullname-mesh-$s" mesh.cred "$work/creds/$s/mesh.cred"
done
secret "$fullname-api-tokens" api-tokens "$dir/api-tokens"
secret rcamesh-nats-auth auth.conf "$work/auth.conf"
