#!/usr/bin/env bash
# Installs the providers' own webhook libraries here: the PyPI ones (pinned with their whole
# dependency closure in requirements.txt) into .venv, and @linear/sdk (pinned in package-lock.json)
# into node_modules with `npm ci`. verify.py, check.sh and examples/receivers/providers/receiver.py
# run on them (.venv/bin/python ...). Idempotent: a venv whose packages already match, and a
# node_modules that already holds the pinned @linear/sdk, are left as they are.
# Exits 3 when Python, npm or a package cannot be had.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/../python-venv.sh" "$here" "the providers' libraries (slack_sdk, twilio, squareup, paddle-python-sdk, sendgrid, PyNaCl)"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "node and npm are needed (Node.js 20.19 or later) for @linear/sdk" >&2
  exit 3
fi
want=$(node -e 'console.log(require(process.argv[1]).packages["node_modules/@linear/sdk"].version)' "$here/package-lock.json")
have=$(node -e 'try { console.log(require(process.argv[1]).version) } catch { console.log("") }' "$here/node_modules/@linear/sdk/package.json")
if [ "$want" != "$have" ]; then
  if ! (cd "$here" && npm ci --silent --no-audit --no-fund >/dev/null 2>&1); then
    echo "could not install @linear/sdk from npm (npm ci in $here)" >&2
    exit 3
  fi
fi
