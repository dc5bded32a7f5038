#!/usr/bin/env bash
# The main job (README, `just bench`): readies Postgres (a Docker engine and the image, unless
# DATABASE_URL is set), then runs `hookbench bench` with the given flags in a release build.
set -euo pipefail
exec "$(dirname "$0")/run.sh" bench "$@"
