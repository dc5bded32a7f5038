#!/usr/bin/env bash
# The container image audits the Python example receiver: builds the image with
# docker/hookbench-local/build.sh from a built binary, starts
# examples/receivers/python-sqlite/receiver.py in safe and then unsafe mode, and runs
#   docker run --rm --network host -v DIR:DIR IMAGE audit http://127.0.0.1:PORT/webhooks ...
# observing the receiver's SQLite file through the bind mount. Safe mode must exit 0, unsafe
# mode 1; any other status fails this script, with the audit's output. First, that
# docker/Dockerfile's build stage copies the whole workspace.
#   scripts/docker-audit.sh [BINARY]     default: $HOOKBENCH_BIN or target/debug/hookbench
# CI passes the test step's debug binary: a release build from nothing took 15 minutes here (23
# of CPU), and the image's assembly is the same for either. Exits 3 when no Docker engine answers.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=${1:-${HOOKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug/hookbench}}
image=hookbench/local:docker-audit
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
# docker/Dockerfile cannot be built here (no registry), so its build stage's context is checked
# instead: what its COPY lines bring is a whole workspace that cargo reads with the lock file (a
# workspace member left out fails here, as it would in `docker build`).
context=$(mktemp -d)
grep -E '^COPY [^-]' docker/Dockerfile | awk '{for (i = 2; i < NF; i++) print $i}' |
  while read -r path; do cp -a "$path" "$context/"; done
# Filtered to this host: unfiltered, cargo wants every platform's packages (android_system_properties
# for chrono), which a fresh machine has not downloaded and --offline cannot fetch.
host=$(rustc -vV | sed -n 's/^host: //p')
if ! (cd "$context" && cargo metadata --locked --offline --format-version 1 --filter-platform "$host" > /dev/null); then
  echo "docker-audit: docker/Dockerfile's build stage does not copy a whole workspace" >&2
  exit 1
fi
rm -rf "$context"
echo "docker-audit: docker/Dockerfile's build stage copies a whole workspace"
if ! docker info >/dev/null 2>&1; then
  echo "docker-audit: no Docker engine answers (scripts/docker-engine.sh starts one)" >&2
  exit 3
fi
start=$SECONDS
./docker/hookbench-local/build.sh "$binary" "$image"
work=$(mktemp -d)
# shellcheck source=scripts/example-receiver.sh
source scripts/example-receiver.sh
trap 'example_receiver_stop; rm -rf "$work"' EXIT
# The image runs as its own user (uid 10001), not this script's: it must read the receiver's
# SQLite file (and, in WAL mode, write its -shm index) and write its report into the mount.
chmod 1777 "$work"
cp examples/receivers/python-sqlite/template.json "$work/"

# Starts the receiver in MODE on DIR/app.db; sets $receiver and $addr.
# The example receiver on DIR in MODE, its files writable by the image's user (umask 0: the
# database and its -wal and -shm files).
start_receiver() {
  local dir=$1 mode=$2 mask
  mkdir -p "$dir"
  chmod 1777 "$dir"
  mask=$(umask)
  umask 0000
  example_receiver_start "$dir" "$mode" "$secret" || { umask "$mask"; return 1; }
  umask "$mask"
}

# Audits the receiver in MODE with the image; fails unless it exits WANT.
audit_mode() {
  local mode=$1 want=$2 dir="$work/$1" status
  start_receiver "$dir" "$mode"
  set +e
  # A small, quick check set: the duplicate and the race the unsafe mode fails, and a short load.
  HOOKBENCH_AUDIT_SECRET=$secret docker run --rm --network host -e HOOKBENCH_AUDIT_SECRET \
    -v "$work:$work" "$image" audit "http://$addr/webhooks" \
    --payload "$work/template.json" --observe-db "sqlite://$dir/app.db" \
    --applied-query "SELECT event_id, count(*) FROM payments GROUP BY event_id" \
    --checks sequential-duplicate,concurrent-copies,parallel-load --copies 4 \
    --events 200 --rate 400 --quiet 300ms --out "$dir/report" > "$dir/audit.log" 2>&1
  status=$?
  set -e
  example_receiver_stop
  if [ "$status" != "$want" ]; then
    echo "docker-audit: $mode mode exited $status, expected $want; the audit said:" >&2
    cat "$dir/audit.log" >&2
    return 1
  fi
  [ -s "$dir/report/report.json" ] || { echo "docker-audit: $mode mode wrote no report" >&2; return 1; }
  echo "docker-audit: $mode mode: exit $status, as expected:"
  { grep -E "PASS|FAIL|WARN|SKIP" "$dir/audit.log" || true; } | sed "s/^/  /"
}

audit_mode safe 0
audit_mode unsafe 1
echo "docker-audit: the image passed the safe receiver and failed the unsafe one in $((SECONDS - start)) s"
