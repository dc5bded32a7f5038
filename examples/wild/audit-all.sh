#!/usr/bin/env bash
# Installs, serves and audits every receiver here on every database it runs on, prints a Markdown
# verdict table (receiver, db, check, verdict, evidence) and compares each audit's verdicts with
# the ones committed beside its receiver (expected-<db>.tsv).
#
#   audit-all.sh [--out DIR] [--quick] [RECEIVER:DB ...]  (default: every receiver on every database)
#
# --quick (CI) runs each audit.sh with WILD_QUICK=1: the checks whose verdicts do not vary from run
# to run, on a smaller load, compared with expected-<db>-quick.tsv.
#
# Each run's report, history and server log go to DIR/<receiver>-<db>/ (default
# reports/wild-<UTC time>/). Postgres comes from DATABASE_URL (a server URL, e.g.
# postgres://postgres@127.0.0.1:55432/postgres; a database wild_<receiver> is made afresh in it,
# with psql); without it the Postgres runs are listed as not run. HOOKBENCH names the binary
# (default: built with cargo, ${CARGO_TARGET_DIR:-target}/debug/hookbench). The receivers listen on
# 127.0.0.1 from port WILD_PORT_BASE + 1 on (default 18201), one port per run.
#
# Exit status: 0 when every audit ran and gave the verdicts committed for it; 1 when one gave
# others (the table says which); 2 when one could not run (install, server, or hookbench's exit 2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
all=(drf-stripe:postgres drf-stripe:sqlite octokit-webhooks:postgres shopify-api:postgres)
out="$root/reports/wild-$(date -u +%Y%m%dT%H%M%SZ)"
runs=()
expected_suffix=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:?audit-all.sh: --out needs a directory}; shift 2 ;;
    --quick) export WILD_QUICK=1; expected_suffix=-quick; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *:postgres|*:sqlite)
      [ -d "$here/${1%%:*}" ] || { echo "audit-all.sh: no receiver ${1%%:*} in $here" >&2; exit 2; }
      runs+=("$1"); shift ;;
    *) echo "audit-all.sh: expected RECEIVER:postgres or RECEIVER:sqlite, got $1" >&2; exit 2 ;;
  esac
done
[ ${#runs[@]} -gt 0 ] || runs=("${all[@]}")
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -z "${HOOKBENCH:-}" ]; then
  (cd "$root" && cargo build --quiet --locked -p hookbench)
  HOOKBENCH="${CARGO_TARGET_DIR:-$root/target}/debug/hookbench"
fi
# Absolute, since each audit.sh may run from another directory.
case $HOOKBENCH in */*) HOOKBENCH="$(cd "$(dirname "$HOOKBENCH")" && pwd)/$(basename "$HOOKBENCH")" ;; esac
export HOOKBENCH

# fresh_pg NAME: a new, empty database NAME on DATABASE_URL's server; prints its URL.
fresh_pg() {
  local server=${DATABASE_URL%%\?*}
  server=${server%/*}
  psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" >&2
  echo "$server/$1"
}

table="$out/verdicts.md"
printf '| receiver | db | check | verdict | evidence |\n|---|---|---|---|---|\n' > "$table"
worst=0
port=${WILD_PORT_BASE:-18200}
for run in "${runs[@]}"; do
  name=${run%%:*} db=${run##*:} dir="$here/${run%%:*}" port=$((port + 1))
  run_dir="$out/$name-$db"
  mkdir -p "$run_dir"
  echo "== $name on $db ($(date -u +%H:%M:%S))" >&2
  if [ "$db" = postgres ] && [ -z "${DATABASE_URL:-}" ]; then
    echo "| $name | $db | (all) | not run | DATABASE_URL is not set |" >> "$table"
    continue
  fi
  if ! "$dir/install.sh" > "$run_dir/install.log" 2>&1; then
    echo "| $name | $db | (all) | not run | install.sh failed: $run_dir/install.log |" >> "$table"
    worst=2; continue
  fi
  case $db in
    postgres) url=$(fresh_pg "wild_${name//-/_}") ;;
    sqlite) rm -f "$run_dir/app.db"; url="sqlite://$run_dir/app.db" ;;
  esac
  pidfile="$run_dir/server.pid"
  if ! "$dir/serve.sh" setup "$url" 100000 5000 > "$run_dir/setup.log" 2>&1 ||
     ! "$dir/serve.sh" start "$port" "$url" "$pidfile" 2> "$run_dir/start.log"; then
    echo "| $name | $db | (all) | not run | the server did not start: $run_dir/setup.log, start.log |" >> "$table"
    "$dir/serve.sh" stop "$pidfile" || true
    worst=2; continue
  fi
  set +e
  "$dir/audit.sh" "$port" "$url" "$pidfile" "$run_dir/audit" > "$run_dir/audit.log" 2>&1
  status=$?
  set -e
  "$dir/serve.sh" stop "$pidfile" || true
  echo "   hookbench exit $status; report in $run_dir/audit" >&2
  if [ ! -f "$run_dir/audit/report.json" ]; then
    echo "| $name | $db | (all) | not run | hookbench exit $status, no report: $run_dir/audit.log |" >> "$table"
    worst=2; continue
  fi
  python3 "$here/verdicts.py" table "$name" "$db" "$run_dir/audit" >> "$table"
  [ "$status" -ne 2 ] || worst=2
  python3 "$here/verdicts.py" tsv "$run_dir/audit" > "$run_dir/verdicts.tsv"
  if ! python3 "$here/compare.py" "$dir/expected-$db$expected_suffix.tsv" "$run_dir/verdicts.tsv"; then
    echo "   $name on $db: verdicts differ from $dir/expected-$db$expected_suffix.tsv" >&2
    [ "$worst" -ne 0 ] || worst=1
  fi
done
cat "$table"
exit "$worst"
