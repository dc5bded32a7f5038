#!/usr/bin/env bash
# Checks hookbench's provider signatures against the providers' own libraries, and against the
# committed vectors (harness/tests/vectors/providers.json):
#
#   scripts/provider-vectors/check.sh HOOKBENCH_BIN        (e.g. target/debug/hookbench)
#
# Installs the libraries (install.sh: .venv from requirements.txt, node_modules from
# package-lock.json), re-makes every case with the binary (make.py, judged by verify.py) into a
# temporary file, and prints one line per provider: the library and version, the cases it accepted
# and refused. Exits 1 when a library refuses a `valid` or `just-inside` case, when hookbench fails,
# or when the re-made file differs from the committed one (the sendgrid signature header's value
# aside: ECDSA signatures may be randomized; that the library accepts it is the check). Exits 3 when
# Python, npm or the packages cannot be had.
#
# To rewrite the committed file after a deliberate change (a new case, a library upgrade: bump
# requirements.txt from `pip freeze` of a fresh venv, or package.json + `npm install`):
#   scripts/provider-vectors/install.sh
#   python3 scripts/provider-vectors/make.py target/debug/hookbench harness/tests/vectors/providers.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
committed=${PROVIDER_VECTORS:-"$root/harness/tests/vectors/providers.json"}  # env: another file to compare with
bin=${1:?usage: check.sh HOOKBENCH_BIN}
[ -x "$bin" ] || { echo "no hookbench binary at $bin" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is needed" >&2; exit 3; }
"$here/install.sh"   # exits 3 itself when something cannot be had
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
python3 "$here/make.py" "$bin" "$tmp/providers.json" || status=1
[ -f "$tmp/providers.json" ] || exit 1
if [ ! -f "$committed" ]; then
  echo "no committed vectors at $committed (make them: python3 $here/make.py $bin $committed)" >&2
  exit 1
fi
# The committed and the re-made file, with the sendgrid signature's value blanked in both.
normalize() {
  python3 - "$1" <<'PY'
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
for case in data.get("cases", []):
    if case.get("provider") == "sendgrid" and "x-twilio-email-event-webhook-signature" in case.get("headers", {}):
        case["headers"]["x-twilio-email-event-webhook-signature"] = "<ECDSA: judged by the library, not compared>"
print(json.dumps(data, indent=2, ensure_ascii=False))
PY
}
normalize "$committed" >"$tmp/committed.norm"
normalize "$tmp/providers.json" >"$tmp/remade.norm"
if ! diff -u --label "committed $committed" --label "re-made with $bin" "$tmp/committed.norm" "$tmp/remade.norm"; then
  echo "provider vectors: the re-made cases differ from $committed" >&2
  status=1
fi
[ "$status" -eq 0 ] && echo "provider vectors: every provider's library agrees with $committed"
exit "$status"
