#!/usr/bin/env bash
# Installs psycopg2-binary (PyPI, pinned by requirements.txt) into .venv here, for receiver.py
# with a postgres:// --db (run it as .venv/bin/python receiver.py ...; a SQLite --db needs only
# the standard library). Idempotent: a venv whose packages already match is left as it is.
# Exits 3 when Python or the package cannot be had.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "python3 is needed for psycopg2" >&2; exit 3; }
if [ ! -x .venv/bin/python ]; then
  # A fresh Debian has python3 without its venv module.
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    ../../../scripts/apt-install.sh python3-venv || true
    "$python" -m venv .venv || { echo "could not make a venv in $PWD/.venv" >&2; exit 3; }
  fi
fi
if ! .venv/bin/pip freeze --quiet 2>/dev/null | sort | cmp -s - <(grep -v '^#' requirements.txt | sort); then
  if ! .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt; then
    echo "could not install psycopg2-binary from PyPI (pip install -r $PWD/requirements.txt)" >&2
    exit 3
  fi
fi
