#!/usr/bin/env bash
# Compares `hookbench model` with the article's own script, line for line from `events:` on,
# for several seeds and event counts. Exits 1 on the first difference, 3 when the script cannot
# be run here (no article, no node).
#
#   scripts/compare-model.sh [SEED:EVENTS ...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(20261023:10000 1:10 7:100 42:1000 123456789:5000 4294967295:3000 99:20000)
bin=${HOOKBENCH_BIN:-$root/target/release/hookbench}
[ -x "$bin" ] || cargo build --release --quiet -p hookbench --manifest-path "$root/Cargo.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for c in "${cases[@]}"; do
  seed=${c%%:*} events=${c##*:}
  "$root/scripts/article-script.sh" "$seed" "$events" > "$tmp/script.txt"
  "$bin" model --seed "$seed" --events "$events" > "$tmp/model.txt"
  if diff <(sed -n '/^events:/,$p' "$tmp/script.txt") <(sed -n '/^events:/,$p' "$tmp/model.txt") > "$tmp/diff"; then
    echo "seed $seed, $events events: identical ($(sed -n '/^events:/,$p' "$tmp/model.txt" | wc -l) lines)"
  else
    echo "seed $seed, $events events: DIFFERENT (< script, > model)"; cat "$tmp/diff"; exit 1
  fi
done
