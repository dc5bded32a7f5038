#!/usr/bin/env bash
# The test command (README, `just test`, .ci/run): gets Postgres ready, then runs every test.
#
# The tests talk to real Postgres, real MariaDB and real SQLite. Postgres comes from DATABASE_URL when it is
# set; otherwise from a container the tests start with testcontainers, which needs a Docker
# engine: this script starts one if none answers (installing docker.io as root on Debian), and
# picks the image (the official one, or one built from this machine's PostgreSQL when no registry
# can be reached). Containers the tests leave are removed at the end. A headless Chromium (for the
# report pages' browser test) is installed the same way when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/postgres-image.sh
  source ./scripts/postgres-image.sh
  export HOOKBENCH_SESSION="test-$$-$(date +%s)"
  # The tests judge transactions, not a server's crash durability: no flush on commit.
  export HOOKBENCH_PG_FSYNC=off
  cleanup() {
    docker ps -aq --filter "label=org.hookbench.session=$HOOKBENCH_SESSION" | xargs -r docker rm -f >/dev/null 2>&1 || true
  }
  trap cleanup EXIT
fi
# MySQL/MariaDB comes from MYSQL_URL when it is set; otherwise from a container too (the official
# mariadb image, or one built from this machine's Debian mariadb-server).
if [ -z "${MYSQL_URL:-}" ]; then
  ./scripts/docker-engine.sh
  # shellcheck source=scripts/mariadb-image.sh
  source ./scripts/mariadb-image.sh
  if [ -z "${HOOKBENCH_SESSION:-}" ]; then
    HOOKBENCH_SESSION="test-$$-$(date +%s)"
    export HOOKBENCH_SESSION HOOKBENCH_PG_FSYNC=off
    trap 'docker ps -aq --filter "label=org.hookbench.session=$HOOKBENCH_SESSION" | xargs -r docker rm -f >/dev/null 2>&1 || true' EXIT
  fi
fi
# The report pages' browser test needs a headless Chromium.
./scripts/browser.sh
# The tools the tests run beside hookbench (npm and PyPI packages, pinned).
./scripts/test-tools.sh
# Tests that spawn the binary would append their runs' grids to a CI job's own step summary.
unset GITHUB_STEP_SUMMARY
# Two tests per core: the integration tests mostly wait on worker processes, servers and
# sockets (on this 2-core machine the whole suite kept 0.85 cores busy with 2 threads). In a
# fresh-clone .ci/run here the harness's took 657 s with 2 threads and 462 s with 4.
# RUST_TEST_THREADS set by the caller wins; the jitter binary still runs alone.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(( $(nproc) * 2 ))}"
cargo test --workspace --locked "$@"
