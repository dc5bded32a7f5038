#!/usr/bin/env bash
# Builds a Postgres image without a registry, from this machine's PostgreSQL 15 (Debian's
# postgresql-15 package, installed if missing), with `docker import`:
#   docker/postgres-local/build.sh [IMAGE]        default IMAGE: hookbench/postgres-local:15
# The image holds the server's binaries and their shared libraries (found with ldd), its share
# files, time zones, a postgres user, /bin/sh, and entrypoint.sh beside this script.
set -euo pipefail
image=${1:-hookbench/postgres-local:15}
here=$(cd "$(dirname "$0")" && pwd)
pg=/usr/lib/postgresql/15
if [ ! -x "$pg/bin/postgres" ]; then
  "$here/../../scripts/apt-install.sh" postgresql-15
fi
# shellcheck source=docker/rootfs.sh
source "$here/../rootfs.sh"
rootfs_init
rootfs_copy "$pg" /usr/share/postgresql/15 /usr/share/zoneinfo /bin/dash
ln -s dash "$root/usr/bin/sh"
# Shared libraries of every binary and module, and the dynamic loader.
mapfile -t files < <(find "$pg" -type f \( -perm -u+x -o -name '*.so' \))
rootfs_libs "${files[@]}" /bin/dash
mkdir -p "$root/etc" "$root/tmp" "$root/var/lib/postgresql/data" "$root/var/run/postgresql"
chmod 1777 "$root/tmp"
uid=999 gid=999
echo "root:x:0:0:root:/root:/bin/sh" > "$root/etc/passwd"
echo "postgres:x:$uid:$gid:PostgreSQL:/var/lib/postgresql:/bin/sh" >> "$root/etc/passwd"
printf 'root:x:0:\npostgres:x:%s:\n' "$gid" > "$root/etc/group"
install -m 0755 "$here/entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh" 2>/dev/null ||
  { mkdir -p "$root/usr/local/bin"; install -m 0755 "$here/entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"; }
chown -R "$uid:$gid" "$root/var/lib/postgresql" "$root/var/run/postgresql"
chmod 0700 "$root/var/lib/postgresql/data"
tar -C "$root" -c . | docker import \
  --change 'USER postgres' \
  --change 'ENV PGDATA=/var/lib/postgresql/data' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
  --change 'CMD ["postgres"]' \
  - "$image" >/dev/null
echo "postgres-local: built $image ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))" >&2
