#!/usr/bin/env bash
# The audit of the drf-stripe-subscription example, every check that applies:
#   audit.sh PORT DB_URL PIDFILE OUT_DIR [more hookbench audit flags]
# The receiver must be running (serve.sh start PORT DB_URL PIDFILE) on a database set up with
# serve.sh setup DB_URL 100000 5000. HOOKBENCH names the binary (default hookbench on PATH).
# WILD_QUICK=1 runs the checks whose verdicts do not vary from run to run, on a smaller load
# (CI: examples/wild/audit-all.sh --quick).
# Exits with hookbench's status: 0 every check passed, 1 one failed, 2 it could not run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
port=${1:?audit.sh PORT DB_URL PIDFILE OUT_DIR [flags]}
db=${2:?DB_URL}
pidfile=${3:?PIDFILE}
out=${4:?OUT_DIR}
shift 4
secret=${WILD_STRIPE_WEBHOOK_SECRET:-whsec_wild_example}
serve="WILD_STRIPE_WEBHOOK_SECRET=$secret $here/serve.sh"
case $db in
  postgres*)
    # Account and version as bigint: the customer is cus_<account>, the version rides in
    # current_period_end (seconds since 1970), which the package stores as period_end.
    state="SELECT substr(u.customer_id, 5)::bigint, extract(epoch FROM s.period_end)::bigint
           FROM drf_stripe_subscription s JOIN drf_stripe_stripeuser u ON u.user_id = s.stripe_user_id
           WHERE s.subscription_id LIKE 'sub_acct_%'" ;;
  sqlite*)
    state="SELECT CAST(substr(u.customer_id, 5) AS INTEGER), CAST(strftime('%s', s.period_end) AS INTEGER)
           FROM drf_stripe_subscription s JOIN drf_stripe_stripeuser u ON u.user_id = s.stripe_user_id
           WHERE s.subscription_id LIKE 'sub_acct_%'" ;;
  *) echo "audit.sh: DB_URL must be postgres://... or sqlite:///path, got $db" >&2; exit 2 ;;
esac
# A credit is a customer.subscription.created event for subscription sub_evt_<event id>; each
# call of the package's handler saves it once, and the example's post_save receiver writes a row.
applied="SELECT substr(subscription_id, 9), count(*) FROM calls_handlercall
         WHERE subscription_id LIKE 'sub_evt_%' GROUP BY subscription_id"
quick=()
if [ "${WILD_QUICK:-0}" = 1 ]; then
  quick=(--checks "sequential-duplicate,concurrent-copies,lost-ack,out-of-order,late-replay,secret-rotation,hostile-input,parallel-load,crash"
         --events 200 --rate 50 --kills 1 --stall-wait 5s)
fi
set +e
"${HOOKBENCH:-hookbench}" audit "http://127.0.0.1:$port/stripe/webhook/" \
  --signing stripe --secret "$secret" --payload "$here/template.json" \
  --observe-db "$db" --applied-query "$applied" --state-query "$state" \
  --account-base 100000 --copies 8 --race-window \
  --kill-cmd "$serve kill $pidfile" --start-cmd "$serve start $port $db $pidfile" \
  --health-url "http://127.0.0.1:$port/healthz" \
  --poison-account 999999999999 \
  --ramp 20..160 --ramp-steps 4 --step-duration 5s \
  --outage 6h --time-scale 1000 --rate 100 \
  --no-progress --out "$out" "${quick[@]}" "$@"
status=$?
exit $status
