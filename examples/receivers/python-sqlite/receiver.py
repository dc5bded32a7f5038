#!/usr/bin/env python3
"""A webhook receiver written as a stranger to hookbench would write it: Python's standard library,
its own SQLite schema, Standard Webhooks signatures, and a JSON body of its own shape:

    {"id": "evt_1", "type": "payment.succeeded",
     "data": {"customer": "cus_42", "amount_cents": 1500}}
    {"id": "evt_2", "type": "subscription.updated",
     "data": {"customer": "cus_42", "plan": "pro", "version": 3}}

--mode safe records the event id and applies the effect in one transaction, and guards plan
updates by version; --mode unsafe checks whether the id was seen, does its work, then records it
(two copies arriving together both pass the check) and overwrites the plan whatever its version.
--mode slow is safe, with a handler that holds the receiver's one lock for --delay seconds (a
receiver with a single worker, or a downstream API it calls one request at a time): its capacity
is 1 / delay events per second. --refuse-account N makes the handler fail on payments for customer
N (a poison event): in safe and slow modes it rolls back, parks the event in dead_letters and
answers 422; in unsafe mode it answers 500, and the sender retries it.
--mode double-update is safe, except that its update handler runs twice for each update (a retry
wrapper that re-runs it after a slow first run): the version guard keeps the state right, and
the handler's own side effect happens twice. --mode dedupe-object is safe, and also keeps one
payment per payment object (`data.payment`, the template's `pay_{{object}}`, in a table keyed on
it): two events with different ids for one change apply it once. --log-updates writes one row per update handler call
into update_log, for `--update-applied-query` to count.
With --sink URL, each applied payment also calls that URL (the "downstream service") with an
Idempotency-Key header. GET /healthz answers 200. `hookbench audit` is tested against every mode
(docs/audit.md).

    python3 receiver.py --db app.db --secret whsec_... [--secret whsec_...]
        [--mode safe|unsafe|slow|double-update|dedupe-object] [--log-updates]
        [--delay 0.02] [--refuse-account N] [--port 0] [--pid-file app.pid]

Prints {"listening": "127.0.0.1:PORT"} once it listens (and writes its pid to --pid-file).
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import sqlite3
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
TOLERANCE_S = 300
SCHEMA = """
CREATE TABLE IF NOT EXISTS handled_events (event_id TEXT PRIMARY KEY, handled_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS payments (
    id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, customer INTEGER NOT NULL, cents INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS subscriptions (
    customer INTEGER PRIMARY KEY, plan TEXT NOT NULL, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS dead_letters (event_id TEXT PRIMARY KEY, reason TEXT NOT NULL, body TEXT NOT NULL);
"""
UPDATE_LOG = """
CREATE TABLE IF NOT EXISTS update_log (
    id INTEGER PRIMARY KEY, event_id TEXT NOT NULL, customer INTEGER NOT NULL, version INTEGER NOT NULL);
"""
ONE_PAYMENT_PER_OBJECT = "CREATE TABLE IF NOT EXISTS payment_objects (object TEXT PRIMARY KEY)"
# The modes that record the event id and apply the effect in one transaction.
TRANSACTIONAL = ("safe", "slow", "double-update", "dedupe-object")


class Refused(Exception):
    """A request answered with a 4xx: it will not get better by sending it again."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status


def verify(secrets, headers, body):
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get_all("webhook-signature") or []
    if not msg_id or not timestamp or not signatures:
        raise Refused(400, "missing webhook headers")
    try:
        ts = int(timestamp)
    except ValueError:
        raise Refused(400, "bad webhook-timestamp")
    if abs(time.time() - ts) > TOLERANCE_S:
        raise Refused(400, "timestamp outside the tolerance")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    offered = [s.split(",", 1)[1] for line in signatures for s in line.split() if s.startswith("v1,")]
    for secret in secrets:
        key = base64.b64decode(secret.removeprefix("whsec_"))
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        if any(hmac.compare_digest(expected, o) for o in offered):
            return msg_id
    raise Refused(400, "no matching signature")


def parse(body, msg_id):
    try:
        event = json.loads(body)
        data = event["data"]
        customer = int(str(data["customer"]).removeprefix("cus_"))
    except (ValueError, KeyError, TypeError):
        raise Refused(400, "malformed event")
    if event.get("id") != msg_id:
        raise Refused(400, "body id does not match webhook-id")
    return event, data, customer


class Poison(Exception):
    """The handler cannot apply this event, however often it is sent."""


class App:
    def __init__(self, db, secrets, mode, sink, delay=0.0, refuse_account=None, log_updates=False):
        self.db, self.secrets, self.mode, self.sink = db, secrets, mode, sink
        self.delay, self.refuse_account, self.log_updates = delay, refuse_account, log_updates
        self.one_worker = threading.Lock()
        with self.connect() as conn:
            conn.executescript(SCHEMA)
            if log_updates:
                conn.executescript(UPDATE_LOG)
            if mode == "dedupe-object":
                conn.execute(ONE_PAYMENT_PER_OBJECT)

    def connect(self):
        conn = sqlite3.connect(self.db, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def call_sink(self, event_id, cents):
        if not self.sink:
            return
        request = urllib.request.Request(
            self.sink, data=json.dumps({"event_id": event_id, "cents": cents}).encode(),
            headers={"Idempotency-Key": event_id, "Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()

    def apply(self, conn, event, data, customer):
        if event.get("type") == "payment.succeeded":
            cents = data.get("amount_cents")
            if not isinstance(cents, int) or not -10**12 <= cents <= 10**12:
                raise Refused(400, "amount_cents out of range")
            if customer == self.refuse_account:
                raise Poison(f"customer {customer} cannot be charged")
            if self.mode == "dedupe-object":
                # The payment object's id decides, whatever the event's id: a second event for
                # the same payment (a semantic duplicate) applies nothing.
                payment = data.get("payment")
                if not isinstance(payment, str) or not payment:
                    raise Refused(400, "payment missing")
                if not conn.execute("INSERT OR IGNORE INTO payment_objects (object) VALUES (?)",
                                    (payment,)).rowcount:
                    return None
            conn.execute("INSERT INTO payments (event_id, customer, cents) VALUES (?, ?, ?)",
                         (event["id"], customer, cents))
            return cents
        if event.get("type") == "subscription.updated":
            version = data.get("version")
            if not isinstance(version, int):
                raise Refused(400, "version must be an integer")
            for _ in range(2 if self.mode == "double-update" else 1):
                self.update_plan(conn, event, data, customer, version)
            return None
        raise Refused(400, "unknown event type")

    def update_plan(self, conn, event, data, customer, version):
        guarded = self.mode in ("safe", "double-update", "dedupe-object")
        guard = "WHERE excluded.version > subscriptions.version" if guarded else ""
        conn.execute(
            "INSERT INTO subscriptions (customer, plan, version) VALUES (?, ?, ?) "
            f"ON CONFLICT (customer) DO UPDATE SET plan = excluded.plan, version = excluded.version {guard}",
            (customer, str(data.get("plan")), version))
        if self.log_updates:
            conn.execute("INSERT INTO update_log (event_id, customer, version) VALUES (?, ?, ?)",
                         (event["id"], customer, version))

    def dead_letter(self, msg_id, reason, body):
        conn = self.connect()
        try:
            conn.execute("INSERT OR IGNORE INTO dead_letters VALUES (?, ?, ?)",
                         (msg_id, reason, body.decode("utf-8", "replace")))
        finally:
            conn.close()

    def handle(self, headers, body):
        msg_id = verify(self.secrets, headers, body)
        event, data, customer = parse(body, msg_id)
        if self.mode == "slow":
            with self.one_worker:
                time.sleep(self.delay)
                return self.handle_parsed(msg_id, event, data, customer, body)
        return self.handle_parsed(msg_id, event, data, customer, body)

    def handle_parsed(self, msg_id, event, data, customer, body):
        conn = self.connect()
        try:
            if self.mode in TRANSACTIONAL:
                conn.execute("BEGIN IMMEDIATE")
                fresh = conn.execute("INSERT OR IGNORE INTO handled_events VALUES (?, ?)",
                                     (msg_id, time.time())).rowcount == 1
                cents = self.apply(conn, event, data, customer) if fresh else None
                conn.execute("COMMIT")
            else:
                seen = conn.execute("SELECT 1 FROM handled_events WHERE event_id = ?", (msg_id,)).fetchone()
                fresh = seen is None
                cents = None
                if fresh:
                    time.sleep(0.05)  # the handler's real work: the window two copies slip through
                    cents = self.apply(conn, event, data, customer)
                    conn.execute("INSERT OR IGNORE INTO handled_events VALUES (?, ?)", (msg_id, time.time()))
        except Poison as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self.mode == "unsafe":
                raise
            self.dead_letter(msg_id, str(e), body)
            raise Refused(422, f"parked as a dead letter: {e}")
        except Exception:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            conn.close()
        if fresh and cents is not None:
            self.call_sink(msg_id, cents)
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
        if self.path == "/healthz":
            self.answer(200, "ok")
        else:
            self.answer(404, "no such endpoint")

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
        except Exception as e:  # the database or the sink failed: retry later
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
    parser.add_argument("--mode", choices=["safe", "unsafe", "slow", "double-update", "dedupe-object"],
                        default="safe")
    parser.add_argument("--log-updates", action="store_true", help="one update_log row per update handler call")
    parser.add_argument("--delay", type=float, default=0.02, help="seconds each delivery holds the lock (slow)")
    parser.add_argument("--refuse-account", type=int, help="payments for this customer fail (poison)")
    parser.add_argument("--pid-file", help="where to write the process id once listening")
    parser.add_argument("--sink", help="URL the payment side effect calls")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    Handler.app = App(args.db, args.secret, args.mode, args.sink, args.delay, args.refuse_account,
                      args.log_updates)
    ThreadingHTTPServer.request_queue_size = 128  # a retry storm arrives all at once
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    print(json.dumps({"listening": f"127.0.0.1:{server.server_address[1]}"}), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
