#!/usr/bin/env bash
# Builds a MariaDB image without a registry, from this machine's MariaDB 10.11 (Debian's
# mariadb-server package, installed if missing), with `docker import`:
#   docker/mariadb-local/build.sh [IMAGE]        default IMAGE: hookbench/mariadb-local:10.11
# The image holds mariadbd and its shared libraries (found with ldd), its messages and
# character sets, a data directory initialised here by mariadb-install-db, a mysql user, /bin/sh,
# and entrypoint.sh beside this script (which takes MARIADB_ROOT_PASSWORD, as the official image
# does). Run as root.
set -euo pipefail
image=${1:-hookbench/mariadb-local:10.11}
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x /usr/sbin/mariadbd ] || ! command -v mariadb-install-db >/dev/null; then
  "$here/../../scripts/apt-install.sh" mariadb-server
fi
# shellcheck source=docker/rootfs.sh
source "$here/../rootfs.sh"
rootfs_init
rootfs_copy /usr/sbin/mariadbd /usr/share/mysql /bin/dash
ln -s dash "$root/usr/bin/sh"
rootfs_libs /usr/sbin/mariadbd /bin/dash
mkdir -p "$root/etc" "$root/tmp" "$root/var/lib/mysql" "$root/run/mysqld" "$root/usr/lib/mysql/plugin"
chmod 1777 "$root/tmp"
# The installer runs as mysql, which must reach the data directory inside mktemp's private one.
chmod 0755 "$root"
# The system tables, made by this machine's own installer (it runs mariadbd --bootstrap): root@localhost
# by unix socket only (no root@127.0.0.1 with an empty password); 'root'@'%'
# gets a password at every start from the entrypoint's init file.
mariadb-install-db --no-defaults --datadir="$root/var/lib/mysql" --user=mysql \
  --skip-test-db >/dev/null
uid=999 gid=999
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "mysql:x:$uid:$gid:MariaDB:/var/lib/mysql:/bin/sh" >> "$root/etc/passwd"
printf 'root:x:0:\nmysql:x:%s:\n' "$gid" > "$root/etc/group"
install -m 0755 "$here/entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
chown -R "$uid:$gid" "$root/var/lib/mysql" "$root/run/mysqld"
version=$(/usr/sbin/mariadbd --version | awk '{print $3}')
tar -C "$root" -c . | docker import \
  --change 'USER mysql' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL org.hookbench.mariadb-version=$version" \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["mariadbd"]' \
  - "$image" >/dev/null
echo "mariadb-local: built $image, mariadbd $version ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))" >&2
