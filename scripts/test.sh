#!/usr/bin/env bash
# The test command (README, `just test`, .ci/run): sets up what the tests need, then runs them.
# The workspace's tests need nothing beyond cargo today.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked "$@"
