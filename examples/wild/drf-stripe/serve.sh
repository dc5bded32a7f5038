#!/usr/bin/env bash
# The drf-stripe-subscription example under gunicorn with 2 sync workers on 127.0.0.1.
#   serve.sh setup DB_URL BASE COUNT   migrate and create customers cus_BASE..cus_BASE+COUNT-1
#   serve.sh start PORT DB_URL PIDFILE start in the background (its own process group), wait
#                                      until GET /healthz answers; the master's pid in PIDFILE
#   serve.sh kill PIDFILE              SIGKILL the master and its workers (a crash)
#   serve.sh stop PIDFILE              SIGTERM, wait for the workers to finish
# WILD_STRIPE_WEBHOOK_SECRET is the endpoint's secret (default whsec_wild_example); the server's
# output goes to PIDFILE's directory, drf-stripe.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export WILD_STRIPE_WEBHOOK_SECRET=${WILD_STRIPE_WEBHOOK_SECRET:-whsec_wild_example}
export DJANGO_SETTINGS_MODULE=wildsite.settings PYTHONPATH=$here
# shellcheck source=/dev/null
source "$here/../lib.sh"
cmd=${1:?usage: serve.sh setup|start|kill|stop ...}
case $cmd in
  setup)
    export WILD_DB_URL=${2:?serve.sh setup DB_URL BASE COUNT}
    "$here/.venv/bin/python" "$here/manage.py" migrate --verbosity 0
    "$here/.venv/bin/python" "$here/manage.py" seed_customers --base "${3:?BASE}" --count "${4:?COUNT}"
    ;;
  start)
    port=${2:?serve.sh start PORT DB_URL PIDFILE}
    export WILD_DB_URL=${3:?DB_URL}
    pidfile=${4:?PIDFILE}
    log="$(dirname "$pidfile")/drf-stripe.log"
    wild_port_free "$port"
    setsid "$here/.venv/bin/gunicorn" wildsite.wsgi --chdir "$here" --workers 2 \
      --bind "127.0.0.1:$port" --pid "$pidfile" >>"$log" 2>&1 < /dev/null &
    wild_wait_healthy "http://127.0.0.1:$port/healthz" "$log"
    wild_alive "$pidfile"
    ;;
  kill) wild_kill_group "${2:?serve.sh kill PIDFILE}" ;;
  stop) wild_stop "${2:?serve.sh stop PIDFILE}" ;;
  *) echo "serve.sh: unknown command $cmd (setup, start, kill or stop)" >&2; exit 2 ;;
esac
