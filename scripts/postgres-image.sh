# Sourced by scripts/test.sh and the justfile: chooses the Postgres image and network mode for
# testcontainers, with a Docker engine already answering.
#   HOOKBENCH_PG_IMAGE set: used as is.
#   else the official postgres:16-alpine if it is present or can be pulled;
#   else hookbench/postgres-local:15, built from this machine's PostgreSQL (no registry needed).
#   HOOKBENCH_DOCKER_NETWORK: `host` when Docker has no bridge network (dockerd --bridge=none).
_hb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${HOOKBENCH_PG_IMAGE:-}" ]; then
  if docker image inspect postgres:16-alpine >/dev/null 2>&1 ||
     timeout 120 docker pull -q postgres:16-alpine >/dev/null 2>&1; then
    export HOOKBENCH_PG_IMAGE=postgres:16-alpine
  else
    echo "postgres-image: the official image cannot be pulled here; building hookbench/postgres-local:15" >&2
    "$_hb_root/docker/postgres-local/build.sh" hookbench/postgres-local:15
    export HOOKBENCH_PG_IMAGE=hookbench/postgres-local:15
  fi
fi
if [ -z "${HOOKBENCH_DOCKER_NETWORK:-}" ]; then
  if docker network inspect bridge >/dev/null 2>&1; then
    export HOOKBENCH_DOCKER_NETWORK=bridge
  else
    export HOOKBENCH_DOCKER_NETWORK=host
  fi
fi
echo "postgres-image: $HOOKBENCH_PG_IMAGE on network $HOOKBENCH_DOCKER_NETWORK" >&2
unset _hb_root
