#!/usr/bin/env python3
"""A webhook receiver written as a stranger to hookbench would write it: it credits customer
balances, on SQLite (the standard library) or Postgres (psycopg2), with Standard Webhooks
signatures and a JSON body of its own shape:

    {"id": "evt_1", "type": "payment.succeeded", "created": 1767225600,
     "data": {"customer": "cus_42", "amount_cents": 1500}}
    {"id": "evt_2", "type": "subscription.updated", "created": 1767225600,
     "data": {"customer": "cus_42", "plan": "pro", "version": 3}}

Its tables, created at start if missing:

    customers(id, balance)                  one row per customer, created by its first credit
    credits(id, customer, amount, created_at)
                                            one row per credit applied, keyed by its own
                                            autoincrement id: no event id column
    processed_events(event_id, processed_at)
                                            the dedupe bookkeeping: the only table that holds
                                            the provider's event ids
    subscriptions(customer, plan, version)  one row per customer, the latest plan

So the effects (a balance, credit rows) cannot be joined back to the events that caused them:
whether an event was applied once is visible only as counts (credit rows, the balance, the
--log file) against processed_events.

--mode safe (the default) inserts the event id into processed_events and, only if that inserted
a row, credits the balance and inserts the credit row, all in one transaction; subscription
updates apply only over an older version. --mode racy checks processed_events first, does its
work (--work seconds), credits in one transaction, then records the event id: copies arriving
together all pass the check and all apply; updates overwrite whatever the version.
--mode read-modify-write is racy, and also reads the balance before the work and writes back
read + amount after it: concurrent copies each add a credit row, while the balance shows fewer
of them (a lost update).

--fee CENTS keeps that much of every credit (the balance and the row take the amount less the fee):
a receiver whose balance an audit must not read as the amounts sent.
--log FILE appends one line per credit applied, after its commit, as a developer would check by
hand: `applied <event_id> customer=<n> amount=<n>` (updates are not logged). --heartbeat SECONDS
runs a scheduler that inserts a row into job_runs that often: a writer of its own, which
`hookbench discover` must refuse to read as a webhook's effect.
A receiver never answers 2xx for an event it did not store: a refused request (bad signature,
malformed body, amount_cents not an integer in 1..10^12, unknown type) answers 400 and writes
nothing; a database failure answers 500 (send it again). GET /healthz answers 200.

    python3 receiver.py --db app.db --secret whsec_... [--secret whsec_...]
        [--mode safe|racy|read-modify-write] [--work 0.05] [--log app.log]
        [--fee 30] [--heartbeat 0.2] [--port 0] [--pid-file app.pid]

--db is a SQLite file (or sqlite:///path/app.db) or a postgres://user@host:port/db URL; Postgres
needs psycopg2 (examples/receivers/balances/install.sh puts it in .venv here: run the receiver
with .venv/bin/python). Prints {"listening": "127.0.0.1:PORT"} once it listens (and writes its
pid to --pid-file).
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
TOLERANCE_S = 300
MAX_AMOUNT = 10**12
INT64 = (-(1 << 63), (1 << 63) - 1)
PG_CONNECTIONS = 32  # at most this many requests hold a Postgres connection at once
INSTALL = "examples/receivers/balances/install.sh"

SQLITE_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS customers (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)",
    """CREATE TABLE IF NOT EXISTS credits (
        id INTEGER PRIMARY KEY AUTOINCREMENT, customer BIGINT NOT NULL, amount BIGINT NOT NULL,
        created_at REAL NOT NULL)""",
    "CREATE TABLE IF NOT EXISTS processed_events (event_id TEXT PRIMARY KEY, processed_at REAL NOT NULL)",
    """CREATE TABLE IF NOT EXISTS subscriptions (
        customer BIGINT PRIMARY KEY, plan TEXT NOT NULL, version BIGINT NOT NULL)""",
]
POSTGRES_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS customers (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)",
    """CREATE TABLE IF NOT EXISTS credits (
        id BIGSERIAL PRIMARY KEY, customer BIGINT NOT NULL, amount BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS processed_events (
        event_id TEXT PRIMARY KEY, processed_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS subscriptions (
        customer BIGINT PRIMARY KEY, plan TEXT NOT NULL, version BIGINT NOT NULL)""",
]


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


def integer(value, low, high, what):
    # bool is an int in Python: `true` is not a number of cents.
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise Refused(400, f"{what} must be an integer in {low}..{high}")
    return value


def parse(body, msg_id):
    """The event, checked: ("credit", customer, amount) or ("update", customer, plan, version)."""
    try:
        event = json.loads(body)
        data = event["data"]
        if not isinstance(data, dict):
            raise TypeError("data is not an object")
        customer = int(str(data["customer"]).removeprefix("cus_"))
    except (ValueError, KeyError, TypeError, RecursionError):
        raise Refused(400, "malformed event")
    if event.get("id") != msg_id:
        raise Refused(400, "body id does not match webhook-id")
    customer = integer(customer, *INT64, "customer")
    kind = event.get("type")
    if kind == "payment.succeeded":
        return ("credit", customer, integer(data.get("amount_cents"), 1, MAX_AMOUNT, "amount_cents"))
    if kind == "subscription.updated":
        plan = data.get("plan")
        if not isinstance(plan, str):
            raise Refused(400, "plan must be a string")
        return ("update", customer, plan, integer(data.get("version"), *INT64, "version"))
    raise Refused(400, "unknown event type")


class Db:
    """One connection, for one request, in autocommit: transactions are explicit BEGIN/COMMIT."""

    def __init__(self, conn, postgres):
        self.conn, self.postgres, self.open = conn, postgres, False
        self.cur = conn.cursor()

    def run(self, sql, params=()):
        if self.postgres:
            sql = sql.replace("?", "%s")
        self.cur.execute(sql, params)
        return self.cur

    def begin(self):
        self.run("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
        self.open = True

    def commit(self):
        self.run("COMMIT")
        self.open = False

    def close(self):
        try:
            if self.open:
                self.run("ROLLBACK")
        except Exception:
            pass  # a broken connection: closing it rolls back all the same
        finally:
            self.conn.close()

    # The statements both dialects need written differently.

    def record_event(self, event_id):
        """Inserts the event id unless it is there: True when it inserted a row."""
        if self.postgres:
            sql = "INSERT INTO processed_events (event_id) VALUES (?) ON CONFLICT DO NOTHING"
            return self.run(sql, (event_id,)).rowcount == 1
        sql = "INSERT OR IGNORE INTO processed_events (event_id, processed_at) VALUES (?, ?)"
        return self.run(sql, (event_id, time.time())).rowcount == 1

    def insert_credit(self, customer, amount):
        if self.postgres:
            self.run("INSERT INTO credits (customer, amount) VALUES (?, ?)", (customer, amount))
        else:
            self.run("INSERT INTO credits (customer, amount, created_at) VALUES (?, ?, ?)",
                     (customer, amount, time.time()))


class App:
    def __init__(self, db, secrets, mode, work, log, fee=0):
        self.secrets, self.mode, self.work, self.fee = secrets, mode, work, fee
        self.postgres = db.startswith(("postgres://", "postgresql://"))
        if self.postgres:
            try:
                import psycopg2
            except ImportError:
                print(f"receiver: a postgres:// --db needs psycopg2: run {INSTALL}, "
                      "then run this receiver with the .venv/bin/python beside it", file=sys.stderr)
                sys.exit(2)
            self.psycopg2, self.url = psycopg2, db
            self.slots = threading.BoundedSemaphore(PG_CONNECTIONS)
        else:
            self.path = db.removeprefix("sqlite://")
            self.slots = None
        self.log_lock = threading.Lock()
        self.log = open(log, "a", encoding="utf-8") if log else None
        db = self.connect()
        try:
            db.begin()
            if self.postgres:  # two receivers starting together must not both create the tables
                db.run("SELECT pg_advisory_xact_lock(7305402)")
            for statement in POSTGRES_SCHEMA if self.postgres else SQLITE_SCHEMA:
                db.run(statement)
            db.commit()
        finally:
            db.close()

    def connect(self):
        if self.postgres:
            conn = self.psycopg2.connect(self.url, connect_timeout=10)
            conn.autocommit = True
            return Db(conn, True)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=30000")
        return Db(conn, False)

    def heartbeat(self, every):
        """A scheduler inside the app that records each of its runs: a writer of its own, which
        writes whether or not any webhook arrives."""
        while True:
            db = self.connect()
            try:
                db.begin()
                db.run("CREATE TABLE IF NOT EXISTS job_runs (job TEXT NOT NULL, ran_at REAL NOT NULL)")
                db.run("INSERT INTO job_runs (job, ran_at) VALUES (?, ?)", ("sync-customers", time.time()))
                db.commit()
            finally:
                db.close()
            time.sleep(every)

    def logged(self, event_id, customer, amount):
        if self.log is None:
            return
        with self.log_lock:
            self.log.write(f"applied {event_id} customer={customer} amount={amount}\n")
            self.log.flush()

    def handle(self, headers, body):
        msg_id = verify(self.secrets, headers, body)
        event = parse(body, msg_id)
        if self.slots is None:
            return self.handle_event(msg_id, event)
        with self.slots:
            return self.handle_event(msg_id, event)

    def handle_event(self, msg_id, event):
        db = self.connect()
        try:
            if self.mode == "safe":
                result = self.safe(db, msg_id, event)
            else:
                result = self.check_then_insert(db, msg_id, event)
        finally:
            db.close()
        if result == "applied" and event[0] == "credit":
            self.logged(msg_id, event[1], event[2])
        return result

    def safe(self, db, msg_id, event):
        db.begin()
        fresh = db.record_event(msg_id)
        if fresh and event[0] == "credit":
            _, customer, amount = event
            amount -= self.fee
            self.credit(db, customer, amount)
            db.insert_credit(customer, amount)
        elif fresh:
            self.update(db, *event[1:], guarded=True)
        db.commit()
        return "applied" if fresh else "duplicate"

    def check_then_insert(self, db, msg_id, event):
        if db.run("SELECT 1 FROM processed_events WHERE event_id = ?", (msg_id,)).fetchone():
            return "duplicate"
        balance = None
        if event[0] == "credit" and self.mode == "read-modify-write":
            row = db.run("SELECT balance FROM customers WHERE id = ?", (event[1],)).fetchone()
            balance = row[0] if row else 0
        time.sleep(self.work)  # the handler's real work: the window two copies slip through
        db.begin()
        if event[0] == "credit":
            _, customer, amount = event
            amount -= self.fee
            if balance is None:
                self.credit(db, customer, amount)
            else:  # writes back what it read before the work, plus this credit
                db.run("INSERT INTO customers (id, balance) VALUES (?, ?) "
                       "ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
                       (customer, balance + amount))
            db.insert_credit(customer, amount)
        else:
            self.update(db, *event[1:], guarded=False)
        db.commit()
        db.record_event(msg_id)
        return "applied"

    @staticmethod
    def credit(db, customer, amount):
        db.run("INSERT INTO customers (id, balance) VALUES (?, ?) "
               "ON CONFLICT (id) DO UPDATE SET balance = customers.balance + excluded.balance",
               (customer, amount))

    @staticmethod
    def update(db, customer, plan, version, guarded):
        guard = "WHERE excluded.version > subscriptions.version" if guarded else ""
        db.run("INSERT INTO subscriptions (customer, plan, version) VALUES (?, ?, ?) "
               f"ON CONFLICT (customer) DO UPDATE SET plan = excluded.plan, version = excluded.version {guard}",
               (customer, plan, version))


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
        try:
            length = int(self.headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if length < 0:
            self.answer(400, "bad content-length")
            self.close_connection = True
            return
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
        except Exception as e:  # the database failed: send it again later
            self.answer(500, f"{type(e).__name__}: {e}")

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client left before its answer

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", required=True,
                        help="a SQLite file (or sqlite:///path/app.db) or a postgres://... URL")
    parser.add_argument("--secret", action="append", required=True, help="whsec_... (repeat to rotate)")
    parser.add_argument("--mode", choices=["safe", "racy", "read-modify-write"], default="safe")
    parser.add_argument("--work", type=float, default=0.05,
                        help="seconds of the handler's work between its check and its write (racy modes)")
    parser.add_argument("--log", help="append one line per credit applied to this file")
    parser.add_argument("--fee", type=int, default=0,
                        help="cents kept from every credit: the balance and the row take the amount less the fee")
    parser.add_argument("--heartbeat", type=float,
                        help="every this many seconds, a scheduler's row in job_runs (another writer)")
    parser.add_argument("--pid-file", help="where to write the process id once listening")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    Handler.app = App(args.db, args.secret, args.mode, args.work, args.log, args.fee)
    if args.heartbeat:
        threading.Thread(target=Handler.app.heartbeat, args=(args.heartbeat,), daemon=True).start()
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
