#!/usr/bin/env bash
# Installs what receiver.py needs: the providers' libraries, pinned once for this receiver and for
# the signing vectors in scripts/provider-vectors (requirements.txt into its .venv, @linear/sdk
# into its node_modules). Run the receiver as scripts/provider-vectors/.venv/bin/python receiver.py.
# Idempotent. Exits 3 when Python, npm or a package cannot be had.
set -euo pipefail
exec "$(dirname "$0")/../../../scripts/provider-vectors/install.sh"
