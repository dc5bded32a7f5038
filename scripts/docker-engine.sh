#!/usr/bin/env bash
# Makes sure a Docker engine answers: uses a running one, else (as root on Debian) installs
# docker.io and starts dockerd without a bridge or iptables (containers then use host networking
# and listen on 127.0.0.1 only). Idempotent; prints what it did on stderr.
set -euo pipefail
if docker info >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "docker-engine: no Docker engine answers and this is not root; start Docker, or set DATABASE_URL" >&2
  exit 1
fi
if ! command -v dockerd >/dev/null 2>&1; then
  "$(dirname "$0")/apt-install.sh" docker.io
fi
echo "docker-engine: starting dockerd (no bridge, no iptables)" >&2
log=${TMPDIR:-/tmp}/hookbench-dockerd.log
nohup dockerd --bridge=none --iptables=false >"$log" 2>&1 &
for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then exit 0; fi
  sleep 0.5
done
echo "docker-engine: dockerd did not answer within 30 s; its log:" >&2
tail -n 30 "$log" >&2
exit 1
