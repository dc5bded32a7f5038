#!/usr/bin/env bash
# Lints the GitHub Action, every workflow and the CI examples of docs/ci.md offline:
#   - action.yml against the Actions schema, each workflow (and docs/examples/ci/github-audit.yml)
#     against the workflow schema and the rule that every job has timeout-minutes, and
#     docs/examples/ci/gitlab-ci.yml against GitLab's: check-jsonschema from PyPI, pinned, in a
#     virtualenv (its schemas are vendored in the package: nothing is downloaded at run time);
#   - each of those files by action-validator (npm, pinned in scripts/lint-actions/: its Rust
#     build as WebAssembly; `cargo install action-validator` took over 9 minutes here against
#     5 s for npm), which also resolves `needs:` and the globs of `paths:`;
#   - every `run:` script (and GitLab `script:`) by shellcheck (Debian), extracted by
#     scripts/lint-actions/runs.py, which refuses an expression `${{ }}` spliced into a script;
#     finding no script at all fails (a lint that read nothing passed nothing);
#   - the examples in docs/ci.md are the files linted here, byte for byte;
#   - and first, that each of these checks refuses its broken file in scripts/lint-actions/bad/.
# Exits 1 when a check failed; installs what is missing (pip, npm, apt), nothing else is fetched.
# The checks are functions called through `check` and `refused`, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -euo pipefail
cd "$(dirname "$0")/.."
CHECK_JSONSCHEMA_VERSION=0.39.0
lint=scripts/lint-actions
venv="${XDG_CACHE_HOME:-$HOME/.cache}/hookbench/lint-actions"

install_tools() {
  command -v shellcheck >/dev/null 2>&1 || ./scripts/apt-install.sh shellcheck
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    ./scripts/apt-install.sh nodejs npm
  fi
  if ! "$venv/bin/check-jsonschema" --version 2>/dev/null | grep -q "$CHECK_JSONSCHEMA_VERSION"; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
      ./scripts/apt-install.sh python3-venv
      python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet "check-jsonschema==$CHECK_JSONSCHEMA_VERSION"
  fi
  [ -x "$lint/node_modules/.bin/action-validator" ] ||
    (cd "$lint" && npm ci --silent --no-audit --no-fund)
}

schema() { "$venv/bin/check-jsonschema" --builtin-schema "$@"; }
action_schema() { schema vendor.github-actions "$1"; }
workflow_schema() { schema vendor.github-workflows "$@" && schema custom.github-workflows-require-timeout "$@"; }
gitlab_schema() { schema vendor.gitlab-ci "$1"; }
validator() { node "$lint/node_modules/@action-validator/cli/cli.mjs" "$1" > "$scratch/validator.out" 2>&1 || { cat "$scratch/validator.out"; return 1; }; }

# Every script of FILES passes shellcheck; no script at all fails.
scripts_pass() {
  local out
  out=$(mktemp -d "$scratch/runs.XXXX")
  "$venv/bin/python" "$lint/runs.py" "$out" "$@" > "$out.list" || { cat "$out.list"; return 1; }
  if ! compgen -G "$out/*.sh" > /dev/null; then
    echo "lint-actions: no run: script found in $* (nothing was linted)" >&2
    return 1
  fi
  shellcheck "$out"/*.sh || { cat "$out.list"; return 1; }
  tail -n 1 "$out.list"
}

# The YAML block of docs/ci.md after `<!-- file: PATH -->` is PATH's content.
docs_match() {
  "$venv/bin/python" - docs/ci.md "$@" <<'EOF'
import re, sys
doc = open(sys.argv[1]).read()
status = 0
for path in sys.argv[2:]:
    m = re.search(r"<!-- file: " + re.escape(path) + r" -->\n```ya?ml\n(.*?)```\n", doc, re.S)
    if not m:
        print(f"docs/ci.md has no block for {path}", file=sys.stderr)
        status = 1
    elif m.group(1) != open(path).read():
        print(f"docs/ci.md's block differs from {path}: copy the file into the doc", file=sys.stderr)
        status = 1
sys.exit(status)
EOF
}

refused() { # refused NAME CHECK ARGS...: CHECK must fail on ARGS
  local name=$1
  shift
  if "$@" > "$scratch/refused.out" 2>&1; then
    echo "lint-actions: self-check: $name passed $lint/bad/, it must be refused:" >&2
    cat "$scratch/refused.out" >&2
    return 1
  fi
  echo "lint-actions: self-check: $name refused"
}

self_check() {
  refused "the actions schema (unknown key)" action_schema "$lint/bad/unknown-key.action.yml"
  refused "action-validator (unknown key)" validator "$lint/bad/unknown-key.action.yml"
  refused "the workflow timeout rule" workflow_schema "$lint/bad/no-timeout.workflow.yml"
  refused "action-validator (needs a missing job)" validator "$lint/bad/needs-missing.workflow.yml"
  refused "shellcheck (bad shell line)" scripts_pass "$lint/bad/bad-shell.action.yml"
  refused "runs.py (expression in a script)" scripts_pass "$lint/bad/expression.workflow.yml"
  refused "runs.py (no script at all)" scripts_pass "$lint/bad/no-script.action.yml"
}

install_tools
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
self_check
status=0
check() { "$@" || { echo "lint-actions: FAILED: $*" >&2; status=1; }; }
workflows=(.github/workflows/*.yml docs/examples/ci/github-audit.yml)
check action_schema action.yml
check workflow_schema "${workflows[@]}"
check gitlab_schema docs/examples/ci/gitlab-ci.yml
for f in action.yml "${workflows[@]}"; do check validator "$f"; done
check scripts_pass action.yml "${workflows[@]}" docs/examples/ci/gitlab-ci.yml
check docs_match docs/examples/ci/github-audit.yml docs/examples/ci/gitlab-ci.yml
[ "$status" = 0 ] && echo "lint-actions: action.yml, ${#workflows[@]} workflows and the GitLab example passed"
exit "$status"
