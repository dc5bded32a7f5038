#!/usr/bin/env python3
"""Makes the provider signing vectors (harness/tests/vectors/providers.json): deliveries that hookbench
signs for each of the 10 providers, from FIXED inputs, each judged by the provider's own library.

    python3 make.py HOOKBENCH_BIN OUTPUT [--python VENV_PYTHON]

For every provider it runs, with fixed secrets (for sendgrid and discord fixed private keys, below),
ids, timestamps, URLs and bodies of the provider's own shape,

    HOOKBENCH_BIN sign --signing NAME --secret S --id ID --event-type TYPE --timestamp TS [--url URL] BODYFILE
    HOOKBENCH_BIN sign --signing NAME --secret S --public-key          (sendgrid, discord)

and writes the cases below; then verify.py (run with VENV_PYTHON, default .venv/bin/python beside
this file, made by install.sh) asks each provider's library about each case and fills in `accepted`
and `library_error`. Cases, per provider:

    valid          signed and received as is, now = the signed timestamp
    tampered-body  the body sent differs by one byte from the one signed
    wrong-key      the receiver holds another secret (another public key for sendgrid/discord)
    stale          now = timestamp + tolerance + 1 (slack 301, paddle 6, linear 61, twitch 601);
                   + 3600 for the providers whose judge has no clock (twilio, square, sendgrid,
                   discord, gitlab, zoom), to record that they do not refuse old deliveries
    just-inside    now = timestamp + tolerance (only where a tolerance exists): accepted
    future         the timestamp is 3600 s ahead of now
    other-path     (twilio, square) signed for /webhooks/NAME, received at /other

Standard library only (the judging is verify.py's, in the venv). check.sh runs this and compares
with the committed file. Exits 1 when a valid or just-inside case is refused, 2 on bad usage or
when hookbench fails.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TS = 1764460800  # 2025-11-30T00:00:00Z: the signed timestamp of every case
URL = "https://hooks.example.com/webhooks/{}"
OTHER_URL = "https://hooks.example.com/other"
# The judges' clock windows in seconds (file:line in judges.py and verify-linear.mjs); the others have none.
TOLERANCE = {"slack": 300, "paddle": 5, "linear": 60, "twitch": 600}
NO_CLOCK_STALE = 3600

# Fixed key pairs, made once with `hookbench keys sendgrid` / `hookbench keys discord` (its `secret:`,
# base64 of the PKCS#8 DER private key; test keys that sign nothing but these vectors). "held" signs;
# the receiver of the wrong-key case holds the public key of "other".
SENDGRID_KEYS = {
    "held": "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmwW35OMjmWFPORe//c8XN/kqamojWxIkPgEJ96y3i8WhRANCAAQEye0dzGtzW9FOXau1Xx93ahzzA98b9y5NRp4vcHZVBH2B5BmcWuke3EL8AFx0JVHgNcm7cmF1Ms0C5wmY5/uy",
    "other": "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgtwxBL1T5ctDFDcCjfV47geSWXEbC4n2KQgqcnVtFnKyhRANCAASnjCekoX5dVS+YjcmIl57auyNZZVLCkA4FfXSe2UgTBaizvtW/zaYyGt81PV/W68S8PkfWUOlBBG5eL0RZeKv7",
}
DISCORD_KEYS = {
    "held": "MFECAQEwBQYDK2VwBCIEIBS9PhZnlzFFCBkpjbOwaJF0ykrcvlBRFSc2yr0A5yWfgSEAuVGEVDgLPhFX6y2C9muVMNGtkQ4Fgo/RmI87cgUCU3U=",
    "other": "MFECAQEwBQYDK2VwBCIEICPljJn2slGsm/YaZ2VVPtFqgXA5ZcJf9IdnPR6/RdNpgSEAJbsIC4YND5Yhwdr0GDW1/hrBtP+bwAoNsYRCxLPSs2A=",
}


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# provider -> (secret, wrong secret, id, event type, body, (old, new) one-byte tamper of the body)
PROVIDERS = {
    "slack": (
        "e6b19c573432dcc6b075501d51b51bb8", "0f2a5c8e1b4d7a0c3e6f9b2d5a8c1e4f",
        "Ev08A1B2C3D4", "app_mention",
        compact({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "team_id": "T0001", "api_app_id": "A0001",
                 "event": {"type": "app_mention", "user": "U0001", "text": "<@U0002> deploy 42",
                           "ts": "1764460799.000100", "channel": "C0001", "event_ts": "1764460799.000100"},
                 "type": "event_callback", "event_id": "Ev08A1B2C3D4", "event_time": 1764460799}),
        ("deploy 42", "deploy 43")),
    "twilio": (
        "9a8b7c6d5e4f30211a2b3c4d5e6f7081", "1f2e3d4c5b6a79880f1e2d3c4b5a6978",
        "7f3e5a2c-9d1b-4e8f-a6c0-2b4d6f8a0c1e", "incoming-message",
        "AccountSid=AC0123456789abcdef0123456789abcdef&ApiVersion=2010-04-01&Body=Deploy+42&"
        "From=%2B15005550006&FromCountry=US&MessageSid=SM0123456789abcdef0123456789abcdef&NumMedia=0&"
        "NumSegments=1&SmsMessageSid=SM0123456789abcdef0123456789abcdef&SmsStatus=received&"
        "To=%2B15005550010&ToCountry=US",
        ("Deploy+42", "Deploy+43")),
    "square": (
        "Jx9qK3vR7tYw2mZp5sLc8A", "Qb4nT8wE1rY6uI0oP3aS5d",
        "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc", "payment.updated",
        compact({"merchant_id": "6SSW7HV8K2ST5", "type": "payment.updated",
                 "event_id": "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc", "created_at": "2025-11-29T23:59:59.000Z",
                 "data": {"type": "payment", "id": "KkAkhdMsgzn59SM8A89WgKwekxLZY",
                          "object": {"payment": {"id": "KkAkhdMsgzn59SM8A89WgKwekxLZY",
                                                 "amount_money": {"amount": 4200, "currency": "USD"},
                                                 "status": "COMPLETED", "version": 3,
                                                 "location_id": "S8GWD5R9QB376",
                                                 "order_id": "03O3USaPaAaFnI6kkwB1JxGgBsUZY"}}}}),
        ('"amount":4200', '"amount":4201')),
    "paddle": (
        "pdl_ntfset_01hv8x2acma2gz3he0njkz4tr6_q7VnW0v4m8Kx3yZ1tB5cR9eH2jL6pD0s",
        "pdl_ntfset_01hv8x2acma2gz3he0njkz4tr6_z9YmX8w7v6U5t4S3r2Q1p0O9n8M7l6K5",
        "evt_01hv8x2acma2gz3he0njkz4tr6", "transaction.completed",
        compact({"event_id": "evt_01hv8x2acma2gz3he0njkz4tr6", "event_type": "transaction.completed",
                 "occurred_at": "2025-11-29T23:59:59.000000Z", "notification_id": "ntf_01hv8x2af8mqpnvf9g5ypd0h3e",
                 "data": {"id": "txn_01hv8wptq8987qeep44cyrewp9", "status": "completed",
                          "customer_id": "ctm_01hv6y1jedq4p1n0yqn5ba3ky4", "currency_code": "USD",
                          "details": {"totals": {"total": "4200", "currency_code": "USD"}}}}),
        ('"total":"4200"', '"total":"4201"')),
    "sendgrid": (
        SENDGRID_KEYS["held"], SENDGRID_KEYS["other"],
        "sg-evt-0001-delivered-AZq8Lm3x", "delivered",
        compact([{"email": "customer@example.com", "timestamp": 1764460799, "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>",
                  "event": "delivered", "category": ["receipts"], "sg_event_id": "sg-evt-0001-delivered-AZq8Lm3x",
                  "sg_message_id": "14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.0", "response": "250 OK"}]),
        ("250 OK", "251 OK")),
    "discord": (
        DISCORD_KEYS["held"], DISCORD_KEYS["other"],
        "1186438393421099008", "application_command",
        compact({"app_permissions": "442368", "application_id": "1186437905111613440",
                 "channel_id": "1186438201405046815", "guild_id": "1186438201405046812",
                 "id": "1186438393421099008", "type": 2, "version": 1,
                 "token": "aW50ZXJhY3Rpb246MTE4NjQzODM5MzQyMTA5OTAwODpGa2VUb2tlbg",
                 "data": {"id": "1186438054517133342", "name": "deploy", "type": 1,
                          "options": [{"name": "build", "type": 4, "value": 42}]},
                 "member": {"user": {"id": "80351110224678912", "username": "hookbench"}, "roles": []}}),
        ('"value":42', '"value":43')),
    "linear": (
        "lin_wh_4c7d1f0a9b2e8c3d6f5a1b4e7c0d3f6a9b2c5e8f1a4d7b0c",
        "lin_wh_9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f",
        "234d1a4e-b617-4388-90fe-adc3633d6b72", "Issue",
        compact({"action": "update", "type": "Issue", "createdAt": "2025-11-29T23:59:59.000Z",
                 "organizationId": "e0f4b1a2-7c3d-4e5f-8a9b-0c1d2e3f4a5b",
                 "data": {"id": "9f4c2a1e-3b5d-4c7e-8f9a-1b2c3d4e5f6a", "identifier": "ENG-42", "number": 42,
                          "title": "Deploy 42", "priority": 2, "teamId": "5d6e7f8a-9b0c-4d1e-8f2a-3b4c5d6e7f8a"},
                 "url": "https://linear.app/hookbench/issue/ENG-42/deploy-42",
                 "webhookTimestamp": TS * 1000, "webhookId": "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"}),
        ('"priority":2', '"priority":3')),
    "gitlab": (
        "glwht-7Kp2Rm9Xq4Vz8Nt3Ls6Bw1Hc5Yd0Fj", "glwht-3Hs8Dk1Lp6Qw9Er2Ty5Ui7Op0As4Df",
        "c1e0f4b2-8a3d-4c6e-9f7a-2b5d8e1f3a6c", "Push Hook",
        compact({"object_kind": "push", "event_name": "push", "before": "95790bf891e76fee5e1747ab589903a6a1f80f22",
                 "after": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "ref": "refs/heads/main",
                 "checkout_sha": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "user_id": 4, "user_name": "Hook Bench",
                 "user_username": "hookbench", "project_id": 15,
                 "project": {"id": 15, "name": "app", "path_with_namespace": "hookbench/app",
                             "web_url": "https://gitlab.example.com/hookbench/app"},
                 "commits": [{"id": "da1560886d4f094c3e6c9ef40349f7d38b5d27d7", "message": "Deploy 42\n",
                              "timestamp": "2025-11-29T23:59:59+00:00"}],
                 "total_commits_count": 1}),
        ("Deploy 42", "Deploy 43")),
    "zoom": (
        "Zt8qW3nR6vY1mK4pS7xB0c", "Hd2fG5jK8lZ1xC4vB7nM0q",
        "v=2.0;clid=aw1;rid=WEB_9f2c7a1e4b6d4e0a8c3b5d7f1a2e4c6b", "meeting.started",
        compact({"event": "meeting.started", "event_ts": TS * 1000 - 1000,
                 "payload": {"account_id": "AAAAAABBBB", "object": {
                     "id": "85746065432", "uuid": "4444AAAiAAAAAiAiAiiAii==", "host_id": "z8yAAAAA8bbbQ",
                     "topic": "Deploy 42", "type": 2, "start_time": "2025-11-29T23:59:58Z",
                     "timezone": "UTC", "duration": 60}}}),
        ("Deploy 42", "Deploy 43")),
    "twitch": (
        "hookbench-twitch-eventsub-secret-0001", "hookbench-twitch-eventsub-secret-0002",
        "befa7b53-d79d-478f-86b9-120f112b044e", "channel.follow",
        compact({"subscription": {"id": "f1c2a387-161a-49f9-a165-0f21d7a4e1c4", "status": "enabled",
                                  "type": "channel.follow", "version": "2",
                                  "condition": {"broadcaster_user_id": "1337", "moderator_user_id": "1337"},
                                  "transport": {"method": "webhook", "callback": URL.format("twitch")},
                                  "created_at": "2025-11-29T23:00:00.000000000Z", "cost": 0},
                 "event": {"user_id": "1234", "user_login": "cool_user", "user_name": "Cool_User",
                           "broadcaster_user_id": "1337", "broadcaster_user_login": "cooler_user",
                           "broadcaster_user_name": "Cooler_User", "followed_at": "2025-11-29T23:59:59.000000000Z"}}),
        ('"user_id":"1234"', '"user_id":"1235"')),
}
URL_SIGNED = {"twilio", "square"}
ASYMMETRIC = {"sendgrid", "discord"}


def fail(message):
    print(f"make.py: {message}", file=sys.stderr)
    sys.exit(2)


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"{' '.join(cmd[:4])} ... failed ({result.returncode}): {result.stderr.strip()}")
    return result.stdout


def sign(hookbench, provider, secret, msg_id, event_type, body, tmp):
    path = os.path.join(tmp, f"{provider}.body")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(body)
    cmd = [hookbench, "sign", "--signing", provider, "--secret", secret, "--id", msg_id,
           "--event-type", event_type, "--timestamp", str(TS)]
    if provider in URL_SIGNED:
        cmd += ["--url", URL.format(provider)]
    headers = {}
    for line in run(cmd + [path]).splitlines():
        # `# post to: URL` follows a Twilio JSON body's headers: the URL with its bodySHA256.
        if not line.strip() or line.startswith("# "):
            continue
        name, sep, value = line.partition(": ")
        if not sep:
            fail(f"hookbench sign printed a line that is not `name: value`: {line!r}")
        headers[name] = value
    return headers


def public_key(hookbench, provider, private):
    return run([hookbench, "sign", "--signing", provider, "--secret", private, "--public-key"]).strip()


def cases_for(hookbench, provider, tmp):
    secret, wrong, msg_id, event_type, body, (old, new) = PROVIDERS[provider]
    assert body.count(old) == 1 and len(old.encode()) == len(new.encode()), provider
    tampered = body.replace(old, new)
    assert sum(a != b for a, b in zip(body.encode(), tampered.encode())) == 1, provider
    headers = sign(hookbench, provider, secret, msg_id, event_type, body, tmp)
    if provider in ASYMMETRIC:
        held, other = public_key(hookbench, provider, secret), public_key(hookbench, provider, wrong)
    else:
        held, other = secret, wrong
    url = URL.format(provider)
    tolerance = TOLERANCE.get(provider)

    def case(name, now=TS, verifier_key=held, sent=body, received=url):
        return {
            "provider": provider, "case": name,
            "signing_key": secret, "verifier_key": verifier_key,
            "id": msg_id, "event_type": event_type, "timestamp": TS,
            "signed_url": url if provider in URL_SIGNED else None, "received_url": received,
            "now": now, "headers": headers, "signed_body": body, "body": sent,
            "accepted": None, "library_error": None,
        }

    out = [
        case("valid"),
        case("tampered-body", sent=tampered),
        case("wrong-key", verifier_key=other),
        case("stale", now=TS + (tolerance + 1 if tolerance else NO_CLOCK_STALE)),
    ]
    if tolerance:
        out.append(case("just-inside", now=TS + tolerance))
    out.append(case("future", now=TS - 3600))
    if provider in URL_SIGNED:
        out.append(case("other-path", received=OTHER_URL))
    return out


# Twilio's JSON variant: the same callback's pairs as a JSON object, signed through its hash in the
# URL (`?bodySHA256=<hex>`, which the sender adds to the URL it posts to; RequestValidator compares
# it with the body, then the signature over the whole URL).
TWILIO_JSON_BODY = compact({
    "AccountSid": "AC0123456789abcdef0123456789abcdef", "ApiVersion": "2010-04-01", "Body": "Deploy 42",
    "From": "+15005550006", "MessageSid": "SM0123456789abcdef0123456789abcdef", "MessageStatus": "received",
    "To": "+15005550010",
})


def with_body_hash(url, body):
    return f"{url}?bodySHA256={hashlib.sha256(body.encode('utf-8')).hexdigest()}"


def twilio_json_cases(hookbench, tmp):
    secret, wrong, msg_id, event_type, _, _ = PROVIDERS["twilio"]
    body = TWILIO_JSON_BODY
    tampered = body.replace("Deploy 42", "Deploy 43")
    headers = sign(hookbench, "twilio", secret, msg_id, event_type, body, tmp)
    url = URL.format("twilio")

    def case(name, now=TS, verifier_key=secret, sent=body, received=url):
        # The sender posts each body to the URL with that body's hash: a tampered body arrives
        # with its own hash, which no longer matches the URL the signature covers.
        return {
            "provider": "twilio", "case": name, "query": "body-sha256",
            "signing_key": secret, "verifier_key": verifier_key,
            "id": msg_id, "event_type": event_type, "timestamp": TS,
            "signed_url": url, "received_url": with_body_hash(received, sent),
            "now": now, "headers": headers, "signed_body": body, "body": sent,
            "accepted": None, "library_error": None,
        }

    return [
        case("valid"),
        case("tampered-body", sent=tampered),
        case("wrong-key", verifier_key=wrong),
        case("stale", now=TS + NO_CLOCK_STALE),
        case("future", now=TS - 3600),
        case("other-path", received=OTHER_URL),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("hookbench", help="the hookbench binary (target/debug/hookbench)")
    parser.add_argument("output", help="the vectors file to write (harness/tests/vectors/providers.json)")
    parser.add_argument("--python", default=os.path.join(HERE, ".venv", "bin", "python"),
                        help="the venv's python, with requirements.txt installed (install.sh)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for provider in PROVIDERS:
            cases += cases_for(args.hookbench, provider, tmp)
            if provider == "twilio":
                cases += twilio_json_cases(args.hookbench, tmp)
        unjudged = os.path.join(tmp, "cases.json")
        with open(unjudged, "w", encoding="utf-8") as f:
            json.dump({"cases": cases}, f, ensure_ascii=False)
        # verify.py judges every case and writes the file; its exit code is ours (1: a valid case refused).
        return subprocess.run([args.python, os.path.join(HERE, "verify.py"), unjudged, "--out", args.output]).returncode


if __name__ == "__main__":
    sys.exit(main())
