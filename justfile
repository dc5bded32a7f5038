# hookbench's recipes. `just --list` shows them; each wraps a cargo or script line you can run
# without just.

# List the recipes.
default:
    @just --list

# Run the tests (what the README and CI run): scripts/test.sh -> cargo test --workspace.
test *ARGS:
    ./scripts/test.sh {{ARGS}}

# Check formatting and lints, as CI does.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets --locked -- -D warnings

# Print the article's simulation for a seed (defaults: the article's seed and 10,000 events).
model *ARGS:
    cargo run --release --locked -p hookbench -- model {{ARGS}}

# Compare `hookbench model` with the article's own script (needs node and npm).
model-compare *CASES:
    ./scripts/compare-model.sh {{CASES}}

# Time the workload and the model (criterion).
bench-model:
    cargo bench --locked -p hookbench --bench model

# How the workload, model, signing and checker grow from 10k to 1M events (criterion).
bench-scaling:
    cargo bench --locked -p hookbench --bench scaling

# Run one receiver worker, e.g. `just serve --design atomic --database-url sqlite:///tmp/h.db --secret whsec_...`.
serve *ARGS:
    cargo run --release --locked -p hookbench -- serve {{ARGS}}

# Provide a fresh database and print its URL (`--backend postgres|sqlite`, `--keep`).
db *ARGS:
    cargo run --release --locked -p hookbench -- db {{ARGS}}

# Start a Docker engine if needed and build the registry-free Postgres image.
postgres-image:
    ./scripts/docker-engine.sh
    ./docker/postgres-local/build.sh

# Audit your receiver, black-box: `just audit URL --secret ... --observe-db ... --applied-query ...` (docs/audit.md).
audit URL *ARGS:
    cargo run --release --locked -p hookbench -- audit {{URL}} {{ARGS}}

# Audit the real open-source receivers of examples/wild/ (installs, serves, compares the committed
# verdicts), e.g. `just wild --quick drf-stripe:sqlite`; their Postgres runs need DATABASE_URL.
wild *ARGS:
    ./examples/wild/audit-all.sh {{ARGS}}

# The main job (scripts/bench.sh: readies Postgres, runs every design on both backends, writes reports/<run>/).
bench *ARGS:
    ./scripts/bench.sh {{ARGS}}

# Merge a sharded bench's partial results: `just merge reports/run/shards --database-url URL` (docs/scale.md).
merge *ARGS:
    cargo run --release --locked -p hookbench -- merge {{ARGS}}

# Lint action.yml, the workflows and docs/ci.md's examples offline (schemas, action-validator, shellcheck), as CI does.
lint-actions:
    ./scripts/lint-actions.sh

# Build hookbench's image without a registry from a release binary (docker/hookbench-local/build.sh), e.g. `just image`.
image BINARY="target/release/hookbench":
    cargo build --release --locked -p hookbench
    ./scripts/docker-engine.sh
    ./docker/hookbench-local/build.sh {{BINARY}}

# The image audits the Python example receiver (safe exits 0, unsafe 1), as CI does.
docker-audit *ARGS:
    ./scripts/docker-audit.sh {{ARGS}}

# Validate deploy/k8s offline (Kustomize build, Kubernetes schemas, the shards' Job), as CI does.
k8s-validate:
    ./scripts/k8s-validate.sh

# hookbench against the machine's limits: the atomic design vs pgbench, the sender vs wrk.
perf *ARGS:
    ./scripts/perf.sh {{ARGS}}

# The nightly job, minus the upload: bench, rebuild reports/index.{md,html}, compare with the last run.
nightly *ARGS:
    ./scripts/nightly.sh {{ARGS}}

# The article's sender experiment against a real receiver (retries without and with jitter).
jitter *ARGS:
    cargo run --release --locked -p hookbench -- jitter {{ARGS}}

# The article's crash test with real process deaths (split loses events; atomic and inbox do not).
crash *ARGS:
    ./scripts/run.sh crash {{ARGS}}

# The article's retention test against a real store whose keys expire, on a virtual clock.
retention *ARGS:
    ./scripts/run.sh retention {{ARGS}}

# A bench with chaos, e.g. `just chaos kill-worker=1` or `just chaos pg-terminate=2 --backends postgres`.
chaos KIND *ARGS:
    ./scripts/bench.sh --chaos {{KIND}} {{ARGS}}
