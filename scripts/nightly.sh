#!/usr/bin/env bash
# The nightly job's steps (.github/workflows/nightly.yml runs exactly this; `just nightly` runs it
# here, without the upload): build, run the bench with defaults and the crash, jitter and
# retention experiments through testcontainers, rebuild the history index with the earlier runs
# under reports/, compare with the previous run, and audit the receivers in the wild
# (examples/wild/audit-all.sh; their Postgres runs need DATABASE_URL).
#
# The comparison is printed; with NIGHTLY_GATE=1 a regression fails the job. (Designs that are
# expected to misbehave, naive or check-then-insert, vary from run to run under real concurrency,
# so gating on every figure of every design would flag noise.)
# NIGHTLY_P99_THRESHOLD: p99 growth counted as a regression (default 1.0, i.e. doubled);
# NIGHTLY_TOLERANCE: growth of a non-zero correctness figure forgiven as noise (default 0.5).
set -euo pipefail
cd "$(dirname "$0")/.."
reports=${REPORTS_DIR:-reports}
mkdir -p "$reports"
previous=$(ls -1d "$reports"/*/ 2>/dev/null | while read -r d; do [ -f "$d/report.json" ] && echo "${d%/}"; done | sort | tail -n 1)
run_id="$(date -u +%Y%m%dT%H%M%SZ)-$(git rev-parse --short HEAD 2>/dev/null || echo nogit)"
./scripts/bench.sh --no-progress --experiments crash,jitter,retention --out "$reports/$run_id" --metrics "$reports/$run_id/metrics.prom" "$@"
./target/release/hookbench report index "$reports"
# Installable and packageable (too slow for .ci/run: the packaged crates build every dependency
# anew); the install reuses the bench's release build.
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}" ./scripts/package-check.sh
if [ -n "$previous" ]; then
  echo "== compared with $previous"
  if ! ./target/release/hookbench report compare "$previous" "$reports/$run_id" \
    --p99-threshold "${NIGHTLY_P99_THRESHOLD:-1.0}" --tolerance "${NIGHTLY_TOLERANCE:-0.5}"; then
    [ "${NIGHTLY_GATE:-0}" = 1 ] && exit 1
    echo "(regressions reported above; set NIGHTLY_GATE=1 to fail on them)"
  fi
fi
# The receivers in the wild, every check on every database; a verdict other than the committed
# one fails the job (examples/wild/README.md). Their Postgres is DATABASE_URL's, or else a
# throwaway container of the bench's image.
if [ -z "${DATABASE_URL:-}" ] && command -v docker >/dev/null; then
  pg=$(docker run -d --rm -e POSTGRES_HOST_AUTH_METHOD=trust -p 127.0.0.1::5432 "${HOOKBENCH_PG_IMAGE:-postgres:16-alpine}")
  trap 'docker rm -f "$pg" >/dev/null 2>&1 || true' EXIT
  DATABASE_URL="postgres://postgres@$(docker port "$pg" 5432/tcp | head -n 1)/postgres"
  export DATABASE_URL
  for _ in $(seq 60); do psql "$DATABASE_URL" -qc 'SELECT 1' >/dev/null 2>&1 && break; sleep 1; done
fi
HOOKBENCH=./target/release/hookbench ./examples/wild/audit-all.sh --out "$reports/$run_id/wild"
