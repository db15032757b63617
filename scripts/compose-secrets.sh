#!/usr/bin/env bash
# Creates the secrets docker-compose.yml mounts (once): the mesh key (read
# only by the nats-config and mesh-credentials jobs, which derive the NATS
# users and each service's own credentials from it) and an API tokens file
# with one admin token, printed once.
# Re-running keeps existing files. Needs openssl and sha256sum.
set -euo pipefail
dir=${RCAMESH_SECRETS_DIR:-deploy/secrets}
mkdir -p "$dir"
if [[ ! -s $dir/mesh.key ]]; then
  (umask 077 && openssl rand -hex 32 > "$dir/mesh.key")
  echo "created $dir/mesh.key"
fi
if [[ ! -s $dir/api-tokens ]]; then
  token="rcm_$(openssl rand -hex 32)"
  hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
  (umask 077 && printf '# name roles sha256:HEX (rcamesh token -name N -roles R prints a line)\nadmin admin sha256:%s\n' "$hash" > "$dir/api-tokens")
  echo "created $dir/api-tokens; the admin token (shown only now): $token"
fi
# The containers run as uid 65532 (distroless nonroot): let them read the files.
chmod 0644 "$dir/mesh.key" "$dir/api-tokens" 2>/dev/null || true
echo "compose secrets are in $dir (keep them out of version control)"
