#!/usr/bin/env bash
# Installs drf-stripe-subscription and its server into .venv here, from PyPI, pinned by
# requirements.txt. Idempotent: a venv whose packages already match is left as it is.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
if ! .venv/bin/pip freeze --quiet 2>/dev/null | sort | cmp -s - <(grep -v '^#' requirements.txt | sort); then
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt
fi
