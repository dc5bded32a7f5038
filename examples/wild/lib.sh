# shellcheck shell=bash
# Shared by the receivers' serve.sh: wait for health, kill a server's process group, stop it.
# Sourced, not run. Needs only bash, curl and /proc (no procps: a fresh Debian may lack it).

# wild_wait_healthy URL LOG: poll URL until it answers 2xx (60 s at most; the log's tail if not).
wild_wait_healthy() {
  local url=$1 log=$2
  for _ in $(seq 1 300); do
    if curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null; then return 0; fi
    sleep 0.2
  done
  echo "serve.sh: $url did not answer within 60 s; the end of $log:" >&2
  tail -n 30 "$log" >&2 || true
  return 1
}

# wild_group PIDFILE: the process group of the pid in PIDFILE (the server runs in its own, made
# by setsid); the third field after the command's name in /proc/PID/stat.
wild_group() {
  local pid stat pgid
  pid=$(cat "$1" 2>/dev/null) || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  read -r _ _ pgid _ <<< "$stat"
  echo "$pgid"
}

# wild_wait_gone PGID SECONDS: wait until no process of the group is left.
wild_wait_gone() {
  for _ in $(seq 1 $(($2 * 10))); do
    kill -0 -- "-$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# wild_kill_group PIDFILE: SIGKILL every process of the server's group, as a crash would.
wild_kill_group() {
  local pgid
  pgid=$(wild_group "$1") || { echo "serve.sh: no server running for $1" >&2; return 1; }
  [ -n "$pgid" ] || { echo "serve.sh: no server running for $1" >&2; return 1; }
  kill -KILL -- "-$pgid"
  wild_wait_gone "$pgid" 10
}

# wild_stop PIDFILE: SIGTERM the group, SIGKILL what is left after 20 s; nothing running is fine.
wild_stop() {
  local pgid
  pgid=$(wild_group "$1") || return 0
  [ -n "$pgid" ] || return 0
  kill -TERM -- "-$pgid" 2>/dev/null || return 0
  wild_wait_gone "$pgid" 20 || kill -KILL -- "-$pgid" 2>/dev/null || true
  rm -f "$1"
}

# wild_port_free PORT: fails, saying so, when something already listens on 127.0.0.1:PORT (a
# health check would otherwise pass against another server).
wild_port_free() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "serve.sh: 127.0.0.1:$1 is already in use; stop what listens there or pick another port" >&2
    return 1
  fi
}

# wild_alive PIDFILE: fails, saying so, unless the pid in PIDFILE runs (the health URL answered,
# and it must have been this server that did).
wild_alive() {
  local pid
  pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null && return 0
  echo "serve.sh: the server of $1 is not running" >&2
  return 1
}
