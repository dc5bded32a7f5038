"""Asks each provider's own library whether each case of a provider vectors file is a valid delivery,
with the clock set to the case's `now`, and records the answer in `accepted` and `library_error`.

    .venv/bin/python verify.py CASES.json [--out OUT.json] [--verbose]

Run it in the venv that install.sh makes (the libraries of requirements.txt) with node_modules from
`npm ci` here (linear is judged by @linear/sdk through verify-linear.mjs). make.py calls it to fill
in the vectors it makes; by hand it re-judges a file (--out absent: only prints). Prints one line
per provider: the library and version, and how many cases it accepted and refused (--verbose: every
case). Exits 1 when a `valid` or `just-inside` case is refused.

How each judge reads the clock, and how it is set here (files under .venv/lib/python3.11/site-packages/):

- slack_sdk 3.48.0: slack_sdk/signature/__init__.py line 5 `from time import time`, line 17
  Clock.now() returns `time()` (the module's own name, looked up at call time), line 69 compares it:
  patched as slack_sdk.signature.time.
- paddle-python-sdk 1.16.1: paddle_billing/Notifications/Verifier.py line 2 `from time import time`,
  line 41 `now = time()`: patched as paddle_billing.Notifications.Verifier.time. Lines 31-32 turn the
  check off when the environment has TEST_MODE=1: it is removed from the environment here.
- gitlab/zoom/twitch (judges.py): `time.time()`: time.time is patched.
- @linear/sdk 98.0.0: Date.now() (dist/webhooks-BtY8wrj8.mjs line 225): verify-linear.mjs replaces it
  with the case's now in ms for the one call.
- twilio (request_validator.py), squareup (square/utils/webhooks_helper.py), sendgrid
  (sendgrid/helpers/eventwebhook/__init__.py) and PyNaCl (nacl/signing.py) read no clock at all,
  nor does any of them use datetime; time.time is patched all the same.
None of the judges uses datetime.now, so it is not patched.
"""

import argparse
import contextlib
import json
import os
import sys
from collections import OrderedDict
from http.client import HTTPMessage
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judges  # noqa: E402

MUST_ACCEPT = ("valid", "just-inside")


@contextlib.contextmanager
def clock(now):
    fake = lambda: float(now)  # noqa: E731
    env = {k: v for k, v in os.environ.items() if k != "TEST_MODE"}
    with mock.patch("time.time", fake), \
            mock.patch("slack_sdk.signature.time", fake), \
            mock.patch("paddle_billing.Notifications.Verifier.time", fake), \
            mock.patch.dict(os.environ, env, clear=True):
        yield


def headers_of(case):
    """The headers as a receiver's framework hands them over: http.client.HTTPMessage, whose get() is
    case-insensitive (hookbench prints lower-case names; paddle's Verifier asks for "Paddle-Signature")."""
    message = HTTPMessage()
    for name, value in case["headers"].items():
        message[name] = value
    return message


def decide(case):
    import slack_sdk.signature  # noqa: F401  (imported so that the patches above find them)
    import paddle_billing.Notifications.Verifier  # noqa: F401
    with clock(case["now"]):
        accepted, reason = judges.judge(case["provider"], case["verifier_key"], headers_of(case),
                                        case["body"].encode("utf-8"), case["received_url"], now=case["now"])
    return accepted, reason


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", help="a vectors file ({\"cases\": [...]})")
    parser.add_argument("--out", help="write the judged file here")
    parser.add_argument("--verbose", action="store_true", help="print every case's decision")
    args = parser.parse_args()
    with open(args.cases, encoding="utf-8") as f:
        data = json.load(f)
    cases = data["cases"]
    tally = OrderedDict()
    bad = []
    for case in cases:
        accepted, reason = decide(case)
        case["accepted"], case["library_error"] = accepted, reason
        t = tally.setdefault(case["provider"], {"accepted": [], "refused": []})
        t["accepted" if accepted else "refused"].append(case["case"])
        if args.verbose:
            print(f"  {case['provider']:9} {case['case']:14} {'accepted' if accepted else 'refused '} {reason or ''}")
        if case["case"] in MUST_ACCEPT and not accepted:
            bad.append(f"{case['provider']} {case['case']}: {reason}")
    libraries = OrderedDict((p, judges.library(p)) for p in tally)
    for provider, t in tally.items():
        print(f"{provider:9} {libraries[provider]}: accepted {len(t['accepted'])} "
              f"({', '.join(t['accepted'])}), refused {len(t['refused'])} ({', '.join(t['refused'])})")
    if args.out:
        out = OrderedDict()
        out["about"] = ("hookbench's provider signatures (`hookbench sign --signing NAME`), each judged by the "
                        "provider's own library; made by scripts/provider-vectors/make.py, checked by check.sh")
        out["libraries"] = libraries
        out["cases"] = cases
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=2, ensure_ascii=False)
            f.write("\n")
    for line in bad:
        print(f"REFUSED, but must be accepted: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
