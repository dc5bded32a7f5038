#!/usr/bin/env bash
# Installs the providers' libraries (npm, versions pinned in package-lock.json) and rewrites
# harness/tests/vectors/signing.json (signatures the libraries make or accept) and
# harness/tests/vectors/verification.json (what the libraries accept when verifying) from them.
# `--check` compares instead of rewriting, and exits 1 when the libraries now disagree with either
# committed file. Exits 3 when npm or the libraries cannot be had.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
outdir="$root/harness/tests/vectors"
files=(signing.json verification.json)
command -v npm >/dev/null || { echo "npm is needed (Node.js 18 or later)" >&2; exit 3; }
if ! (cd "$here" && npm ci --silent --no-audit --no-fund >/dev/null 2>&1); then
  echo "could not install the providers' libraries from npm (npm ci in $here)" >&2
  exit 3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$here/produce.mjs" "$tmp"
if [ "${1:-}" = "--check" ]; then
  status=0
  for f in "${files[@]}"; do
    diff -u "$outdir/$f" "$tmp/$f" || status=1
  done
  if [ "$status" -eq 0 ]; then
    echo "signing vectors: the providers' libraries agree with $outdir/{$(IFS=,; echo "${files[*]}")}"
  fi
  exit "$status"
else
  mkdir -p "$outdir"
  for f in "${files[@]}"; do
    cp "$tmp/$f" "$outdir/$f"
    echo "wrote $outdir/$f"
  done
fi
