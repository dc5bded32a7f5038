#!/usr/bin/env bash
# Installs the providers' published schemas and types (npm, versions pinned in
# package-lock.json) for harness/tests/it/provider_bodies.rs: @octokit/webhooks-schemas (GitHub's
# payloads as JSON Schema), and shapes.json made from the `stripe` package's and
# @shopify/shopify-api's type declarations. Exits 3 when npm or the packages cannot be had; the
# tests then fail, naming this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# On Debian as root, npm comes from the distribution (bookworm's Node.js is 18), as the test
# script's other tools do; elsewhere it must be there already.
if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  "$here/../apt-install.sh" nodejs npm || true
fi
command -v npm >/dev/null || { echo "npm is needed (Node.js 18 or later)" >&2; exit 3; }
# Idempotent: node_modules installed from this very lockfile is left as it is (npm ci would
# remove it and install it again, 19 s here).
stamp="$here/node_modules/.installed-from-package-lock.json"
if ! cmp -s "$here/package-lock.json" "$stamp"; then
  if ! (cd "$here" && npm ci --silent --no-audit --no-fund >/dev/null 2>&1); then
    echo "could not install the providers' schemas from npm (npm ci in $here)" >&2
    exit 3
  fi
  cp "$here/package-lock.json" "$stamp"
fi
node "$here/shapes.mjs"
