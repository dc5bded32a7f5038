#!/usr/bin/env bash
# Installs the readers of what hookbench writes for a CI (PyPI, pinned by requirements.txt) into
# .venv here: junitparser, which reads the tests' --junit files as a CI's test reporter does
# (read_junit.py), and cmarkgfm, GitHub's Markdown renderer, which renders the step summary as a
# job's summary page shows it (render_markdown.py). Used by harness/tests/it/junit.rs and
# ci_outputs.rs. Idempotent: a venv whose packages already match is left as it is. Exits 3 when
# Python or a package cannot be had; the tests then fail, naming this script.
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
command -v "$python" >/dev/null || { echo "python3 is needed for the CI readers" >&2; exit 3; }
if [ ! -x .venv/bin/python ]; then
  # A fresh Debian has python3 without its venv module.
  if ! "$python" -m venv .venv >/dev/null 2>&1; then
    rm -rf .venv
    ../apt-install.sh python3-venv || true
    "$python" -m venv .venv || { echo "could not make a venv in $PWD/.venv" >&2; exit 3; }
  fi
fi
if ! .venv/bin/pip freeze --quiet 2>/dev/null | sort | cmp -s - <(grep -v '^#' requirements.txt | sort); then
  if ! .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt; then
    echo "could not install the CI readers from PyPI (pip install -r $PWD/requirements.txt)" >&2
    exit 3
  fi
fi
