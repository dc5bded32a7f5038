# shellcheck shell=bash
# Sourced by scripts that audit the Python example receiver (examples/receivers/python-sqlite):
#   example_receiver_start DIR MODE SECRET   starts it on DIR/app.db in MODE on a free port, waits
#                                            for its listening line; sets $receiver (its pid) and
#                                            $addr (host:port); its output in DIR/receiver.*
#   example_receiver_stop                    stops it (call it from the script's EXIT trap too)
receiver=
example_receiver_stop() {
  if [ -n "$receiver" ]; then
    kill "$receiver" 2>/dev/null || true
    wait "$receiver" 2>/dev/null || true
  fi
  receiver=
}
example_receiver_start() {
  local dir=$1 mode=$2 secret=$3
  mkdir -p "$dir"
  python3 examples/receivers/python-sqlite/receiver.py --db "$dir/app.db" --mode "$mode" --port 0 \
    --secret "$secret" > "$dir/receiver.json" 2> "$dir/receiver.log" &
  receiver=$!
  for _ in $(seq 100); do
    [ -s "$dir/receiver.json" ] && break
    sleep 0.1
  done
  # shellcheck disable=SC2034 # addr is the caller's
  addr=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["listening"])' \
    "$dir/receiver.json") || { cat "$dir/receiver.log" >&2; return 1; }
}
