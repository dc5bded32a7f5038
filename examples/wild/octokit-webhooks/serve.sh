#!/usr/bin/env bash
# The @octokit/webhooks example under node:cluster with 2 workers on 127.0.0.1.
#   serve.sh setup DB_URL              create the handler_calls table
#   serve.sh start PORT DB_URL PIDFILE start in the background (its own process group), wait
#                                      until GET /healthz answers; the primary's pid in PIDFILE
#   serve.sh kill PIDFILE              SIGKILL the primary and its workers (a crash)
#   serve.sh stop PIDFILE              SIGTERM, wait for them to exit
# WILD_GITHUB_SECRET is the webhook's secret (default wild-example-secret); the server's output
# goes to PIDFILE's directory, octokit-webhooks.log.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export WILD_GITHUB_SECRET=${WILD_GITHUB_SECRET:-wild-example-secret}
# shellcheck source=/dev/null
source "$here/../lib.sh"
cmd=${1:?usage: serve.sh setup|start|kill|stop ...}
case $cmd in
  setup) WILD_DB_URL=${2:?serve.sh setup DB_URL} node "$here/setup.js" ;;
  start)
    port=${2:?serve.sh start PORT DB_URL PIDFILE}
    db=${3:?DB_URL}
    pidfile=${4:?PIDFILE}
    log="$(dirname "$pidfile")/octokit-webhooks.log"
    wild_port_free "$port"
    PORT=$port WILD_DB_URL=$db setsid node "$here/server.js" >>"$log" 2>&1 < /dev/null &
    echo $! > "$pidfile"
    wild_wait_healthy "http://127.0.0.1:$port/healthz" "$log"
    wild_alive "$pidfile"
    ;;
  kill) wild_kill_group "${2:?serve.sh kill PIDFILE}" ;;
  stop) wild_stop "${2:?serve.sh stop PIDFILE}" ;;
  *) echo "serve.sh: unknown command $cmd (setup, start, kill or stop)" >&2; exit 2 ;;
esac
