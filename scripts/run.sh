#!/usr/bin/env bash
# Any hookbench command that needs Postgres, with the set-up done: readies Postgres (a Docker
# engine and the image, unless DATABASE_URL is set), builds the release binary and runs
# `hookbench "$@"` (for example `scripts/run.sh crash` or `scripts/run.sh retention`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/postgres-image.sh
  source ./scripts/postgres-image.sh
fi
cargo build --release --locked -p hookbench
exec ./target/release/hookbench "$@"
