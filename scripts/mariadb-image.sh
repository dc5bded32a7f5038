# Sourced by scripts/test.sh and the justfile: chooses the MySQL/MariaDB image for testcontainers,
# with a Docker engine already answering (scripts/postgres-image.sh chose the network mode).
#   HOOKBENCH_MYSQL_IMAGE set: used as is.
#   else the official mariadb:11.4.5 if it is present or can be pulled;
#   else hookbench/mariadb-local:10.11, built from this machine's Debian mariadb-server.
_hb_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${HOOKBENCH_MYSQL_IMAGE:-}" ]; then
  if docker image inspect mariadb:11.4.5 >/dev/null 2>&1 ||
     timeout 120 docker pull -q mariadb:11.4.5 >/dev/null 2>&1; then
    export HOOKBENCH_MYSQL_IMAGE=mariadb:11.4.5
  else
    echo "mariadb-image: the official image cannot be pulled here; building hookbench/mariadb-local:10.11" >&2
    "$_hb_root/docker/mariadb-local/build.sh" hookbench/mariadb-local:10.11
    export HOOKBENCH_MYSQL_IMAGE=hookbench/mariadb-local:10.11
  fi
fi
echo "mariadb-image: $HOOKBENCH_MYSQL_IMAGE" >&2
unset _hb_root
