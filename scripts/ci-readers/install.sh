#!/usr/bin/env bash
# Installs the readers of what hookbench writes for a CI (PyPI, pinned by requirements.txt) into
# .venv here: junitparser, which reads the tests' --junit files as a CI's test reporter does
# (read_junit.py), and cmarkgfm, GitHub's Markdown renderer, which renders the step summary as a
# job's summary page shows it (render_markdown.py). Used by harness/tests/it/junit.rs and
# ci_outputs.rs. Idempotent; exits 3 when Python or a package cannot be had, and the tests then
# fail, naming this script.
set -euo pipefail
here=$(dirname "$0")
exec "$here/../python-venv.sh" "$here" "the CI readers (junitparser, cmarkgfm)"
