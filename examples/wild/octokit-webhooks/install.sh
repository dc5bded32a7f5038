#!/usr/bin/env bash
# Installs @octokit/webhooks and pg into node_modules here from npm, exactly as
# package-lock.json pins them. Idempotent: skipped while node_modules is newer than the lock.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -f node_modules/.wild-installed ] || [ package-lock.json -nt node_modules/.wild-installed ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules/.wild-installed
fi
