#!/usr/bin/env bash
# The audit of the @shopify/shopify-api example, every check that applies:
#   audit.sh PORT DB_URL PIDFILE OUT_DIR [more hookbench audit flags]
# The receiver must be running (serve.sh start PORT DB_URL PIDFILE) on a Postgres database set up
# with serve.sh setup DB_URL. HOOKBENCH names the binary (default hookbench on PATH).
# Not run: out-of-order (the handler keeps no state to read back), poison (the handler fails on no
# input: every signed body is recorded).
# WILD_QUICK=1 runs the checks whose verdicts do not vary from run to run, on a smaller load
# (CI: examples/wild/audit-all.sh --quick).
# Bodies: hookbench's --payload shopify, orders/create credits (X-Shopify-Topic), which
# webhooks.validate takes like any topic.
# Exits with hookbench's status: 0 every check passed, 1 one failed, 2 it could not run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${1:?audit.sh PORT DB_URL PIDFILE OUT_DIR [flags]}
db=${2:?DB_URL}
pidfile=${3:?PIDFILE}
out=${4:?OUT_DIR}
shift 4
secret=${WILD_SHOPIFY_SECRET:-wild-example-secret}
serve="WILD_SHOPIFY_SECRET=$secret $here/serve.sh"
quick=()
if [ "${WILD_QUICK:-0}" = 1 ]; then
  quick=(--checks "sequential-duplicate,concurrent-copies,lost-ack,late-replay,secret-rotation,hostile-input,parallel-load,crash"
         --events 200 --rate 50 --kills 1 --stall-wait 5s)
fi
set +e
"${HOOKBENCH:-hookbench}" audit "http://127.0.0.1:$port/webhooks" \
  --signing shopify --secret "$secret" --payload shopify \
  --observe-db "$db" \
  --applied-query "SELECT webhook_id, count(*) FROM handler_calls GROUP BY webhook_id" \
  --account-base 100000 --copies 8 --race-window \
  --kill-cmd "$serve kill $pidfile" --start-cmd "$serve start $port $db $pidfile" \
  --health-url "http://127.0.0.1:$port/healthz" \
  --ramp 20..160 --ramp-steps 4 --step-duration 5s \
  --outage 1h --time-scale 1000 \
  --no-progress --out "$out" "${quick[@]}" "$@"
status=$?
exit $status
