#!/usr/bin/env bash
# Runs action.yml's own shell steps here, as a runner would, with the environment the runner
# gives them (RUNNER_OS, RUNNER_TEMP, GITHUB_PATH, GITHUB_OUTPUT and the inputs as env):
#   - install: a release whose archive matches its .sha256 is installed and runs; one that does
#     not is refused (exit 1, nothing installed); a runner with no released binary falls back to
#     `cargo install --locked --path harness` in the action's checkout. GitHub's release server
#     cannot be reached from here, so `gh` is a stand-in that serves a release made here from
#     the real binary, and for the fallback `cargo` one that records what it was asked;
#   - audit: the real binary against the Python example receiver, safe and unsafe: the step
#     exits 0 and 1, writes them as the exit-code output, writes the report and the JUnit file,
#     and the secret is never among hookbench's arguments (it goes as HOOKBENCH_AUDIT_SECRET).
#   scripts/action-steps.sh [BINARY]    default: $HOOKBENCH_BIN or target/debug/hookbench
# Needs scripts/lint-actions.sh's virtualenv (ruamel.yaml reads action.yml).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
binary=$(realpath "${1:-${HOOKBENCH_BIN:-${CARGO_TARGET_DIR:-target}/debug/hookbench}}")
python="${XDG_CACHE_HOME:-$HOME/.cache}/hookbench/lint-actions/bin/python"
[ -x "$python" ] || { echo "action-steps: run scripts/lint-actions.sh first (its virtualenv reads action.yml)" >&2; exit 2; }
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
work=$(mktemp -d)
# shellcheck source=scripts/example-receiver.sh
source scripts/example-receiver.sh
trap 'example_receiver_stop; rm -rf "$work"' EXIT
fail() { echo "action-steps: FAILED: $*" >&2; exit 1; }

# action.yml's step NAME's script into FILE.
step_script() {
  "$python" - "$1" "$2" <<'EOF'
import sys
from ruamel.yaml import YAML
steps = YAML(typ="safe").load(open("action.yml"))["runs"]["steps"]
script = [s["run"] for s in steps if s.get("name") == sys.argv[1]]
if len(script) != 1:
    sys.exit(f"action.yml has {len(script)} steps named {sys.argv[1]!r}")
open(sys.argv[2], "w").write(script[0])
EOF
}
step_script "install hookbench" "$work/install.sh"
step_script audit "$work/audit.sh"

# --- install ---------------------------------------------------------------------------------
tag=v0.1.0 target=x86_64-unknown-linux-gnu
asset="hookbench-$tag-$target.tar.gz"
mkdir -p "$work/release" "$work/stand-ins"
# As release.yml packs it: the binary, named hookbench, at the archive's root.
mkdir -p "$work/stage" && cp "$binary" "$work/stage/hookbench"
tar -czf "$work/release/$asset" -C "$work/stage" hookbench
(cd "$work/release" && sha256sum "$asset" > "$asset.sha256")
cat > "$work/stand-ins/gh" <<'EOF'
#!/usr/bin/env bash
# GitHub's CLI, for `release view` and `release download --dir DIR` of the release made here.
case "$1 $2" in
  "release view") echo v0.1.0 ;;
  "release download")
    while [ $# -gt 0 ]; do [ "$1" = --dir ] && dir=$2; shift; done
    cp "$FAKE_RELEASE"/* "$dir"/ ;;
  *) exit 1 ;;
esac
EOF
cat > "$work/stand-ins/cargo" <<'EOF'
#!/usr/bin/env bash
# Records where and how cargo was asked to install, and installs the real binary.
echo "$(pwd) $*" > "$CARGO_CALLS"
while [ $# -gt 0 ]; do [ "$1" = --root ] && root=$2; shift; done
mkdir -p "$root/bin" && cp "$REAL_BINARY" "$root/bin/hookbench"
EOF
chmod +x "$work/stand-ins/gh" "$work/stand-ins/cargo"
install_step() { # install_step OS ARCH: runs the step in a fresh RUNNER_TEMP; its exit status
  rm -rf "$work/runner" && mkdir -p "$work/runner"
  (PATH="$work/stand-ins:$PATH" FAKE_RELEASE="$work/release" REAL_BINARY="$binary" \
    CARGO_CALLS="$work/cargo-calls" RUNNER_TEMP="$work/runner" RUNNER_OS=$1 RUNNER_ARCH=$2 \
    GITHUB_PATH="$work/runner/path" HOOKBENCH_VERSION=latest ACTION_PATH="$repo" \
    ACTION_REPOSITORY=hookbench/hookbench GH_TOKEN=unused bash "$work/install.sh") > "$work/install.log" 2>&1
}
install_step Linux X64 || { cat "$work/install.log"; fail "the release's binary was not installed"; }
grep -q "from hookbench/hookbench's release" "$work/install.log" || fail "install did not use the release"
"$(cat "$work/runner/path")/hookbench" --version > /dev/null || fail "the installed binary does not run"
echo "action-steps: install: the release's binary installed, checked against its .sha256"
echo "tampered" >> "$work/release/$asset"
if install_step Linux X64; then fail "an archive that does not match its .sha256 was installed"; fi
grep -q "does not match its .sha256" "$work/install.log" || { cat "$work/install.log"; fail "no checksum error"; }
[ ! -e "$work/runner/hookbench/bin/hookbench" ] || fail "a tampered archive left a binary behind"
echo "action-steps: install: a tampered archive refused, nothing installed"
rm "$work/release/$asset.sha256"
if install_step Linux X64; then fail "an archive without its .sha256 was installed"; fi
grep -q "has no $asset.sha256" "$work/install.log" || { cat "$work/install.log"; fail "no missing-checksum error"; }
echo "action-steps: install: an archive without its .sha256 refused"
install_step Windows X64 || { cat "$work/install.log"; fail "the source fallback failed"; }
grep -q "^$repo install --locked --path harness --root " "$work/cargo-calls" ||
  fail "the fallback ran: $(cat "$work/cargo-calls")"
echo "action-steps: install: no binary for the runner: cargo install --locked --path harness"

# --- audit -----------------------------------------------------------------------------------
mkdir -p "$work/wrapper"
# hookbench as the step finds it on PATH: the real binary, its arguments kept to look at.
printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$@" > "%s"\nexec "%s" "$@"\n' "$work/argv" "$binary" > "$work/wrapper/hookbench"
chmod +x "$work/wrapper/hookbench"
audit_step() { # audit_step MODE WANT
  local mode=$1 want=$2 dir="$work/$1" status
  example_receiver_start "$dir" "$mode" "$secret"
  set +e
  (cd "$dir" && PATH="$work/wrapper:$PATH" GITHUB_OUTPUT="$dir/output" URL="http://$addr/webhooks" \
    HOOKBENCH_AUDIT_SECRET=$secret OBSERVE_DB="sqlite://$dir/app.db" \
    APPLIED_QUERY="SELECT event_id, count(*) FROM payments GROUP BY event_id" \
    UPDATE_APPLIED_QUERY='' STATE_QUERY='' DEAD_LETTER_QUERY='' CONFIG='' JUNIT='' \
    REPORT_DIR=hookbench-report \
    EXTRA_ARGS=$'--payload\n'"$repo"$'/examples/receivers/python-sqlite/template.json\n--checks\nsequential-duplicate,concurrent-copies\n--copies\n4\n' \
    bash "$work/audit.sh") > "$dir/step.log" 2>&1
  status=$?
  set -e
  example_receiver_stop
  [ "$status" = "$want" ] || { cat "$dir/step.log"; fail "$mode: the step exited $status, not $want"; }
  grep -qx "exit-code=$want" "$dir/output" || fail "$mode: output exit-code is not $want: $(cat "$dir/output")"
  [ -s "$dir/hookbench-report/report.json" ] || fail "$mode: no report in report-dir"
  [ -s "$dir/hookbench-report/junit.xml" ] || fail "$mode: no JUnit file"
  if grep -qF "$secret" "$work/argv"; then fail "$mode: the secret was on hookbench's command line"; fi
  echo "action-steps: audit: $mode mode: exit $status, output exit-code=$want, report and JUnit written, no secret in argv"
}
audit_step safe 0
audit_step unsafe 1
