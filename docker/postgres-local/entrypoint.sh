#!/bin/sh
# Entrypoint of the registry-free Postgres image: behaves like the official image's for what
# hookbench uses. POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB; arguments starting with `-`
# go to postgres. Like the official image it runs a temporary server during the first
# initialisation (whose log goes to stdout) before the real one (whose log goes to stderr), so
# "database system is ready to accept connections" appears on both, which is what
# testcontainers-modules' Postgres waits for.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
PGBIN=/usr/lib/postgresql/15/bin
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s' "${POSTGRES_PASSWORD:-postgres}" > /tmp/pwfile
  "$PGBIN/initdb" -D "$PGDATA" -U "$user" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C >/dev/null 2>&1
  : > /tmp/pwfile   # the image has no rm
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  "$PGBIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | "$PGBIN/postgres" --single -D "$PGDATA" postgres >/dev/null 2>&1 || true
  fi
  "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop
  echo "PostgreSQL init process complete; ready for start up."
fi
case "${1:-}" in
  ''|-*) exec "$PGBIN/postgres" -D "$PGDATA" -k /tmp "$@" ;;
  postgres) shift; exec "$PGBIN/postgres" -D "$PGDATA" -k /tmp "$@" ;;
  *) exec "$@" ;;
esac
