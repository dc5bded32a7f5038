#!/usr/bin/env bash
# Installs psycopg2-binary (PyPI, pinned by requirements.txt) into .venv here, for receiver.py
# with a postgres:// --db (run it as .venv/bin/python receiver.py ...; a SQLite --db needs only
# the standard library). Idempotent: a venv whose packages already match is left as it is.
# Exits 3 when Python or the package cannot be had.
set -euo pipefail
here=$(dirname "$0")
exec "$here/../../../scripts/python-venv.sh" "$here" psycopg2-binary
