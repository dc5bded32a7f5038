#!/usr/bin/env bash
# Runs the article's own script (webhook-sim.mjs) for a seed and an event count, to compare
# `hookbench model` with it. The script is extracted from the article's text at run time (it is
# not part of this repository) and run on Node with better-sqlite3 in place of node:sqlite, which
# Node 20 lacks (same API for what the script uses).
#
#   scripts/article-script.sh SEED EVENTS        prints the script's output
#
# ARTICLE: the path of the article's text (required; the article is not part of this repository).
# HOOKBENCH_NODE_DIR: where better-sqlite3 is installed (default: target/article-node).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seed=${1:?usage: article-script.sh SEED EVENTS}
events=${2:?usage: article-script.sh SEED EVENTS}
article=${ARTICLE:-}
[ -f "$article" ] || { echo "article-script: no article (set ARTICLE to the article's text file)" >&2; exit 3; }
command -v node >/dev/null || { echo "article-script: node is not installed" >&2; exit 3; }
dir=${HOOKBENCH_NODE_DIR:-$root/target/article-node}
mkdir -p "$dir"
if [ ! -e "$dir/node_modules/better-sqlite3/build/Release/better_sqlite3.node" ]; then
  echo "article-script: installing better-sqlite3@12 into $dir (builds from source, about 1 min)" >&2
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error better-sqlite3@12 >&2)
fi
script="$dir/webhook-sim-$seed-$events.mjs"
awk '/^\/\/ webhook-sim.mjs:/ {p=1} /^The unedited output of node webhook-sim.mjs/ {p=0} p' "$article" |
  sed -e 's#^import { DatabaseSync } from "node:sqlite";#import DatabaseSync from "better-sqlite3";#' \
      -e "s#^const SEED = [0-9]*;#const SEED = $seed;#" \
      -e "s#^const N_EVENTS = [0-9]*;#const N_EVENTS = $events;#" > "$script"
grep -q "^const SEED = $seed;" "$script" || { echo "article-script: could not find the script in $article" >&2; exit 3; }
(cd "$dir" && node "$script")
