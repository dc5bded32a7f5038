#!/usr/bin/env bash
# Installs drf-stripe-subscription and its server into .venv here, from PyPI, pinned by
# requirements.txt. Idempotent: a venv whose packages already match is left as it is.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  # A fresh Debian has python3 without its venv module (as scripts/k8s-validate.sh finds).
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    ../../../scripts/apt-install.sh python3-venv
    "$python" -m venv .venv
  fi
fi
if ! .venv/bin/pip freeze --quiet 2>/dev/null | sort | cmp -s - <(grep -v '^#' requirements.txt | sort); then
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt
fi
