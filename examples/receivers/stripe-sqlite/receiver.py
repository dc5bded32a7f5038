#!/usr/bin/env python3
"""A Stripe webhook receiver as a stranger to hookbench would write it: Python's standard library,
its own SQLite schema, Stripe's signature (`Stripe-Signature: t=...,v1=...`, verified as Stripe's
libraries do: HMAC-SHA256 of "t.body" under the endpoint's whsec_ string, any v1 entry, at most
300 s old), and real Stripe Event objects, dispatched on their type:

    payment_intent.succeeded       one row in payments: data.object.customer ("cus_42"), data.object.amount
    customer.subscription.updated  the customer's row in subscriptions: data.object.current_period_end
                                   as its version, data.object.items.data[0].price.id as its plan

It stores the customer as Stripe names it ("cus_42"), so an audit's state query takes the number
after the prefix: SELECT CAST(substr(customer, 5) AS INTEGER), version FROM subscriptions.

--mode safe records the event id and applies the effect in one transaction, and keeps the newest
subscription state; --mode unsafe checks whether the id was seen, does its work, then records it
(two copies arriving together both pass the check), and overwrites the subscription whatever its
period. GET /healthz answers 200. harness/tests/it/provider_bodies.rs audits both modes.

    python3 receiver.py --db app.db --secret whsec_... [--secret whsec_...] [--mode safe|unsafe] [--port 0]

Prints {"listening": "127.0.0.1:PORT"} once it listens.
"""

import argparse
import hashlib
import hmac
import json
import sqlite3
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
TOLERANCE_S = 300
SCHEMA = """
CREATE TABLE IF NOT EXISTS handled_events (event_id TEXT PRIMARY KEY, handled_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS payments (
    id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, payment_intent TEXT NOT NULL,
    customer TEXT NOT NULL, amount INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS subscriptions (
    customer TEXT PRIMARY KEY, subscription TEXT NOT NULL, price TEXT NOT NULL, version INTEGER NOT NULL);
"""


class Refused(Exception):
    """A request answered with a 4xx: it will not get better by sending it again."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


def verify(secrets, header, body):
    """Stripe's construct_event: the timestamp and every v1 signature from the header."""
    if not header:
        raise Refused(400, "missing Stripe-Signature")
    items = [part.split("=", 1) for part in header.split(",") if "=" in part]
    timestamps = [v for k, v in items if k == "t"]
    offered = [v for k, v in items if k == "v1"]
    if not timestamps or not offered:
        raise Refused(400, "no timestamp or no v1 signature")
    try:
        ts = int(timestamps[0])
    except ValueError:
        raise Refused(400, "bad timestamp")
    if time.time() - ts > TOLERANCE_S:
        raise Refused(400, "timestamp outside the tolerance")
    signed = f"{ts}.".encode() + body
    for secret in secrets:
        expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        if any(hmac.compare_digest(expected, o) for o in offered):
            return
    raise Refused(400, "no matching signature")


class App:
    def __init__(self, db, secrets, mode):
        self.db, self.secrets, self.mode = db, secrets, mode
        with self.connect() as conn:
            conn.executescript(SCHEMA)

    def connect(self):
        conn = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def apply(self, conn, event):
        obj = event["data"]["object"]
        if event["type"] == "payment_intent.succeeded":
            if obj["object"] != "payment_intent" or not isinstance(obj["amount"], int):
                raise Refused(400, "not a payment intent")
            conn.execute(
                "INSERT INTO payments (event_id, payment_intent, customer, amount) VALUES (?, ?, ?, ?)",
                (event["id"], obj["id"], obj["customer"], obj["amount"]))
        elif event["type"] == "customer.subscription.updated":
            if obj["object"] != "subscription" or not isinstance(obj["current_period_end"], int):
                raise Refused(400, "not a subscription")
            price = obj["items"]["data"][0]["price"]["id"]
            guard = "WHERE excluded.version > subscriptions.version" if self.mode == "safe" else ""
            conn.execute(
                "INSERT INTO subscriptions (customer, subscription, price, version) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (customer) DO UPDATE SET subscription = excluded.subscription, "
                f"price = excluded.price, version = excluded.version {guard}",
                (obj["customer"], obj["id"], price, obj["current_period_end"]))
        # Other types are acknowledged and ignored, as Stripe's docs advise.

    def handle(self, headers, body):
        verify(self.secrets, headers.get("stripe-signature"), body)
        try:
            event = json.loads(body)
            event_id, _ = event["id"], event["data"]["object"]
        except (ValueError, KeyError, TypeError):
            raise Refused(400, "not a Stripe event")
        conn = self.connect()
        try:
            if self.mode == "safe":
                conn.execute("BEGIN IMMEDIATE")
                fresh = conn.execute("INSERT OR IGNORE INTO handled_events VALUES (?, ?)",
                                     (event_id, time.time())).rowcount == 1
                if fresh:
                    self.apply(conn, event)
                conn.execute("COMMIT")
            else:
                fresh = conn.execute("SELECT 1 FROM handled_events WHERE event_id = ?", (event_id,)).fetchone() is None
                if fresh:
                    time.sleep(0.05)  # the handler's real work: the window two copies slip through
                    self.apply(conn, event)
                    conn.execute("INSERT OR IGNORE INTO handled_events VALUES (?, ?)", (event_id, time.time()))
        except (KeyError, TypeError, IndexError):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise Refused(400, "a field the handler reads is missing")
        except Exception:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
        return "applied" if fresh else "duplicate"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # a stalled header or body is dropped after 5 s
    app = None

    def answer(self, status, text):
        payload = json.dumps({"result": text}).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        self.answer(200, "ok") if self.path == "/healthz" else self.answer(404, "no such endpoint")

    def do_POST(self):
        if self.path.split("?")[0] != "/webhooks":
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
            self.answer(200, self.app.handle(self.headers, body))
        except Refused as e:
            self.answer(e.status, str(e))
        except Exception as e:  # the database failed: retry later
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
    parser.add_argument("--db", required=True, help="the SQLite file")
    parser.add_argument("--secret", action="append", required=True, help="whsec_... (repeat to rotate)")
    parser.add_argument("--mode", choices=["safe", "unsafe"], default="safe")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    Handler.app = App(args.db, args.secret, args.mode)
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
