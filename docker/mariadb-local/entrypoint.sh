#!/bin/sh
# Entrypoint of the registry-free MariaDB image: behaves like the official image's for what
# hookbench uses. MARIADB_ROOT_PASSWORD sets root's password (for 'root'@'%' too, so a mapped
# port or the host's network reaches it) through an init file read at every start; arguments
# starting with `-` go to mariadbd.
set -eu
password=${MARIADB_ROOT_PASSWORD:-}
case "$password" in
  *"'"*|*'\'*) echo "entrypoint: MARIADB_ROOT_PASSWORD must not hold ' or \\" >&2; exit 2 ;;
esac
# The image has no cat: the shell's own printf writes the init file.
printf '%s\n' \
  "CREATE USER IF NOT EXISTS 'root'@'%' IDENTIFIED BY '$password';" \
  "ALTER USER 'root'@'%' IDENTIFIED BY '$password';" \
  "GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;" > /tmp/init.sql
run() { exec /usr/sbin/mariadbd --datadir=/var/lib/mysql --socket=/run/mysqld/mysqld.sock \
  --init-file=/tmp/init.sql "$@"; }
case "${1:-}" in
  ''|-*) run "$@" ;;
  mariadbd) shift; run "$@" ;;
  *) exec "$@" ;;
esac
