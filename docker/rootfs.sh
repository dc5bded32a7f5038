# shellcheck shell=bash
# Sourced by docker/*-local/build.sh: a root file system in a temporary directory, built from
# this machine's own files for `docker import` (no registry is needed).
#   rootfs_init        makes $root (removed on exit) with the merged-/usr layout: /bin, /lib and
#                      /lib64 link into /usr
#   rootfs_copy PATH.. copies each existing PATH to its canonical place under $root, and gives a
#                      path that is a link that link too (a library's soname, /bin/dash)
#   rootfs_libs FILE.. copies the shared libraries FILEs need (ldd) and the dynamic loader
rootfs_init() {
  root=$(mktemp -d)
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$root/usr/bin" "$root/usr/lib" "$root/usr/lib64" "$root/usr/local/bin"
  ln -s usr/bin "$root/bin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
}

rootfs_copy() {
  local p real link
  for p in "$@"; do
    [ -e "$p" ] || continue
    real=$(readlink -f "$p")
    if [ ! -e "$root$real" ]; then
      mkdir -p "$root$(dirname "$real")"
      cp -a "$real" "$root$real"
    fi
    link="$(readlink -f "$(dirname "$p")")/$(basename "$p")"
    if [ "$link" != "$real" ] && [ ! -e "$root$link" ]; then
      mkdir -p "$root$(dirname "$link")"
      ln -s "$real" "$root$link"
    fi
  done
}

rootfs_libs() {
  local lib
  for lib in $( { ldd "$@" 2>/dev/null || true; } | awk '/=> \// {print $3} /^\t\/lib/ {print $1}' | sort -u); do
    rootfs_copy "$lib"
  done
}
