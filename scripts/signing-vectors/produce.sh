#!/usr/bin/env bash
# Installs the providers' libraries (npm, versions pinned in package-lock.json) and rewrites
# harness/tests/vectors/signing.json from them. `--check` compares instead of rewriting, and exits 1
# when the libraries now disagree with the committed vectors. Exits 3 when npm or the libraries
# cannot be had.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out="$root/harness/tests/vectors/signing.json"
command -v npm >/dev/null || { echo "npm is needed (Node.js 18 or later)" >&2; exit 3; }
if ! (cd "$here" && npm ci --silent --no-audit --no-fund >/dev/null 2>&1); then
  echo "could not install the providers' libraries from npm (npm ci in $here)" >&2
  exit 3
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
node "$here/produce.mjs" > "$tmp"
if [ "${1:-}" = "--check" ]; then
  diff -u "$out" "$tmp" && echo "signing vectors: the providers' libraries agree with $out"
else
  mkdir -p "$(dirname "$out")"
  cp "$tmp" "$out"
  echo "wrote $out"
fi
