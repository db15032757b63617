#!/usr/bin/env bash
# Installs what the full test suite needs on a fresh machine, idempotently:
# Debian's prometheus (+promtool), prometheus-alertmanager and etcd-server for
# the real-server tests (internal/lab), chromium for the war-room browser
# test, postgresql for the history store's tests (each test runs its own
# throwaway cluster), the pinned Go tools (tools/go.mod), and
# kube-apiserver + kwok built from Go modules (scripts/kube-apiserver.sh, cached under ~/.cache/rcamesh).
# gcc: cgo builds the tree-sitter grammars of SAST triage (internal/sast).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
for pair in prometheus:prometheus promtool:prometheus prometheus-alertmanager:prometheus-alertmanager etcd:etcd-server chromium:chromium gcc:gcc; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
# cgo links against the C library's headers and start files too.
if ! command -v gcc >/dev/null 2>&1 || [ ! -e /usr/include/stdlib.h ]; then
  need+=(gcc libc6-dev)
fi
# Debian keeps initdb and pg_ctl off PATH, under /usr/lib/postgresql/<version>/bin.
if ! command -v pg_ctl >/dev/null 2>&1 && ! compgen -G '/usr/lib/postgresql/*/bin/pg_ctl' >/dev/null; then
  need+=(postgresql)
fi
if ((${#need[@]})); then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u)
fi
GOWORK=off go -C tools mod download
scripts/kube-apiserver.sh >/dev/null
