#!/usr/bin/env bash
# Usage: scripts/python-venv.sh DIR WHAT
# Installs DIR/requirements.txt (PyPI, pinned exactly) into DIR/.venv, for the Python tools and
# examples that need packages (scripts/ci-readers, examples/receivers/balances); WHAT names them
# in messages. Idempotent: a venv whose packages already match is left as it is. Exits 3 when
# Python or a package cannot be had.
set -euo pipefail
dir=$1 what=$2
apt_install="$(cd "$(dirname "$0")" && pwd)/apt-install.sh"
cd "$dir"
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "python3 is needed for $what" >&2; exit 3; }
if [ ! -x .venv/bin/python ]; then
  # A fresh Debian has python3 without its venv module.
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    "$apt_install" python3-venv || true
    "$python" -m venv .venv || { echo "could not make a venv in $PWD/.venv" >&2; exit 3; }
  fi
fi
if ! .venv/bin/pip freeze --quiet 2>/dev/null | sort | cmp -s - <(grep -v '^#' requirements.txt | sort); then
  if ! .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt; then
    echo "could not install $what from PyPI (pip install -r $PWD/requirements.txt)" >&2
    exit 3
  fi
fi
