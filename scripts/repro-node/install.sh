#!/usr/bin/env bash
# Installs pg into node_modules here from npm, exactly as package-lock.json pins it, for the tests
# that run the Node scripts `hookbench repro --node` writes against Postgres (with
# NODE_PATH=scripts/repro-node/node_modules). Idempotent: skipped while node_modules/pg is the
# version the lock pins and nothing was locked since. Exits 3 when Node, npm or pg cannot be had.
set -euo pipefail
cd "$(dirname "$0")"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "$tool is needed for scripts/repro-node" >&2; exit 3; }
done
want=$(node -p "require('./package-lock.json').packages['node_modules/pg'].version")
have=$(node -p "try { require('./node_modules/pg/package.json').version } catch { '' }")
if [ "$have" != "$want" ] || [ ! -f node_modules/.repro-node-installed ] || [ package-lock.json -nt node_modules/.repro-node-installed ]; then
  npm ci --no-audit --no-fund --loglevel=error || { echo "could not install pg from npm (npm ci in $PWD)" >&2; exit 3; }
  touch node_modules/.repro-node-installed
fi
