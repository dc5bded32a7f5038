#!/usr/bin/env bash
# Installs Debian packages for the project's scripts: waits up to 5 minutes for another apt or
# dpkg to let go of its lock (instead of failing at once), keeps apt's output in a log, and on a
# failure prints the end of that log, so the reason is on screen.
#
#   scripts/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: apt-install.sh PACKAGE..." >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  echo "apt-install: installing $* needs root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp "${TMPDIR:-/tmp}/hookbench-apt.XXXXXX")
lock=(-o DPkg::Lock::Timeout=300)
run() {
  if ! "$@" >>"$log" 2>&1; then
    echo "apt-install: '$*' failed; the end of its output ($log):" >&2
    tail -n 25 "$log" >&2
    exit 1
  fi
}
echo "apt-install: installing $* (log: $log)" >&2
run apt-get "${lock[@]}" update
run apt-get "${lock[@]}" install -y --no-install-recommends "$@"
rm -f "$log"
