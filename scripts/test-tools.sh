#!/usr/bin/env bash
# Installs the npm and PyPI packages the tests run beside hookbench, each pinned, each into its
# own directory. scripts/test.sh runs it; .ci/run runs it too, in the background while clippy
# compiles (about 70 s of downloads on a fresh clone), and test.sh's run then finds each one
# installed. A tool that cannot be had is a warning here: the tests that need it fail, naming
# its install script.
set -euo pipefail
cd "$(dirname "$0")/.."
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
