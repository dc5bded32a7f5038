#!/usr/bin/env python3
# __HOOKBENCH_HEADER__
"""Reproduces a finding of `hookbench audit` without hookbench: Python 3's standard library only
(psycopg2 or psycopg for a Postgres observer, when installed; cryptography to sign as SendGrid
or Discord, with a private key).

It rebuilds the finding's deliveries (the same body with fresh ids under a new prefix, so a re-run
never collides with earlier rows; the same headers, signed afresh; the same copies released
together, each on a connection of its own), runs them --trials times, and judges them with the
query the audit used. Exit 1: reproduced ("reproduced: 14 of 20 trials applied twice"); exit 0: not
reproduced in the trials run ("not reproduced in 20 trials (under 17 % at 95 %)"); exit 2: it could
not run (no answer, a query that fails, no secret), naming the cause.

    HOOKBENCH_SECRET=whsec_... python3 repro.py --url http://127.0.0.1:8000/webhooks --db app.db

It signs as the audit did (Standard Webhooks, Stripe, GitHub, Shopify, Slack, Twilio's forms,
Square, Paddle, SendGrid and Discord with a private key, Linear, GitLab, Zoom, Twitch, or not at
all). The secret comes only from HOOKBENCH_SECRET (several:
separated by spaces); it is never written here.
"""

import argparse
import base64
import concurrent.futures
import hashlib
import hmac
import http.client
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

FINDING = json.loads(__HOOKBENCH_EMBED__)
SENTINELS = FINDING["sentinels"]
Z95 = 1.959963984540054


class CannotRun(Exception):
    """What keeps the reproduction from running: exit 2."""


def fill(text, event):
    """`text` (the audit's body or a header) with the event's values where the audit's sentinels
    are: (id, account, amount, created[, object]); the object is the event's own id unless two
    events share one."""
    event_id, account, amount, created = event[:4]
    obj = event[4] if len(event) > 4 else None
    pairs = [(SENTINELS["object"], obj or event_id), (SENTINELS["id"], event_id),
             (str(SENTINELS["account"]), str(account)), (str(SENTINELS["amount"]), str(amount))]
    if SENTINELS["created"] is not None:
        pairs.append((str(SENTINELS["created"]), str(created)))
    for sentinel, value in pairs:
        text = text.replace(sentinel, value)
    return text


# Each event sent: its account and amount, against which an account's change is read when the
# audit judged by balances or effect rows (every event of a run has an account of its own).
EVENTS = {}
# Each account's balance or effect rows before anything was sent.
BEFORE = {}


def body_of(*event, ts=None):
    """The event's body; where the body carries the time it is sent at (Linear's
    webhookTimestamp), that time is `ts` (default now), as each attempt of the audit's is."""
    EVENTS.setdefault(event[0], (event[1], event[2]))
    if FINDING["sent_at_in_body"]:
        event = event[:3] + (int(time.time()) if ts is None else ts,) + tuple(event[4:])
    return fill(FINDING["body"], event).encode("utf-8")


def secrets():
    if FINDING["signing"] == "none":
        return []
    found = os.environ.get("HOOKBENCH_SECRET", "").split()
    if not found:
        raise CannotRun("set HOOKBENCH_SECRET to the receiver's signing secret")
    if FINDING["signing"] in ("sendgrid", "discord"):
        # A private key: base64 of its PKCS#8 DER, as `hookbench keys` prints it.
        try:
            return [private_key(base64.b64decode(s, validate=True)) for s in found]
        except ValueError as e:
            raise CannotRun(f"HOOKBENCH_SECRET: not base64 of a PKCS#8 private key ({e})")
    if FINDING["signing"] != "standard-webhooks":
        # Every other scheme's key is the secret's text itself.
        return [s.encode() for s in found]
    keys = []
    for s in found:
        if not s.startswith("whsec_"):
            raise CannotRun("HOOKBENCH_SECRET: a Standard Webhooks secret is whsec_ followed by base64")
        keys.append(base64.b64decode(s[len("whsec_"):]))
    return keys


def crypto():
    """Python's cryptography package, which signs SendGrid's ECDSA and Discord's Ed25519."""
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    except ImportError:
        raise CannotRun(f"--signing {FINDING['signing']} signs with a private key: install cryptography (pip install cryptography)")
    return hashes, serialization, ec, ed25519


def private_key(der):
    """The private key of PKCS#8 `der`. An Ed25519 key is read from its 32-byte seed (the OCTET
    STRING inside the private key's), since cryptography refuses PKCS#8 v2, which ring writes."""
    _, serialization, _, ed25519 = crypto()
    if FINDING["signing"] == "discord":
        at = der.find(b"\x04\x22\x04\x20")
        if at < 0 or len(der) < at + 36:
            raise ValueError("no Ed25519 seed in it")
        return ed25519.Ed25519PrivateKey.from_private_bytes(der[at + 4:at + 36])
    return serialization.load_der_private_key(der, password=None)


def stranger_keys():
    """A key no receiver holds, of the kind the scheme takes."""
    if FINDING["signing"] == "sendgrid":
        _, _, ec, _ = crypto()
        return [ec.generate_private_key(ec.SECP256R1())]
    if FINDING["signing"] == "discord":
        return [crypto()[3].Ed25519PrivateKey.generate()]
    return [os.urandom(16).hex().encode()]


def signature(event_id, body, keys, ts, signed_url):
    """The headers that sign `body` for `event_id` at `ts` (Unix seconds), as the provider does."""
    scheme, t = FINDING["signing"], str(ts)
    if scheme == "none":
        return {}

    def mac(key, message):
        return hmac.new(key, message, hashlib.sha256)

    def b64(digest):
        return base64.b64encode(digest).decode()

    k = keys[0]
    if scheme == "standard-webhooks":
        signed = event_id.encode() + b"." + t.encode() + b"." + body
        sigs = " ".join("v1," + b64(mac(key, signed).digest()) for key in keys)
        return {"webhook-timestamp": t, "webhook-signature": sigs}
    if scheme == "stripe":
        # One v1 per secret, as Stripe signs while a secret is rolled.
        v1 = "".join(",v1=" + mac(key, t.encode() + b"." + body).hexdigest() for key in keys)
        return {"stripe-signature": "t=" + t + v1}
    if scheme == "github":
        return {"x-hub-signature-256": "sha256=" + mac(k, body).hexdigest()}
    if scheme == "shopify":
        return {"x-shopify-hmac-sha256": b64(mac(k, body).digest())}
    if scheme == "slack":
        return {"x-slack-signature": "v0=" + mac(k, b"v0:" + t.encode() + b":" + body).hexdigest(),
                "x-slack-request-timestamp": t}
    if scheme == "square":
        return {"x-square-hmacsha256-signature": b64(mac(k, signed_url.encode() + body).digest())}
    if scheme == "paddle":
        return {"paddle-signature": f"ts={t};h1=" + mac(k, t.encode() + b":" + body).hexdigest()}
    if scheme == "gitlab":
        return {"x-gitlab-token": k.decode()}
    if scheme == "zoom":
        return {"x-zm-signature": "v0=" + mac(k, b"v0:" + t.encode() + b":" + body).hexdigest(),
                "x-zm-request-timestamp": t}
    if scheme == "twilio":
        # The URL, then the form's pairs sorted, each name and value, under HMAC-SHA1.
        pairs = sorted(set(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True)))
        signed = signed_url + "".join(name + value for name, value in pairs)
        return {"x-twilio-signature": b64(hmac.new(k, signed.encode(), hashlib.sha1).digest())}
    if scheme == "linear":
        return {"linear-signature": mac(k, body).hexdigest()}
    if scheme == "sendgrid":
        hashes, _, ec, _ = crypto()
        sig = k.sign(t.encode() + body, ec.ECDSA(hashes.SHA256()))
        return {"x-twilio-email-event-webhook-signature": b64(sig), "x-twilio-email-event-webhook-timestamp": t}
    if scheme == "discord":
        return {"x-signature-ed25519": k.sign(t.encode() + body).hex(), "x-signature-timestamp": t}
    if scheme == "twitch":
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
        sig = mac(k, event_id.encode() + at.encode() + body).hexdigest()
        return {"twitch-eventsub-message-signature": "sha256=" + sig, "twitch-eventsub-message-timestamp": at}
    raise CannotRun(f"this script does not sign as {scheme}")


SIGNED_URL = [FINDING["url"]]


def headers_of(event, body, keys, ts=None):
    """Every header of one attempt of `event` with `body`, signed afresh (at `ts`, default now)."""
    headers = {name: fill(value, event) for name, value in FINDING["headers"]}
    ts = int(time.time()) if ts is None else ts
    headers.update(signature(event[0], body, keys, ts, SIGNED_URL[0]))
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
        try:
            conn.connect()
        except OSError:
            if release is not None:
                release.abort()  # the other copies go without this one, never wait for it
            return None
        if release is not None:
            try:
                release.wait(timeout=FINDING["timeout_s"])
            except threading.BrokenBarrierError:
                pass  # a copy could not connect: this one is sent all the same
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
        status = post(url, headers_of(event, body, keys), body)
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
        statuses[i] = post(url, headers_of(event, body, keys), body, release, delay=delays[i])

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


def raw_head(url, headers, length):
    """A POST's head as sent on a socket: the path, the host, the declared length, `headers`."""
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
    head = f"POST {path} HTTP/1.1\r\nhost: {parts.netloc}\r\ncontent-length: {length}\r\n"
    return (head + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "connection: close\r\n\r\n").encode("latin-1")


def post_and_drop(url, headers, body, linger=0.05):
    """Sends the whole request, waits `linger`, and closes the connection without reading the
    answer: the receiver may commit, the sender never hears it (a lost acknowledgement)."""
    parts = urllib.parse.urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port or 80), timeout=FINDING["timeout_s"]) as s:
            s.sendall(raw_head(url, headers, len(body)) + body)
            time.sleep(linger)
        return 0
    except OSError:
        return None


def lost_ack(url, event, keys):
    """The event with its answer dropped, then sent again until answered, as the audit does."""
    body = body_of(*event)
    post_and_drop(url, headers_of(event, body, keys), body)
    time.sleep(0.1)
    # The dropped attempt has no answer by design: the trial ran only if the retry was answered.
    return [deliver_until_answered(url, event, keys, tries=5)]


def sequential_duplicate(url, event, keys):
    """The event until answered, then once more."""
    first = deliver_until_answered(url, event, keys)
    body = body_of(*event)
    return [first, post(url, headers_of(event, body, keys), body)]


def hide_password(url):
    """`url` with its password, if it has one, as ***."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(":" + parts.password + "@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def connect(db):
    if db.startswith(("postgres://", "postgresql://")):
        try:
            import psycopg2 as driver
        except ImportError:
            try:
                import psycopg as driver
            except ImportError:
                raise CannotRun("--db is Postgres: install psycopg2 or psycopg")
        try:
            conn = driver.connect(db)
        except Exception as e:  # the driver's error, whatever its kind
            raise CannotRun(f"--db {hide_password(db)}: cannot connect: {type(e).__name__}: {e}")
        conn.autocommit = True
        return conn
    path = db[len("sqlite://"):] if db.startswith("sqlite://") else db
    if not os.path.exists(path):
        raise CannotRun(f"--db {db}: no such SQLite file")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def rows_of(db, query, what):
    """The rows of `query`, or CannotRun naming the `what` query that failed."""
    conn = connect(db)
    try:
        cur = conn.cursor()
        cur.execute(query)
        return cur.fetchall()
    except Exception as e:  # the driver's error, whatever its kind
        raise CannotRun(f"the {what} query failed: {type(e).__name__}: {e}")
    finally:
        conn.close()


def per_account(db):
    """Each account's balance or effect rows, as the audit's balance or count query says."""
    by = FINDING["evidence"]["by"]
    out = {}
    for row in rows_of(db, FINDING["evidence"]["query"], by):
        try:
            account, value = row
            out[int(account)] = out.get(int(account), 0) + int(value)
        except (TypeError, ValueError):
            raise CannotRun(f"the {by} query returned {tuple(row)!r}: (account, {by}) rows of integers wanted")
    return out


def baseline(db):
    """Runs the query it judges with before anything is sent; keeps each account's figure."""
    if FINDING["evidence"]["by"] == "applied":
        applied(db, "")
    else:
        BEFORE.clear()
        BEFORE.update(per_account(db))


def applied(db, prefix):
    """How often each of this run's events was applied, as the audit's query says: the applied
    query's rows, or each event's account's change since the baseline (in effect rows, or in
    balance over the event's amount, rounded up: one id applied with two bodies counts twice)."""
    counts = {}
    if FINDING["evidence"]["by"] == "applied":
        for row in rows_of(db, FINDING["evidence"]["query"], "applied"):
            event_id = str(row[0])
            if event_id.startswith(prefix):
                try:
                    n = int(row[1]) if len(row) > 1 and row[1] is not None else 1
                except (TypeError, ValueError):
                    raise CannotRun(f"the applied query returned {tuple(row)!r}: (event id, count) rows wanted")
                counts[event_id] = counts.get(event_id, 0) + n
        return counts
    now = per_account(db)
    for event_id, (account, amount) in EVENTS.items():
        delta = now.get(account, 0) - BEFORE.get(account, 0)
        if event_id.startswith(prefix) and delta > 0:
            counts[event_id] = delta if FINDING["evidence"]["by"] == "count" else -(-delta // max(amount, 1))
    return counts


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
        account, amount, created = FINDING["account_base"] + n, 100 + n, int(time.time())
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


def event_of(prefix, stamp, n, tag=None):
    """The `n`th fresh event of this run: its id under the run's prefix, an account from the
    audit's base (a receiver may know only the accounts the audit used), its amount, now."""
    return (f"{prefix}{tag or FINDING['tag']}_{n:04d}", FINDING["account_base"] + n, 100 + n, int(time.time()))


def judge_twice(events, counts, trials, how="trials"):
    """Reproduced when an event was applied more than once."""
    ran = [e for e in events if counts.get(e, 0) >= 1]
    twice = [e for e in ran if counts[e] > 1]
    if twice:
        first = twice[0]
        return 1, f"reproduced: {len(twice)} of {len(ran)} {how} applied twice (first: {first}, applied {counts[first]} times)"
    if not ran:
        return 2, f"repro: cannot run: none of {trials} {how} was applied at all (is --db the receiver's database?)"
    return 0, f"not reproduced in {len(ran)} {how} (under {under(0, len(ran))} % at 95 %)"


def order(a):
    """The order account `a` gets versions 1 to 6 in, as the audit sent them: rotated, the latest
    never last."""
    versions = list(range(1, 7))
    k = a % 6 + 1
    versions = versions[k:] + versions[:k]
    if versions[-1] == 6:
        versions[0], versions[-1] = versions[-1], versions[0]
    return versions


def states(db):
    """Each account's version, as the audit's state query says: {account: version}."""
    out = {}
    for row in rows_of(db, FINDING["state_query"], "state"):
        try:
            account, version = row
            account, version = int(account), int(version)
        except (TypeError, ValueError):
            raise CannotRun(f"the state query returned {tuple(row)!r}: (account, version) rows of integers wanted")
        if account in out:
            raise CannotRun(f"the state query returned account {account} twice: one (account, version) row per account wanted")
        out[account] = version
    return out


def settled_states(db, latest):
    """The versions once two reads a second apart agree (a receiver may apply after answering);
    while an account is still behind `latest` (its latest acknowledged version), three more agreeing
    reads, so that an inbox worker polling every few seconds has caught up."""
    last, agreed = states(db), 0
    for _ in range(30):
        time.sleep(1)
        now = states(db)
        agreed = agreed + 1 if now == last else 0
        behind = any(now.get(a, 0) < v for a, v in latest.items())
        if agreed >= (3 if behind else 1):
            return now
        last = now
    return last


def fresh_accounts(trials):
    """Accounts no earlier run used (their state would hide this run's): past the audit's, keyed
    on this run's second, so runs a second apart of up to 1,000 accounts never share one."""
    base = FINDING["account_base"] + 1_000_000 + (int(time.time()) % 100_000) * 1_000
    return [base + a for a in range(trials)]


def out_of_order(url, db, prefix, trials, keys):
    """For each of --trials fresh accounts, plan updates of versions 1 to 6 as the audit sent them
    (the latest never last), one at a time, each until answered: reproduced when an account is
    left below the latest version it acknowledged (a stale write, or an update never applied)."""
    latest, answered, n = {}, 0, 0
    for a, account in enumerate(fresh_accounts(trials)):
        for version in order(a):
            n += 1
            event = (f"{prefix}ooo_{n:04d}", account, version, int(time.time()) + version, f"plan_v{version}")
            status = deliver_until_answered(url, event, keys)
            answered += status is not None
            if status is not None and 200 <= status < 300:
                latest[account] = max(latest.get(account, 0), version)
    if answered == 0:
        raise CannotRun(f"no answer from {url} to any of {n} updates")
    if not latest:
        raise CannotRun(f"{url} acknowledged none of {n} updates: nothing to judge")
    state = settled_states(db, latest)
    if not any(a in state for a in latest):
        raise CannotRun(f"none of {len(latest)} accounts is in the state query's rows (is --db the receiver's database?)")
    stale = [a for a in latest if state.get(a, 0) < latest[a]]
    if stale:
        a = stale[0]
        at = f"at version {state[a]}" if a in state else "with no version"
        return 1, f"reproduced: {len(stale)} of {len(latest)} accounts left at an older version (first: account {a}, {at} after version {latest[a]} was acknowledged)"
    return 0, f"not reproduced in {len(latest)} accounts (under {under(0, len(latest))} % at 95 %)"


def run_cmd(flag, cmd):
    """Runs the user's shell command; a failure stops the reproduction."""
    done = subprocess.run(cmd, shell=True, check=False)
    if done.returncode != 0:
        raise CannotRun(f"{flag} {cmd!r} exited {done.returncode}")


def late_replay(url, db, prefix, stamp, trials, keys, opts):
    """Events delivered until answered and applied once; then, after --retention-cmd and
    --replay-after, each re-sent signed afresh."""
    events = [event_of(prefix, stamp, n) for n in range(1, trials + 1)]
    answers = [deliver_until_answered(url, e, keys) for e in events]
    if all(a is None for a in answers):
        raise CannotRun(f"no answer from {url} to any of {trials} events")
    first = settled(db, prefix, trials)
    once = [e for e in events if first.get(e[0], 0) == 1]
    if opts.retention_cmd:
        run_cmd("--retention-cmd", opts.retention_cmd)
    time.sleep(opts.replay_after)
    if not once:
        raise CannotRun(f"none of {trials} events was seen applied once before the replay (is --db the receiver's database?)")
    replayed = []
    for e in once:
        body = body_of(*e)
        replayed.append(post(url, headers_of(e, body, keys), body))
    if all(r is None for r in replayed):
        raise CannotRun(f"no answer from {url} to any of {len(once)} replays (is the receiver up after --retention-cmd?)")
    counts = settled(db, prefix, len(once))
    return judge_twice([e[0] for e in once], counts, trials)


def tampered(body, event):
    """The body with the amount raised, or, where the body carries none, a key added."""
    raised = body_of(event[0], event[1], event[2] + 1_000_001, event[3])
    if raised != body:
        return raised
    at = body.find(b"{")
    return body[:at + 1] + b'"hookbench_tampered":true,' + body[at + 1:] if at >= 0 else body + b" "


def stalled(url, event, keys, wait):
    """A signed request declaring a 1,000,000-byte body, of which only the first 10 bytes are sent,
    as the audit sends it: "held" when the receiver still holds it after `wait` seconds without
    an answer, else the status it answered, or "closed"; None when no connection was made."""
    body = body_of(*event)
    parts = urllib.parse.urlsplit(url)
    try:
        s = socket.create_connection((parts.hostname, parts.port or 80), timeout=FINDING["timeout_s"])
    except OSError:
        return None
    try:
        s.sendall(raw_head(url, headers_of(event, body, keys), 1_000_000) + body[:10])
        s.settimeout(wait)
        answer = s.recv(512)
    except socket.timeout:
        return "held"
    except OSError:
        return "closed"
    finally:
        s.close()
    status = answer.split(b" ", 2)[1:2]
    return int(status[0]) if status and status[0].isdigit() else "closed"


def hostile_case(url, case, event, keys):
    """One case of hostile-input for `event`: the statuses of what was sent."""
    if case.startswith("oversized:"):
        # A body of the size the audit's --oversized-bytes named: past the receiver's limit.
        n = int(case.split(":", 1)[1])
        head = f'{{"id":"{event[0]}","padding":"'.encode()
        body = head + b"x" * max(n - 2 - len(head), 0) + b'"}'
        return [post(url, headers_of(event, body, keys), body)]
    body = body_of(*event)
    if case == "malformed":
        # JSON cut off after a key, signed as a whole body would be: refused, never applied.
        cut = f'{{"id": "{event[0]}", "amount": '.encode()
        return [post(url, headers_of(event, cut, keys), cut)]
    if case == "tampered":
        return [post(url, headers_of(event, body, keys), tampered(body, event))]
    if case == "wrong-secret":
        return [post(url, headers_of(event, body, stranger_keys()), body)]
    if case == "unsigned":
        return [post(url, {"content-type": "application/json"}, body)]
    if case in ("stale", "future"):
        ts = int(time.time()) + (-3600 if case == "stale" else 3600)
        body = body_of(*event, ts=ts)  # a body that carries its time carries this one
        return [post(url, headers_of(event, body, keys, ts), body)]
    # rebodied: the event until answered, then its id with another amount, as the audit sends it.
    other = (event[0], event[1], 999, event[3])
    return [deliver_until_answered(url, event, keys), deliver_until_answered(url, other, keys)]


def hostile_input(url, db, prefix, stamp, trials, keys, wait=None):
    """Each case the audit's witnesses showed, --trials times: what must be refused (4xx, never
    applied), one id sent with another body (applied at most once), a stalled body (not held past
    --stall-wait, the audit's) and a body past the receiver's limit (never acknowledged). First a
    control: one event signed right, which must be acknowledged and applied, or nothing the
    cases show can be judged (a wrong HOOKBENCH_SECRET refuses everything; a wrong --db applies
    nothing)."""
    wait = FINDING["stall_wait_s"] if wait is None else wait
    control = event_of(prefix, stamp, 0, tag="hos_control")
    answer = deliver_until_answered(url, control, keys)
    if answer is None:
        raise CannotRun(f"no answer from {url} to a correctly signed event")
    if not 200 <= answer < 300:
        raise CannotRun(f"a correctly signed event was answered {answer}: is HOOKBENCH_SECRET the receiver's secret?")
    sent, n, holds = [], 0, []
    for _ in range(trials):
        for case in FINDING["cases"]:
            n += 1
            event = event_of(prefix, stamp, n, tag=f"hos_{case.split(':')[0].replace('-', '')}")
            if case == "stalled":
                holds.append(event)  # held together below: one wait, not one per trial
            else:
                sent.append((case, event[0], hostile_case(url, case, event, keys)))
    if holds:
        with concurrent.futures.ThreadPoolExecutor(len(holds)) as pool:
            held = list(pool.map(lambda e: stalled(url, e, keys, wait), holds))
        sent += [("stalled", e[0], [h]) for e, h in zip(holds, held)]
    counts = settled(db, prefix, 1 + sum(case == "rebodied" for case, _, _ in sent))
    if not counts.get(control[0]):
        raise CannotRun(f"the correctly signed control event {control[0]} was never applied (is --db the receiver's database?)")
    found = {}
    for case, event_id, statuses in sent:
        applied_n = counts.get(event_id, 0)
        if case == "rebodied":
            bad = applied_n > 1 and f"applied {applied_n} times"
        elif case == "stalled" or case.startswith("oversized:"):
            # Never acknowledged, never applied; a stalled body also never held past the wait.
            held = case == "stalled" and statuses == ["held"]
            acked = [s for s in statuses if isinstance(s, int) and 200 <= s < 300]
            bad = ((held and f"held open past {wait:g} s") or (acked and f"answered {acked[0]}")
                   or (applied_n and f"applied {applied_n} times"))
        else:
            wrong = [s for s in statuses if s is not None and not 400 <= s < 500]
            bad = (applied_n and f"applied {applied_n} times") or (wrong and f"answered {wrong[0]}, not 4xx")
        if bad:
            found.setdefault(case, []).append(f"{event_id} {bad}")
    if found:
        said = "; ".join(f"{case.split(':')[0]}: {len(w)} of {trials} ({w[0]})" for case, w in found.items())
        return 1, f"reproduced: {said}"
    names = ", ".join(case.split(":")[0] for case in FINDING["cases"])
    return 0, f"not reproduced in {trials} trials of {names} (under {under(0, trials)} % at 95 %)"


def copies_of(n):
    """How the audit's load sends event `n`: "once", or, at the load's shares, "concurrent" (two
    copies together), "duplicate" (a second copy 50 ms after the first) or "ack-lost" (a first
    attempt whose answer is dropped). Chosen by a hash of `n`, so every run sends the same."""
    load = FINDING["load"]
    r = (n * 2654435761 % 4294967296) / 4294967296
    for kind in ("concurrent", "duplicate", "ack-lost"):
        share = load["p_" + kind.replace("-", "_")]
        if r < share:
            return kind
        r -= share
    return "once"


def crash(url, db, prefix, stamp, trials, keys, opts):
    """--trials events sent by 16 senders, each until acknowledged (2xx), with the copies the
    audit's load sends (copies_of), while the receiver is killed with --kill-cmd and started with
    --start-cmd: reproduced when an event was applied twice or acknowledged and never applied."""
    if not (opts.kill_cmd and opts.start_cmd):
        raise CannotRun("--check crash needs --kill-cmd and --start-cmd (your receiver's kill and start commands)")
    events = [event_of(prefix, stamp, n) for n in range(1, trials + 1)]
    acked, stop = set(), threading.Event()
    deadline = time.time() + 300

    def until_acked(event):
        kind = copies_of(int(event[0].rsplit("_", 1)[1]))
        if kind in ("concurrent", "duplicate"):
            statuses = released(url, event, keys, [0.0, 0.0 if kind == "concurrent" else 0.05])
            if any(s is not None and 200 <= s < 300 for s in statuses):
                acked.add(event[0])
                return
        elif kind == "ack-lost":
            body = body_of(*event)
            post_and_drop(url, headers_of(event, body, keys), body)
        while time.time() < deadline and not stop.is_set():
            body = body_of(*event)
            status = post(url, headers_of(event, body, keys), body)
            if status is not None and 200 <= status < 300:
                acked.add(event[0])
                return
            time.sleep(0.2)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(until_acked, e) for e in events]
        try:
            for k in range(opts.kills):
                # Kill once a share of the events is in, while the rest are in flight.
                while sum(f.done() for f in futures) < trials * (k + 1) // (opts.kills + 1) and time.time() < deadline:
                    time.sleep(0.005)
                run_cmd("--kill-cmd", opts.kill_cmd)
                run_cmd("--start-cmd", opts.start_cmd)
        except CannotRun:
            stop.set()
            raise
        concurrent.futures.wait(futures)
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:
        raise CannotRun(f"a sender failed: {type(failed[0]).__name__}: {failed[0]}")
    if not acked:
        raise CannotRun(f"no event was acknowledged by {url}")
    counts = settled(db, prefix, len(acked))
    code, said = judge_twice([e[0] for e in events], counts, trials, f"events under {opts.kills} kills")
    if code == 2:
        return code, said  # nothing applied at all: no event can be called lost
    kinds = [copies_of(n) for n in range(1, trials + 1)]
    load = "as the audit's load, {} sent as two copies together, {} twice 50 ms apart, {} with a lost answer".format(
        *(kinds.count(k) for k in ("concurrent", "duplicate", "ack-lost")))
    lost = [e for e in sorted(acked) if counts.get(e, 0) == 0]
    if lost:
        doubled = f"; {said.split(': ', 1)[1]}" if code == 1 else ""
        return 1, f"reproduced: {len(lost)} of {len(acked)} acknowledged events never applied (first: {lost[0]}){doubled}; {load}"
    return code, f"{said}; {load}"


def poison(url, db, prefix, stamp, trials, keys):
    """--trials events, every fifth a credit to the audit's --poison-account (which the handler
    refuses), each sent as a provider sends it: until acknowledged (2xx) or refused (4xx), five
    attempts at most. Reproduced when a poison event is applied, or (with the audit's dead-letter
    query) not dead-lettered, or another event is not applied exactly once."""
    if trials < 5:
        raise CannotRun("--trials must be at least 5 for poison: every fifth event is poison")
    events, poisoned = [], set()
    for n in range(1, trials + 1):
        event = event_of(prefix, stamp, n)
        if n % 5 == 0:
            event = (event[0], FINDING["poison_account"], event[2], event[3])
            poisoned.add(event[0])
        events.append(event)
    answers = [deliver_until_answered(url, e, keys, tries=5) for e in events]
    if all(a is None for a in answers):
        raise CannotRun(f"no answer from {url} to any of {trials} events")
    rest = [e[0] for e in events if e[0] not in poisoned]
    counts = settled(db, prefix, len(rest))
    if not any(counts.get(e, 0) for e in rest):
        raise CannotRun(f"none of {len(rest)} events was applied at all (is --db the receiver's database?)")
    found = []
    applied_poison = [e for e in sorted(poisoned) if counts.get(e, 0)]
    if applied_poison:
        found.append(f"{len(applied_poison)} of {len(poisoned)} poison events applied (first: {applied_poison[0]})")
    if FINDING["dead_letter_query"]:
        parked = {str(row[0]) for row in rows_of(db, FINDING["dead_letter_query"], "dead-letter")}
        missing = [e for e in sorted(poisoned) if e not in parked]
        if missing:
            found.append(f"{len(missing)} of {len(poisoned)} poison events not dead-lettered (first: {missing[0]})")
    wrong = [e for e in rest if counts.get(e, 0) != 1]
    if wrong:
        found.append(f"{len(wrong)} of {len(rest)} other events not applied exactly once (first: {wrong[0]}, applied {counts.get(wrong[0], 0)} times)")
    if found:
        return 1, "reproduced: " + "; ".join(found)
    return 0, f"not reproduced with {len(poisoned)} poison events among {trials} (under {under(0, len(poisoned))} % at 95 %)"


def reproduce(url, db, trials, opts=None):
    """(exit code, what to say): 1 reproduced, 0 not, 2 it could not run."""
    opts = opts or argparse.Namespace(retention_cmd=None, replay_after=0.0, kill_cmd=None, start_cmd=None,
                                      kills=1, signed_url=None, stall_wait=None)
    if trials < 1:
        return 2, "repro: --trials must be at least 1"
    SIGNED_URL[0] = opts.signed_url or url
    try:
        keys = secrets()
        # The query it judges with runs before anything is sent.
        states(db) if FINDING["check"] == "out-of-order" else baseline(db)
        stamp = int(time.time() * 1000)
        prefix = "r" + base36(stamp) + "_"
        check = FINDING["check"]
        if check == "semantic-duplicate":
            pairs, answered = semantic_pairs(url, prefix, stamp, trials, keys)
            if answered == 0:
                raise CannotRun(f"no answer from {url} to any of {trials} pairs")
            # A receiver right to dedupe on the object applies one event of each pair.
            return judge_pairs(pairs, settled(db, prefix, trials), trials)
        if check == "late-replay":
            return late_replay(url, db, prefix, stamp, trials, keys, opts)
        if check == "hostile-input":
            return hostile_input(url, db, prefix, stamp, trials, keys, opts.stall_wait)
        if check == "crash":
            return crash(url, db, prefix, stamp, trials, keys, opts)
        if check == "out-of-order":
            return out_of_order(url, db, prefix, trials, keys)
        if check == "poison":
            return poison(url, db, prefix, stamp, trials, keys)
        send = {"concurrent-copies": concurrent_copies, "sequential-duplicate": sequential_duplicate,
                "lost-ack": lost_ack, "race-window": race_window}[check]
        answered = 0
        events = []
        for n in range(1, trials + 1):
            event = event_of(prefix, stamp, n)
            events.append(event[0])
            statuses = send(url, event, keys)
            answered += any(s is not None for s in statuses)
        if answered == 0:
            raise CannotRun(f"no answer from {url} to any of {trials} trials")
        counts = settled(db, prefix, trials)
    except CannotRun as e:
        return 2, f"repro: cannot run: {e}"
    return judge_twice(events, counts, trials)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=FINDING["url"], help="the receiver's webhook URL (default: the audited one)")
    parser.add_argument("--db", required=True, help="the observer's database: a SQLite path, sqlite:///path or postgres://...")
    parser.add_argument("--trials", type=int, default=FINDING["trials"], help="how many fresh events to try (accounts for out-of-order, pairs for semantic-duplicate)")
    parser.add_argument("--signed-url", help="the URL the provider signs (Square), when not --url")
    if FINDING["check"] == "late-replay":
        parser.add_argument("--retention-cmd", help="a shell command run before the replay (your purge job)")
        parser.add_argument("--replay-after", type=float, default=0.0, help="seconds to wait before the replay")
    if "stalled" in FINDING["cases"]:
        parser.add_argument("--stall-wait", type=float, default=FINDING["stall_wait_s"],
                            help="seconds a stalled body may be held (default: the audit's --stall-wait)")
    if FINDING["check"] == "crash":
        parser.add_argument("--kill-cmd", required=True, help="a shell command that kills the receiver")
        parser.add_argument("--start-cmd", required=True, help="a shell command that starts it and returns once it answers")
        parser.add_argument("--kills", type=int, default=1, help="how many times to kill it during the run")
    args = parser.parse_args()
    opts = argparse.Namespace(retention_cmd=None, replay_after=0.0, kill_cmd=None, start_cmd=None, kills=1,
                              stall_wait=None)
    opts.__dict__.update(vars(args))
    try:
        code, said = reproduce(args.url, args.db, args.trials, opts)
    except CannotRun as e:
        code, said = 2, f"repro: cannot run: {e}"
    except KeyboardInterrupt:
        code, said = 2, "repro: interrupted"
    except Exception as e:  # anything unforeseen is "cannot run", never a verdict
        code, said = 2, f"repro: cannot run: {type(e).__name__}: {e}"
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
