#!/usr/bin/env python3
"""A webhook receiver for one of ten providers, that accepts a delivery only when the provider's OWN
library says it is valid: slack (slack_sdk), twilio (twilio), square (squareup), paddle
(paddle-python-sdk), sendgrid (sendgrid), discord (PyNaCl, as Discord's docs do it), linear
(@linear/sdk, in a long-lived node helper), and, having no library, gitlab, zoom and twitch by their
documentation. The verification is scripts/provider-vectors/judges.py, the same code that judges
hookbench's signing vectors (harness/tests/vectors/providers.json).

Each delivery's id, the key of its effect:
    slack     body event_id            twilio   header i-twilio-idempotency-token
    square    body event_id            paddle   body event_id
    sendgrid  each array element's sg_event_id (one effect per element)
    discord   body id (an interaction) linear   header linear-delivery
    gitlab    header x-gitlab-event-uuid        zoom     header x-zm-trackingid
    twitch    header twitch-eventsub-message-id
twilio and square sign the URL: the one verified is http://{Host header}{request path}, what the
sender posted to. A refused signature answers 401, a body it cannot parse or without the id 400.

An effect is one row in effects(id, event_id, body_sha256). --mode safe (default) records the id in
processed and inserts the effect in ONE transaction (BEGIN IMMEDIATE): a duplicate answers 200 and
adds nothing. --mode unsafe checks processed, works for 50 ms, applies, then records: two copies
arriving together both apply. 200 is answered only after the commit. Discord: a PING (type 1) is
answered {"type":1}, anything else {"type":5} once stored. Twitch: webhook_callback_verification
answers the challenge; revocation is acknowledged. Slack url_verification and Zoom
endpoint.url_validation are answered too. None of these handshakes is an effect. GET /healthz: 200.

    scripts/provider-vectors/install.sh      (or ./install.sh here: the same)
    scripts/provider-vectors/.venv/bin/python receiver.py --provider NAME --db app.db
        (--secret S | --public-key K) [--mode safe|unsafe] [--port 0]

--public-key for sendgrid (base64 DER SubjectPublicKeyInfo) and discord (hex of the raw 32 bytes),
--secret for the others. Prints {"listening": "127.0.0.1:PORT"} once it listens. An audit judges it
with --applied-query "SELECT event_id, count(*) FROM effects GROUP BY event_id".
"""

import argparse
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "scripts", "provider-vectors"))
import judges  # noqa: E402

MAX_BODY = 1 << 20
SCHEMA = """
CREATE TABLE IF NOT EXISTS processed (event_id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, body_sha256 TEXT NOT NULL);
"""
PUBLIC_KEY_PROVIDERS = ("sendgrid", "discord")
ID_HEADERS = {
    "twilio": "i-twilio-idempotency-token", "linear": "linear-delivery", "gitlab": "x-gitlab-event-uuid",
    "zoom": "x-zm-trackingid", "twitch": "twitch-eventsub-message-id",
}
ID_FIELDS = {"slack": "event_id", "square": "event_id", "paddle": "event_id", "discord": "id"}


class Refused(Exception):
    """A request answered with a 4xx: it will not get better by sending it again."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


class Answer:
    def __init__(self, status, payload, content_type="application/json"):
        self.status, self.payload, self.content_type = status, payload, content_type


def as_json(value, status=200):
    return Answer(status, json.dumps(value).encode())


def parse(provider, body, content_type=""):
    if provider == "twilio" and not content_type.startswith("application/json"):
        try:
            return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(body)))
        except (UnicodeDecodeError, ValueError):
            raise Refused(400, "not a form body")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "not JSON")


def event_ids(provider, headers, parsed):
    """The delivery's ids (one, or one per sendgrid event); 400 when one is missing."""
    if provider in ID_HEADERS:
        ids = [headers.get(ID_HEADERS[provider])]
    elif provider == "sendgrid":
        if not isinstance(parsed, list) or not parsed:
            raise Refused(400, "not a non-empty array of events")
        ids = [e.get("sg_event_id") if isinstance(e, dict) else None for e in parsed]
    else:
        ids = [parsed.get(ID_FIELDS[provider]) if isinstance(parsed, dict) else None]
    if not all(isinstance(i, str) and i for i in ids):
        raise Refused(400, "no event id")
    return ids


class App:
    def __init__(self, provider, db, key, mode, verify=True):
        self.provider, self.db, self.key, self.mode = provider, db, key, mode
        self.verify = verify
        with self.connect() as conn:
            conn.executescript(SCHEMA)

    def connect(self):
        conn = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def handshake(self, headers, parsed):
        """The provider's set-up and control messages, answered without an effect (or None)."""
        p = self.provider
        if p == "slack" and isinstance(parsed, dict) and parsed.get("type") == "url_verification":
            return as_json({"challenge": parsed.get("challenge")})
        if p == "discord" and isinstance(parsed, dict) and parsed.get("type") == 1:
            return as_json({"type": 1})
        if p == "twitch":
            kind = headers.get("twitch-eventsub-message-type")
            if kind == "webhook_callback_verification":
                challenge = parsed.get("challenge") if isinstance(parsed, dict) else None
                if not isinstance(challenge, str):
                    raise Refused(400, "no challenge")
                return Answer(200, challenge.encode(), "text/plain")
            if kind == "revocation":
                return as_json({"result": "revoked"})
        if p == "zoom" and isinstance(parsed, dict) and parsed.get("event") == "endpoint.url_validation":
            plain = (parsed.get("payload") or {}).get("plainToken")
            if not isinstance(plain, str):
                raise Refused(400, "no plainToken")
            encrypted = hmac.new(self.key.encode(), plain.encode(), hashlib.sha256).hexdigest()
            return as_json({"plainToken": plain, "encryptedToken": encrypted})
        return None

    def handle(self, headers, body, path):
        parsed = parse(self.provider, body, headers.get("content-type", ""))
        url = f"http://{headers.get('host', '')}{path}"
        accepted, reason = judges.judge(self.provider, self.key, headers, body, url) if self.verify else (True, None)
        if not accepted:
            raise Refused(401, f"refused by {judges.library(self.provider)}: {reason}")
        answer = self.handshake(headers, parsed)
        if answer is not None:
            return answer
        ids = event_ids(self.provider, headers, parsed)
        digest = hashlib.sha256(body).hexdigest()
        conn = self.connect()
        try:
            fresh = 0
            if self.mode == "safe":
                conn.execute("BEGIN IMMEDIATE")
                for event_id in ids:
                    if conn.execute("INSERT OR IGNORE INTO processed VALUES (?)", (event_id,)).rowcount == 1:
                        conn.execute("INSERT INTO effects (event_id, body_sha256) VALUES (?, ?)", (event_id, digest))
                        fresh += 1
                conn.execute("COMMIT")
            else:
                for event_id in ids:
                    if conn.execute("SELECT 1 FROM processed WHERE event_id = ?", (event_id,)).fetchone() is None:
                        time.sleep(0.05)  # the handler's real work: the window two copies slip through
                        conn.execute("INSERT INTO effects (event_id, body_sha256) VALUES (?, ?)", (event_id, digest))
                        conn.execute("INSERT OR IGNORE INTO processed VALUES (?)", (event_id,))
                        fresh += 1
        except Exception:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
        if self.provider == "discord":
            return as_json({"type": 5})  # DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: handled, reply later
        return as_json({"result": "applied" if fresh else "duplicate"})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # a stalled header or body is dropped after 5 s
    app = None

    def send(self, answer):
        self.send_response(answer.status)
        self.send_header("content-type", answer.content_type)
        self.send_header("content-length", str(len(answer.payload)))
        self.end_headers()
        self.wfile.write(answer.payload)

    def answer(self, status, text):
        self.send(as_json({"result": text}, status))

    def do_GET(self):
        self.answer(200, "ok") if self.path == "/healthz" else self.answer(404, "no such endpoint")

    def do_POST(self):
        route = self.path.split("?")[0]
        if route != "/webhooks" and not route.startswith("/webhooks/"):
            self.answer(404, "no such endpoint")
            return
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY:
            self.answer(413, "body too large")
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if len(body) < length:
            self.close_connection = True
            return
        try:
            self.send(self.app.handle(self.headers, body, self.path))
        except Refused as e:
            self.answer(e.status, str(e))
        except Exception as e:  # the database (or the linear helper) failed: retry later
            self.answer(500, f"{type(e).__name__}: {e}")

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client left before its answer (the audit's lost-ack check does that)

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", required=True, choices=judges.PROVIDERS)
    parser.add_argument("--db", required=True, help="the SQLite file")
    key = parser.add_mutually_exclusive_group(required=True)
    key.add_argument("--secret", help="the signing secret / token (all but sendgrid and discord)")
    key.add_argument("--public-key", help="sendgrid: base64 DER SubjectPublicKeyInfo; discord: hex")
    parser.add_argument("--mode", choices=["safe", "unsafe"], default="safe")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-verify", action="store_true",
                        help="accept every delivery unverified (what the hostile-input check must fail)")
    args = parser.parse_args()
    wants_public = args.provider in PUBLIC_KEY_PROVIDERS
    if wants_public != (args.public_key is not None):
        parser.error(f"{args.provider} needs --{'public-key' if wants_public else 'secret'}")
    try:
        judges.check_key(args.provider, args.public_key or args.secret)
    except ValueError as e:
        parser.error(f"--{'public-key' if wants_public else 'secret'}: {e}")
    Handler.app = App(args.provider, args.db, args.public_key or args.secret, args.mode, not args.no_verify)
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    print(json.dumps({"listening": f"127.0.0.1:{server.server_address[1]}"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
