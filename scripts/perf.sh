#!/usr/bin/env bash
# `just perf`: installs pgbench, mysqlslap and wrk if missing (Debian) and oha (cargo install, a few minutes
# once), readies Postgres, then runs `hookbench perf`, which prints hookbench beside them.
set -euo pipefail
cd "$(dirname "$0")/.."
need() { command -v "$1" >/dev/null 2>&1 || ./scripts/apt-install.sh "$2"; }
need wrk wrk
need pgbench postgresql-client
need mysqlslap mariadb-client
command -v oha >/dev/null 2>&1 || cargo install oha --locked
if [ -z "${DATABASE_URL:-}" ]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/postgres-image.sh
  source ./scripts/postgres-image.sh
fi
# `--only mysql` measures MySQL or MariaDB: MYSQL_URL, else a container of the image
# scripts/mariadb-image.sh picks.
if [ -z "${MYSQL_URL:-}" ] && [[ " $* " == *" mysql "* || " $* " == *"--only=mysql"* ]]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/mariadb-image.sh
  source ./scripts/mariadb-image.sh
fi
cargo build --release --locked -p hookbench
exec ./target/release/hookbench perf "$@"
