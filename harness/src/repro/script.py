#!/usr/bin/env python3
# __HOOKBENCH_HEADER__
"""Reproduces a finding of `hookbench audit` without hookbench: Python 3's standard library only
(psycopg2 or psycopg for a Postgres observer, when installed).

It rebuilds the finding's deliveries (the same body with fresh ids under a new prefix, so a re-run
never collides with earlier rows; the same headers, signed afresh; the same copies released
together, each on a connection of its own), runs them --trials times, and judges them with the
query the audit used. Exit 1: reproduced ("reproduced: 14 of 20 trials applied twice"); exit 0: not
reproduced in the trials run ("not reproduced in 20 trials (under 17 % at 95 %)"); exit 2: it could
not run (no answer, a query that fails, no secret), naming the cause.

    HOOKBENCH_SECRET=whsec_... python3 repro.py --url http://127.0.0.1:8000/webhooks --db app.db

The secret comes only from HOOKBENCH_SECRET (several: separated by spaces); it is never written here.
"""

import argparse
import base64
import hashlib
import hmac
import http.client
import json
import math
import os
import socket
import sqlite3
import sys
import threading
import time
import urllib.parse

FINDING = json.loads(__HOOKBENCH_EMBED__)
ID, ACCOUNT, AMOUNT, CREATED, OBJECT = (FINDING["sentinels"][k] for k in ("id", "account", "amount", "created", "object"))
Z95 = 1.959963984540054


class CannotRun(Exception):
    """What keeps the reproduction from running: exit 2."""


def body_of(event_id, account, amount, created, obj=None):
    """The body of one event; `obj`, the object it is about, is its own id unless two events share one."""
    body = FINDING["body"]
    for sentinel, value in ((OBJECT, obj or event_id), (ID, event_id), (str(ACCOUNT), str(account)),
                            (str(AMOUNT), str(amount)), (str(CREATED), str(created))):
        body = body.replace(sentinel, value)
    return body.encode("utf-8")


def secrets():
    if FINDING["signing"] == "none":
        return []
    found = os.environ.get("HOOKBENCH_SECRET", "").split()
    if not found:
        raise CannotRun("set HOOKBENCH_SECRET to the receiver's signing secret (whsec_...)")
    if FINDING["signing"] == "stripe":
        # Stripe's key is the whsec_ string itself.
        return [s.encode() for s in found]
    keys = []
    for s in found:
        if not s.startswith("whsec_"):
            raise CannotRun("HOOKBENCH_SECRET: a Standard Webhooks secret is whsec_ followed by base64")
        keys.append(base64.b64decode(s[len("whsec_"):]))
    return keys


def headers_of(event_id, body, keys):
    headers = {"content-type": FINDING["content_type"]}
    headers.update(FINDING["headers"])
    if FINDING["signing"] == "none":
        headers["webhook-id"] = event_id
        return headers
    ts = str(int(time.time()))
    if FINDING["signing"] == "stripe":
        # Stripe-Signature: t=<timestamp>,v1=<hex HMAC-SHA256 of "timestamp.body">, one v1 per secret.
        v1 = [hmac.new(k, ts.encode() + b"." + body, hashlib.sha256).hexdigest() for k in keys]
        headers["stripe-signature"] = f"t={ts}" + "".join(f",v1={v}" for v in v1)
        return headers
    signed = event_id.encode() + b"." + ts.encode() + b"." + body
    sigs = ["v1," + base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()).decode() for k in keys]
    headers.update({"webhook-id": event_id, "webhook-timestamp": ts, "webhook-signature": " ".join(sigs)})
    return headers


def post(url, headers, body, release=None, delay=0.0):
    """The status of one POST on a connection of its own, or None when none came; with `release`,
    connected first and sent `delay` seconds after the release."""
    parts = urllib.parse.urlsplit(url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=FINDING["timeout_s"])
    try:
        conn.connect()
        if release is not None:
            release.wait()
            if delay:
                time.sleep(delay)
        conn.request("POST", path, body=body, headers=headers)
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


def deliver_until_answered(url, event, keys, tries=3):
    """Sends `event` until it is acknowledged (2xx) or refused (4xx), as the audit does."""
    for _ in range(tries):
        body = body_of(*event)
        status = post(url, headers_of(event[0], body, keys), body)
        if status is not None and 200 <= status < 500:
            return status
        time.sleep(0.2)
    return None


def released(url, event, keys, delays):
    """Copies of `event`, one per delay, each connected and signed first, then released together,
    each sent its delay (seconds) after the release; sent again until answered when no copy was
    acknowledged, as the audit does."""
    release = threading.Barrier(len(delays))
    statuses = [None] * len(delays)

    def one(i):
        body = body_of(*event)
        statuses[i] = post(url, headers_of(event[0], body, keys), body, release, delay=delays[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(delays))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not any(s is not None and 200 <= s < 300 for s in statuses):
        deliver_until_answered(url, event, keys)
    return statuses


def concurrent_copies(url, event, keys):
    """The event's copies, each on its own connection, released together."""
    return released(url, event, keys, [0.0] * FINDING["copies"])


def race_window(url, event, keys):
    """Two copies, the second sent a spacing after the first: the spacings at which the audit saw
    the race, taken in turn."""
    spacings = FINDING["spacings_ms"]
    spacing = spacings[int(event[0].rsplit("_", 1)[1]) % len(spacings)] / 1000
    return released(url, event, keys, [0.0, spacing])


def post_and_drop(url, headers, body, linger=0.05):
    """Sends the whole request, waits `linger`, and closes the connection without reading the
    answer: the receiver may commit, the sender never hears it (a lost acknowledgement)."""
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    head = f"POST {path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "connection: close\r\n\r\n"
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=FINDING["timeout_s"]) as s:
            s.sendall(head.encode("latin-1") + body)
            time.sleep(linger)
        return 0
    except OSError:
        return None


def lost_ack(url, event, keys):
    """The event with its answer dropped, then sent again until answered, as the audit does."""
    body = body_of(*event)
    dropped = post_and_drop(url, headers_of(event[0], body, keys), body)
    time.sleep(0.1)
    return [dropped, deliver_until_answered(url, event, keys, tries=5)]


def sequential_duplicate(url, event, keys):
    """The event until answered, then once more."""
    first = deliver_until_answered(url, event, keys)
    body = body_of(*event)
    return [first, post(url, headers_of(event[0], body, keys), body)]


def connect(db):
    if db.startswith(("postgres://", "postgresql://")):
        try:
            import psycopg2 as driver
        except ImportError:
            try:
                import psycopg as driver
            except ImportError:
                raise CannotRun("--db is Postgres: install psycopg2 or psycopg")
        conn = driver.connect(db)
        conn.autocommit = True
        return conn
    path = db[len("sqlite://"):] if db.startswith("sqlite://") else db
    if not os.path.exists(path):
        raise CannotRun(f"--db {db}: no such SQLite file")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def applied(db, prefix):
    """How often each of this run's events was applied, as the audit's query says."""
    conn = connect(db)
    try:
        cur = conn.cursor()
        cur.execute(FINDING["applied_query"])
        counts = {}
        for row in cur.fetchall():
            event_id = str(row[0])
            if event_id.startswith(prefix):
                n = int(row[1]) if len(row) > 1 and row[1] is not None else 1
                counts[event_id] = counts.get(event_id, 0) + n
        return counts
    except Exception as e:  # the driver's error, whatever its kind
        raise CannotRun(f"the applied query failed: {type(e).__name__}: {e}")
    finally:
        conn.close()


def settled(db, prefix, expected):
    """The counts once two reads a second apart agree (a receiver may apply after answering)."""
    last = applied(db, prefix)
    for _ in range(30):
        time.sleep(1)
        now = applied(db, prefix)
        if now == last and len(now) >= expected:
            return now
        last = now
    return last


def under(k, n):
    """Wilson's 95 % upper bound for k of n, as a percentage rounded up."""
    z2 = Z95 * Z95
    center = (k + z2 / 2) / (n + z2)
    half = Z95 / (n + z2) * math.sqrt(k * (n - k) / n + z2 / 4)
    p = (1.0 if k == n else min(center + half, 1.0)) * 100
    return f"{math.ceil(p - 1e-9)}" if p >= 1 else f"{math.ceil(p * 10 - 1e-9) / 10:.1f}"


def semantic_pairs(url, prefix, stamp, trials, keys):
    """Pairs of events about one object under two ids, the second created a second later, each sent
    until answered: the same change twice, as the audit sent it. Their ids, and how many were
    answered at all."""
    pairs, answered = [], 0
    for n in range(trials):
        obj = f"{prefix}sem_obj_{n:04d}"
        account, amount, created = stamp % 10**9 * 1000 + n, 100 + n, int(time.time())
        first = (f"{prefix}sem_{2 * n:04d}", account, amount, created, obj)
        second = (f"{prefix}sem_{2 * n + 1:04d}", account, amount, created + 1, obj)
        answered += sum(deliver_until_answered(url, e, keys) is not None for e in (first, second))
        pairs.append((first[0], second[0]))
    return pairs, answered


def judge_pairs(pairs, counts, trials):
    """Reproduced when both events of one change were applied."""
    ran = [p for p in pairs if counts.get(p[0], 0) + counts.get(p[1], 0) >= 1]
    both = [p for p in ran if counts.get(p[0], 0) >= 1 and counts.get(p[1], 0) >= 1]
    if both:
        return 1, f"reproduced: {len(both)} of {len(ran)} pairs applied both events of one change (first: {both[0][0]} and {both[0][1]})"
    if not ran:
        return 2, f"repro: cannot run: none of {trials} pairs was applied at all (is --db the receiver's database?)"
    return 0, f"not reproduced in {len(ran)} pairs (under {under(0, len(ran))} % at 95 %)"


def reproduce(url, db, trials):
    """(exit code, what to say): 1 reproduced, 0 not, 2 it could not run."""
    if trials < 1:
        return 2, "repro: --trials must be at least 1"
    try:
        keys = secrets()
        applied(db, "")  # the query runs before anything is sent
        stamp = int(time.time() * 1000)
        prefix = "r" + base36(stamp) + "_"
        if FINDING["check"] == "semantic-duplicate":
            pairs, answered = semantic_pairs(url, prefix, stamp, trials, keys)
            if answered == 0:
                raise CannotRun(f"no answer from {url} to any of {trials} pairs")
            # A receiver right to dedupe on the object applies one event of each pair.
            return judge_pairs(pairs, settled(db, prefix, trials), trials)
        send = {"concurrent-copies": concurrent_copies, "sequential-duplicate": sequential_duplicate,
                "lost-ack": lost_ack, "race-window": race_window}[FINDING["check"]]
        answered = 0
        events = []
        for n in range(1, trials + 1):
            event = (f"{prefix}{FINDING['tag']}_{n:04d}", stamp % 10**9 * 1000 + n, 100 + n, int(time.time()))
            events.append(event[0])
            statuses = send(url, event, keys)
            answered += any(s is not None for s in statuses)
        if answered == 0:
            raise CannotRun(f"no answer from {url} to any of {trials} trials")
        counts = settled(db, prefix, trials)
    except CannotRun as e:
        return 2, f"repro: cannot run: {e}"
    ran = [e for e in events if counts.get(e, 0) >= 1]
    twice = [e for e in ran if counts[e] > 1]
    if twice:
        first = twice[0]
        return 1, f"reproduced: {len(twice)} of {len(ran)} trials applied twice (first: {first}, applied {counts[first]} times)"
    if not ran:
        return 2, f"repro: cannot run: none of {trials} trials was applied at all (is --db the receiver's database?)"
    return 0, f"not reproduced in {len(ran)} trials (under {under(0, len(ran))} % at 95 %)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=FINDING["url"], help="the receiver's webhook URL (default: the audited one)")
    parser.add_argument("--db", required=True, help="the observer's database: a SQLite path, sqlite:///path or postgres://...")
    parser.add_argument("--trials", type=int, default=FINDING["trials"], help="how many fresh events to try")
    args = parser.parse_args()
    code, said = reproduce(args.url, args.db, args.trials)
    print(said, file=sys.stderr if code == 2 else sys.stdout)
    return code


def base36(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"


# __HOOKBENCH_TESTS__

if __name__ == "__main__":
    sys.exit(main())
