#!/usr/bin/env bash
# Installs pytest (PyPI, pinned by requirements.txt) into .venv here, for the tests that run the
# pytest modules `hookbench repro --pytest` writes (harness/tests/it/repro.rs). Idempotent. Exits 3
# when Python or the packages cannot be had.
set -euo pipefail
here=$(dirname "$0")
exec "$here/../python-venv.sh" "$here" pytest
