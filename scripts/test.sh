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
# The provider bodies' tests need the providers' published schemas and types (npm); without
# them those tests fail, naming this script.
./scripts/provider-schemas/install.sh || echo "warning: the providers' schemas could not be installed"
# The CI outputs' tests read --junit files with junitparser and render the step summary with
# cmark-gfm (PyPI); without them they fail, naming this script.
./scripts/ci-readers/install.sh || echo "warning: junitparser and cmarkgfm could not be installed"
# The balances example receiver speaks Postgres through psycopg2 (PyPI); without it the tests of
# it on Postgres fail, naming this script.
./examples/receivers/balances/install.sh || echo "warning: psycopg2 could not be installed"
# The providers' receiver verifies with each provider's own library (PyPI and npm, pinned); without
# them its tests fail, naming this script.
./scripts/provider-vectors/install.sh || echo "warning: the providers' libraries could not be installed"
# The pytest modules `hookbench repro --pytest` writes are run by pytest (PyPI, pinned); without it
# their test fails, naming this script.
./scripts/pytest/install.sh || echo "warning: pytest could not be installed"
# The Node scripts `hookbench repro --node` writes read Postgres through pg (npm, pinned); without
# it their test on Postgres fails, naming this script.
./scripts/repro-node/install.sh || echo "warning: pg could not be installed for the Node scripts"
# Tests that spawn the binary would append their runs' grids to a CI job's own step summary.
unset GITHUB_STEP_SUMMARY
# Two tests per core: the integration tests mostly wait on worker processes, servers and
# sockets (on this 2-core machine the harness's ran at 0.85 cores busy with 2 threads). With 4
# threads they took 451 s against local servers, where with 2 in the last CI they took 657 s.
# RUST_TEST_THREADS set by the caller wins; the jitter binary still runs alone.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$(( $(nproc) * 2 ))}"
cargo test --workspace --locked "$@"
