#!/usr/bin/env bash
# Makes sure a headless Chromium is at hand for the report pages' browser test
# (harness/tests/it/reports.rs, testkit/src/browser.rs): uses HOOKBENCH_CHROMIUM or one on the
# PATH, else (as root on Debian) installs Debian's chromium. Idempotent; says what it did on stderr.
set -euo pipefail
if [ -n "${HOOKBENCH_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1 ||
  command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "browser: no Chromium here and no way to install one; install chromium or set HOOKBENCH_CHROMIUM" >&2
  exit 1
fi
"$(dirname "$0")/apt-install.sh" chromium
