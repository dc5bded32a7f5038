#!/usr/bin/env bash
# Validates deploy/k8s offline: builds each overlay with kubectl's own Kustomize, checks every
# resource against the Kubernetes API schemas (kubernetes-validate from PyPI, strict: an unknown
# field fails), and the rest with deploy/k8s/check/check.py (our Cluster against the fields of
# CloudNativePG's we use; the shards' Job against SHARDS). No cluster is needed or contacted.
# Installs kubectl (Debian) and a virtualenv with kubernetes-validate when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
KUBERNETES_VALIDATE_VERSION=1.37.0
if ! command -v kubectl >/dev/null 2>&1; then
  ./scripts/apt-install.sh kubectl
fi
venv="${XDG_CACHE_HOME:-$HOME/.cache}/hookbench/k8s-validate"
if ! "$venv/bin/kubernetes-validate" --version 2>/dev/null | grep -q "$KUBERNETES_VALIDATE_VERSION"; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    ./scripts/apt-install.sh python3-venv
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
built=$(mktemp -d)
trap 'rm -rf "$built"' EXIT
status=0
for overlay in deploy/k8s/overlays/*/; do
  name=$(basename "$overlay")
  kubectl kustomize "$overlay" > "$built/$name.yaml"
  # Strict: unknown fields fail. It only warns about kinds it has no schema for (the CNPG
  # Cluster), which check.py then holds to ours.
  if ! "$venv/bin/kubernetes-validate" --strict --quiet "$built/$name.yaml"; then
    status=1
  fi
  if ! "$venv/bin/python" deploy/k8s/check/check.py < "$built/$name.yaml"; then
    status=1
  fi
  echo "k8s-validate: overlays/$name: $(grep -c '^kind:' "$built/$name.yaml") resources built and checked"
done
exit "$status"
