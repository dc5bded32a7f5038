#!/usr/bin/env bash
# hookbench installs and packages as a user or crates.io would take it:
#   - `cargo install --locked --path harness` into a temporary root gives a `hookbench` that
#     answers --version and runs `model` and `sign`;
#   - `cargo package` of receivers, provision and hookbench together (hookbench's path
#     dependencies need their packages beside it; cargo packages a set of members against each
#     other) builds each packaged crate from its .crate file alone.
# Run by scripts/nightly.sh, not .ci/run: the packaged crates build in their own default dev
# profile, every dependency anew (26 minutes here the first time, 20 s once built), and the
# install is a release build (15 minutes here from nothing).
# Set CARGO_TARGET_DIR to reuse a release build for the install.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
start=$SECONDS
cargo install --locked --quiet --path harness --root "$root"
"$root/bin/hookbench" --version
"$root/bin/hookbench" model --events 1000 > "$root/model.txt"
[ -s "$root/model.txt" ] || { echo "package-check: hookbench model printed nothing" >&2; exit 1; }
echo '{}' | "$root/bin/hookbench" sign --secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw --id evt_1 - > "$root/sign.txt"
grep -qi '^webhook-signature: v1,' "$root/sign.txt" || { echo "package-check: hookbench sign printed no signature" >&2; cat "$root/sign.txt" >&2; exit 1; }
echo "package-check: cargo install --path harness works ($((SECONDS - start)) s)"
start=$SECONDS
cargo package --locked -p receivers -p provision -p hookbench
echo "package-check: cargo package of receivers, provision and hookbench verified ($((SECONDS - start)) s)"
