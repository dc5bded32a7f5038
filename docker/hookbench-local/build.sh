#!/usr/bin/env bash
# Builds hookbench's image without a registry, from a built binary and its shared libraries
# (found with ldd), with `docker import`, as docker/postgres-local/build.sh builds Postgres's:
#   docker/hookbench-local/build.sh [BINARY] [IMAGE]
#     BINARY default target/release/hookbench (a debug build works too, larger and slower)
#     IMAGE  default hookbench/local:latest
# It is docker/Dockerfile's image without its build stage: the one binary at
# /usr/local/bin/hookbench, a non-root user `hookbench` (uid 10001) with its home as the working
# directory, /tmp, /bin/sh (the audit runs --kill-cmd, --start-cmd and --retention-cmd through
# it), this machine's CA certificates (for testcontainers' Docker client, rustls: the one part of
# hookbench that may speak TLS; sqlx has tls-none, reqwest no TLS backend), and
# ENTRYPOINT ["hookbench"].
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${1:-${CARGO_TARGET_DIR:-target}/release/hookbench}
image=${2:-hookbench/local:latest}
if [ ! -x "$binary" ]; then
  echo "hookbench-local: no binary at $binary; build it (cargo build --release -p hookbench) or name it" >&2
  exit 2
fi
# shellcheck source=docker/rootfs.sh
source docker/rootfs.sh
rootfs_init
install -m 0755 "$binary" "$root/usr/local/bin/hookbench"
rootfs_copy /bin/dash
ln -s dash "$root/usr/bin/sh"
# The shared libraries of both binaries, and the dynamic loader.
rootfs_libs "$binary" /bin/dash
certs=/etc/ssl/certs/ca-certificates.crt
[ -e "$certs" ] || ./scripts/apt-install.sh ca-certificates
rootfs_copy "$certs"
uid=10001
mkdir -p "$root/etc" "$root/tmp" "$root/home/hookbench"
chmod 1777 "$root/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\nhookbench:x:%s:%s:hookbench:/home/hookbench:/bin/sh\n' "$uid" "$uid" > "$root/etc/passwd"
printf 'root:x:0:\nhookbench:x:%s:\n' "$uid" > "$root/etc/group"
chown "$uid:$uid" "$root/home/hookbench"
tar -C "$root" -c . | docker import \
  --change 'USER hookbench' \
  --change 'WORKDIR /home/hookbench' \
  --change 'ENV HOME=/home/hookbench LANG=C.UTF-8' \
  --change 'ENTRYPOINT ["/usr/local/bin/hookbench"]' \
  --change 'CMD ["--help"]' \
  - "$image" >/dev/null
echo "hookbench-local: built $image from $binary ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))" >&2
