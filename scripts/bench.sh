#!/usr/bin/env bash
# The main job (README, `just bench`): readies Postgres (a Docker engine and the image, unless
# DATABASE_URL is set), then runs `hookbench bench` with the given flags in a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/postgres-image.sh
  source ./scripts/postgres-image.sh
fi
cargo build --release --locked -p hookbench
exec ./target/release/hookbench bench "$@"
