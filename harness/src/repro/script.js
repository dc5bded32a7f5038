#!/usr/bin/env node
// __HOOKBENCH_HEADER__
'use strict';
/*
 * Reproduces a finding of `hookbench audit` without hookbench: Node 18+'s standard library only
 * (pg for a Postgres observer; node:sqlite on Node 22.5+, or better-sqlite3, for SQLite).
 *
 * It rebuilds the finding's deliveries (the same body with fresh ids under a new prefix, so a re-run
 * never collides with earlier rows; the same headers, signed afresh; the same copies released
 * together, each on a connection of its own), runs them --trials times, and judges them with the
 * query the audit used. Exit 1: reproduced ("reproduced: 14 of 20 trials applied twice"); exit 0: not
 * reproduced in the trials run ("not reproduced in 20 trials (under 17 % at 95 %)"); exit 2: it could
 * not run (no answer, a query that fails, no secret), naming the cause.
 *
 *     HOOKBENCH_SECRET=whsec_... node repro.js --url http://127.0.0.1:8000/webhooks --db app.db
 *
 * It signs as the audit did (Standard Webhooks, Stripe, GitHub, Shopify, Slack, Twilio's forms,
 * Square, Paddle, SendGrid and Discord with a private key, Linear, GitLab, Zoom, Twitch, or not at
 * all). The secret comes only from HOOKBENCH_SECRET (several:
 * separated by spaces); it is never written here.
 *
 * pg (Postgres) or better-sqlite3 is found in the node_modules beside this script, in the current
 * directory's, or in NODE_PATH. It is the Python script `hookbench repro` writes, line for line
 * where Node allows: the same flags, the same lines printed, the same exit codes.
 */

const childProcess = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const util = require('node:util');

const FINDING = JSON.parse(__HOOKBENCH_EMBED__);
const SENTINELS = FINDING.sentinels;
const Z95 = 1.959963984540054;
const ABOUT = 'Reproduces a finding of `hookbench audit` without hookbench.';

/** What keeps the reproduction from running: exit 2. */
class CannotRun extends Error {}

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));
const unixNow = () => Math.floor(Date.now() / 1000);
const pad4 = (n) => String(n).padStart(4, '0');
const is2xx = (status) => status !== null && status >= 200 && status < 300;

/**
 * `text` (the audit's body or a header) with the event's values where the audit's sentinels are:
 * [id, account, amount, created, object?]; the object is the event's own id unless two events
 * share one.
 */
function fill(text, event) {
  const [eventId, account, amount, created, obj] = event;
  const pairs = [[SENTINELS.object, obj || eventId], [SENTINELS.id, eventId],
    [String(SENTINELS.account), String(account)], [String(SENTINELS.amount), String(amount)]];
  // created is null where the body's dates keep the audit's time.
  if (SENTINELS.created != null) pairs.push([String(SENTINELS.created), String(created)]);
  for (const [sentinel, value] of pairs) text = text.split(sentinel).join(value);
  return text;
}

// Each event sent: its account and amount, against which an account's change is read when the
// audit judged by balances or effect rows (every event of a run has an account of its own).
const EVENTS = new Map();
// Each account's balance or effect rows before anything was sent.
let BEFORE = new Map();

/**
 * The event's body; where the body carries the time it is sent at (Linear's webhookTimestamp),
 * that time is `ts` (default now), as each attempt of the audit's is.
 */
function bodyOf(event, ts = null) {
  if (!EVENTS.has(event[0])) EVENTS.set(event[0], [event[1], event[2]]);
  if (FINDING.sent_at_in_body) event = [event[0], event[1], event[2], ts === null ? unixNow() : ts, ...event.slice(4)];
  return Buffer.from(fill(FINDING.body, event), 'utf8');
}

function secrets() {
  if (FINDING.signing === 'none') return [];
  const found = (process.env.HOOKBENCH_SECRET || '').split(/\s+/).filter(Boolean);
  if (!found.length) throw new CannotRun("set HOOKBENCH_SECRET to the receiver's signing secret");
  if (FINDING.signing === 'sendgrid' || FINDING.signing === 'discord') {
    // A private key: base64 of its PKCS#8 DER, as `hookbench keys` prints it.
    return found.map((s) => {
      try {
        let der = Buffer.from(s, 'base64');
        if (FINDING.signing === 'discord') {
          // OpenSSL refuses the PKCS#8 v2 that ring writes: the 32-byte seed, as PKCS#8 v1.
          const at = der.indexOf(Buffer.from([0x04, 0x22, 0x04, 0x20]));
          if (at < 0 || der.length < at + 36) throw new Error('no Ed25519 seed in it');
          der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), der.subarray(at + 4, at + 36)]);
        }
        return crypto.createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
      } catch (e) {
        throw new CannotRun(`HOOKBENCH_SECRET: not base64 of a PKCS#8 private key (${e.message})`);
      }
    });
  }
  // Every other scheme's key is the secret's text itself.
  if (FINDING.signing !== 'standard-webhooks') return found.map((s) => Buffer.from(s, 'utf8'));
  return found.map((s) => {
    if (!s.startsWith('whsec_')) {
      throw new CannotRun('HOOKBENCH_SECRET: a Standard Webhooks secret is whsec_ followed by base64');
    }
    const b64 = s.slice('whsec_'.length);
    // Buffer.from skips what is not base64; Python's decoder refuses it: so does this.
    if (!b64 || b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) {
      throw new CannotRun('HOOKBENCH_SECRET: a Standard Webhooks secret is whsec_ followed by base64');
    }
    return Buffer.from(b64, 'base64');
  });
}

/** A key no receiver holds, of the kind the scheme takes. */
function strangerKeys() {
  if (FINDING.signing === 'sendgrid') return [crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey];
  if (FINDING.signing === 'discord') return [crypto.generateKeyPairSync('ed25519').privateKey];
  return [Buffer.from(crypto.randomBytes(16).toString('hex'))];
}

/** Twilio's signed text: the URL, then the form's pairs sorted (byte order), each name and value. */
function twilioSigned(signedUrl, body) {
  const pairs = [...new URLSearchParams(body.toString('utf8'))];
  const bytes = (text) => Buffer.from(text, 'utf8');
  pairs.sort((a, b) => Buffer.compare(bytes(a[0]), bytes(b[0])) || Buffer.compare(bytes(a[1]), bytes(b[1])));
  const unique = pairs.filter((p, i) => i === 0 || p[0] !== pairs[i - 1][0] || p[1] !== pairs[i - 1][1]);
  return signedUrl + unique.map(([name, value]) => name + value).join('');
}

/** The headers that sign `body` for `eventId` at `ts` (Unix seconds), as the provider does. */
function signature(eventId, body, keys, ts, signedUrl) {
  const scheme = FINDING.signing;
  const t = String(ts);
  if (scheme === 'none') return {};
  const mac = (key, ...parts) => crypto.createHmac('sha256', key)
    .update(Buffer.concat(parts.map((p) => Buffer.from(p))));
  const k = keys[0];
  switch (scheme) {
    case 'standard-webhooks': {
      const sigs = keys.map((key) => 'v1,' + mac(key, eventId, '.', t, '.', body).digest('base64'));
      return { 'webhook-timestamp': t, 'webhook-signature': sigs.join(' ') };
    }
    case 'stripe': {
      // One v1 per secret, as Stripe signs while a secret is rolled.
      const v1 = keys.map((key) => ',v1=' + mac(key, t, '.', body).digest('hex')).join('');
      return { 'stripe-signature': 't=' + t + v1 };
    }
    case 'github':
      return { 'x-hub-signature-256': 'sha256=' + mac(k, body).digest('hex') };
    case 'shopify':
      return { 'x-shopify-hmac-sha256': mac(k, body).digest('base64') };
    case 'slack':
      return { 'x-slack-signature': 'v0=' + mac(k, 'v0:', t, ':', body).digest('hex'),
        'x-slack-request-timestamp': t };
    case 'square':
      return { 'x-square-hmacsha256-signature': mac(k, signedUrl, body).digest('base64') };
    case 'paddle':
      return { 'paddle-signature': `ts=${t};h1=` + mac(k, t, ':', body).digest('hex') };
    case 'gitlab':
      return { 'x-gitlab-token': k.toString('utf8') };
    case 'zoom':
      return { 'x-zm-signature': 'v0=' + mac(k, 'v0:', t, ':', body).digest('hex'),
        'x-zm-request-timestamp': t };
    case 'twilio':
      return { 'x-twilio-signature': crypto.createHmac('sha1', k).update(twilioSigned(signedUrl, body), 'utf8').digest('base64') };
    case 'linear':
      return { 'linear-signature': mac(k, body).digest('hex') };
    case 'sendgrid':
      return { 'x-twilio-email-event-webhook-signature': crypto.sign('sha256', Buffer.concat([Buffer.from(t), body]), k).toString('base64'),
        'x-twilio-email-event-webhook-timestamp': t };
    case 'discord':
      return { 'x-signature-ed25519': crypto.sign(null, Buffer.concat([Buffer.from(t), body]), k).toString('hex'),
        'x-signature-timestamp': t };
    case 'twitch': {
      const at = new Date(ts * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      return { 'twitch-eventsub-message-signature': 'sha256=' + mac(k, eventId, at, body).digest('hex'),
        'twitch-eventsub-message-timestamp': at };
    }
    default:
      throw new CannotRun(`this script does not sign as ${scheme}`);
  }
}

let signedUrl = FINDING.url;

/** Every header of one attempt of `event` with `body`, signed afresh (at `ts`, default now). */
function headersOf(event, body, keys, ts = unixNow()) {
  const headers = {};
  for (const [name, value] of FINDING.headers) headers[name] = fill(value, event);
  return Object.assign(headers, signature(event[0], body, keys, ts, signedUrl));
}

/** Where `url` points, read as plain HTTP (port 80 unless it says). */
function target(url) {
  let parts;
  try { parts = new URL(url); } catch { throw new CannotRun(`--url ${url}: not a URL`); }
  return { host: parts.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(parts.port) || 80,
    path: (parts.pathname || '/') + parts.search, netloc: parts.host };
}

/**
 * One POST on a connection of its own (agent: false, so no copy shares a socket): `connected`
 * settles once the connection is made (or failed), `send()` writes the whole request, and `status`
 * is the answer's status, or null when none came (refused, reset, timed out).
 */
function openPost(url, headers, body) {
  const { host, port, path: where } = target(url);
  const lower = Object.keys(headers).map((name) => name.toLowerCase());
  const sent = lower.includes('content-length') ? headers : { ...headers, 'content-length': String(body.length) };
  let connected;
  let answered;
  const ready = new Promise((resolve) => { connected = resolve; });
  const status = new Promise((resolve) => { answered = resolve; });
  const req = http.request({ hostname: host, port, path: where, method: 'POST', headers: sent,
    agent: false, timeout: FINDING.timeout_s * 1000 });
  req.on('socket', (socket) => {
    if (socket.connecting) socket.once('connect', () => connected(true));
    else connected(true);
  });
  req.on('response', (res) => {
    answered(res.statusCode);
    res.on('error', () => {});
    res.resume();
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', () => {
    connected(false);
    answered(null);
  });
  const send = () => {
    if (!req.destroyed) req.end(body);
  };
  return { connected: ready, send, status };
}

/** The status of one POST on a connection of its own, or null when none came. */
function post(url, headers, body) {
  const request = openPost(url, headers, body);
  request.send();
  return request.status;
}

/** Sends `event` until it is acknowledged (2xx) or refused (4xx), as the audit does. */
async function deliverUntilAnswered(url, event, keys, tries = 3) {
  for (let i = 0; i < tries; i++) {
    const body = bodyOf(event);
    const status = await post(url, headersOf(event, body, keys), body);
    if (status !== null && status >= 200 && status < 500) return status;
    await sleep(0.2);
  }
  return null;
}

/**
 * Copies of `event`, one per delay, each signed and connected first, then released together once
 * every connection is made, each sent its delay (seconds) after the release; sent again until
 * answered when no copy was acknowledged, as the audit does.
 */
async function released(url, event, keys, delays) {
  const copies = delays.map(() => {
    const body = bodyOf(event);
    return openPost(url, headersOf(event, body, keys), body);
  });
  // A copy whose connection failed has its answer (null) already; the others are not held for it.
  await Promise.all(copies.map((copy) => copy.connected));
  copies.forEach((copy, i) => (delays[i] ? setTimeout(copy.send, delays[i] * 1000) : copy.send()));
  const statuses = await Promise.all(copies.map((copy) => copy.status));
  if (!statuses.some(is2xx)) await deliverUntilAnswered(url, event, keys);
  return statuses;
}

/** The event's copies, each on its own connection, released together. */
function concurrentCopies(url, event, keys) {
  return released(url, event, keys, new Array(FINDING.copies).fill(0));
}

/**
 * Two copies, the second sent a spacing after the first: the spacings at which the audit saw the
 * race, taken in turn.
 */
function raceWindow(url, event, keys) {
  const spacings = FINDING.spacings_ms;
  const n = parseInt(event[0].slice(event[0].lastIndexOf('_') + 1), 10);
  return released(url, event, keys, [0, spacings[n % spacings.length] / 1000]);
}

/**
 * Sends the whole request, waits `linger`, and closes the connection without reading the answer:
 * the receiver may commit, the sender never hears it (a lost acknowledgement). 0 once sent, null
 * when it could not be.
 */
/** A POST's head as sent on a socket: the path, the host, the declared length, `headers`. */
function rawHead(url, headers, length) {
  const { path: where, netloc } = target(url);
  let head = `POST ${where} HTTP/1.1\r\nhost: ${netloc}\r\ncontent-length: ${length}\r\n`;
  head += Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') + 'connection: close\r\n\r\n';
  return Buffer.from(head, 'latin1');
}

function postAndDrop(url, headers, body, linger = 0.05) {
  const { host, port } = target(url);
  return new Promise((resolve) => {
    const socket = net.createConnection({ host, port });
    socket.setTimeout(FINDING.timeout_s * 1000, () => socket.destroy(new Error('timed out')));
    socket.on('error', () => resolve(null));
    socket.on('connect', () => {
      socket.write(Buffer.concat([rawHead(url, headers, body.length), body]), (err) => {
        if (err) return resolve(null);
        setTimeout(() => {
          socket.destroy();
          resolve(0);
        }, linger * 1000);
      });
    });
  });
}

/** The event with its answer dropped, then sent again until answered, as the audit does. */
async function lostAck(url, event, keys) {
  const body = bodyOf(event);
  await postAndDrop(url, headersOf(event, body, keys), body);
  await sleep(0.1);
  // The dropped attempt has no answer by design: the trial ran only if the retry was answered.
  return [await deliverUntilAnswered(url, event, keys, 5)];
}

/** The event until answered, then once more. */
async function sequentialDuplicate(url, event, keys) {
  const first = await deliverUntilAnswered(url, event, keys);
  const body = bodyOf(event);
  return [first, await post(url, headersOf(event, body, keys), body)];
}

/**
 * A package the user installed, or null: looked for in the node_modules folders of this script's
 * folder and its parents (as require does), then of the current directory's, then in NODE_PATH.
 */
function installed(name) {
  const upFrom = (dir) => {
    const found = [];
    for (let d = dir; ; d = path.dirname(d)) {
      found.push(path.join(d, 'node_modules'));
      if (d === path.dirname(d)) return found;
    }
  };
  const nodePath = (process.env.NODE_PATH || '').split(path.delimiter).filter(Boolean);
  for (const dir of [...upFrom(__dirname), ...upFrom(process.cwd()), ...nodePath]) {
    if (fs.existsSync(path.join(dir, name))) return require(path.join(dir, name));
  }
  return null;
}

/** The rows of `query` on the Postgres database `db`, each an array. */
async function postgresRows(db, query) {
  const pg = installed('pg');
  if (!pg) throw new CannotRun('--db is Postgres: install pg (npm install pg)');
  const client = new pg.Client({ connectionString: db });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch (e) {
    // Not the URL itself: it may hold a password.
    throw new CannotRun(`--db: cannot connect to Postgres: ${e.message}`);
  }
  try {
    const result = await client.query({ text: query, rowMode: 'array' });
    // Several statements give several results; the last one's rows are the answer.
    return (Array.isArray(result) ? result[result.length - 1] : result).rows || [];
  } finally {
    await client.end().catch(() => {});
  }
}

/** node:sqlite where this Node has it (22.5+, unflagged from 22.13), else null. */
function builtinSqlite() {
  try { return require('node:sqlite'); } catch { return null; }
}

/** The rows of `query` on the SQLite file `file`, opened read-only, each an array. */
function sqliteRows(file, query) {
  const sqlite = builtinSqlite();
  if (sqlite) {
    const conn = new sqlite.DatabaseSync(file, { readOnly: true });
    try {
      const statement = conn.prepare(query);
      // Arrays keep every column, even two of one name; older node:sqlite gives objects only.
      if (typeof statement.setReturnArrays === 'function') {
        statement.setReturnArrays(true);
        return statement.all();
      }
      return statement.all().map((row) => Object.values(row));
    } finally {
      conn.close();
    }
  }
  const Database = installed('better-sqlite3');
  if (!Database) throw new CannotRun('--db is SQLite: run this with Node 22.5+ (node:sqlite) or install better-sqlite3 (npm install better-sqlite3)');
  const conn = new Database(file, { readonly: true, fileMustExist: true });
  try { return conn.prepare(query).raw(true).all(); } finally { conn.close(); }
}

/** The rows of `query` on the observer's database. */
async function rowsOf(db, query) {
  if (db.startsWith('postgres://') || db.startsWith('postgresql://')) {
    return postgresRows(db, query);
  }
  const file = db.startsWith('sqlite://') ? db.slice('sqlite://'.length) : db;
  if (!fs.existsSync(file)) throw new CannotRun(`--db ${db}: no such SQLite file`);
  return sqliteRows(file, query);
}

/** The rows of `query`, or CannotRun naming the `what` query that failed. */
async function queried(db, query, what) {
  try {
    return await rowsOf(db, query);
  } catch (e) {
    if (e instanceof CannotRun) throw e;
    // The driver's error, whatever its kind.
    throw new CannotRun(`the ${what} query failed: ${(e && e.constructor && e.constructor.name) || 'Error'}: ${e && e.message}`);
  }
}

/**
 * (account, value) rows of integers as a Map, or CannotRun naming the `what` query; the values of
 * an account's rows added up, or, when `once`, an account in two rows refused.
 */
function integerPairs(rows, what, value, once = false) {
  const out = new Map();
  for (const row of rows) {
    const [account, v] = row.length === 2 ? row.map((x) => (x === null ? NaN : Number(x))) : [NaN, NaN];
    if (!Number.isInteger(account) || !Number.isInteger(v)) {
      throw new CannotRun(`the ${what} query returned ${JSON.stringify(row)}: (account, ${value}) rows of integers wanted`);
    }
    if (once && out.has(account)) {
      throw new CannotRun(`the ${what} query returned account ${account} twice: one (account, ${value}) row per account wanted`);
    }
    out.set(account, (out.get(account) || 0) + v);
  }
  return out;
}

/** Each account's balance or effect rows, as the audit's balance or count query says. */
async function perAccount(db) {
  const { by, query } = FINDING.evidence;
  return integerPairs(await queried(db, query, by), by, by);
}

/** Runs the query it judges with before anything is sent; keeps each account's figure. */
async function baseline(db) {
  if (FINDING.evidence.by === 'applied') await applied(db, '');
  else BEFORE = await perAccount(db);
}

/** Each account's version, as the audit's state query says: Map(account -> version). */
async function states(db) {
  return integerPairs(await queried(db, FINDING.state_query, 'state'), 'state', 'version', true);
}

/**
 * The versions once two reads a second apart agree (a receiver may apply after answering); while
 * an account is still behind `latest` (its latest acknowledged version), three more agreeing
 * reads, so that an inbox worker polling every few seconds has caught up.
 */
async function settledStates(db, latest) {
  let last = await states(db);
  let agreed = 0;
  for (let i = 0; i < 30; i++) {
    await sleep(1);
    const now = await states(db);
    agreed = sameCounts(now, last) ? agreed + 1 : 0;
    const behind = [...latest].some(([a, v]) => (now.get(a) || 0) < v);
    if (agreed >= (behind ? 3 : 1)) return now;
    last = now;
  }
  return last;
}

/** A row's count as a whole number (Postgres's count(*) comes as a string). */
function countOf(value) {
  const n = typeof value === 'number' ? Math.trunc(value) : Number(String(value).trim());
  if (!Number.isInteger(n)) throw new TypeError(`the count ${JSON.stringify(String(value))} is not a whole number`);
  return n;
}

/**
 * How often each of this run's events was applied, as the audit's query says: the applied query's
 * rows, or each event's account's change since the baseline (in effect rows, or in balance over
 * the event's amount, rounded up: one id applied with two bodies counts twice).
 */
async function applied(db, prefix) {
  const counts = new Map();
  if (FINDING.evidence.by === 'applied') {
    for (const row of await queried(db, FINDING.evidence.query, 'applied')) {
      const eventId = String(row[0]);
      if (eventId.startsWith(prefix)) {
        let n;
        try {
          n = row.length > 1 && row[1] !== null && row[1] !== undefined ? countOf(row[1]) : 1;
        } catch (e) {
          throw new CannotRun(`the applied query returned ${JSON.stringify(row)}: (event id, count) rows wanted`);
        }
        counts.set(eventId, (counts.get(eventId) || 0) + n);
      }
    }
    return counts;
  }
  const now = await perAccount(db);
  for (const [eventId, [account, amount]] of EVENTS) {
    const delta = (now.get(account) || 0) - (BEFORE.get(account) || 0);
    if (eventId.startsWith(prefix) && delta > 0) {
      counts.set(eventId, FINDING.evidence.by === 'count' ? delta : Math.ceil(delta / Math.max(amount, 1)));
    }
  }
  return counts;
}

function sameCounts(a, b) {
  return a.size === b.size && [...a].every(([eventId, n]) => b.get(eventId) === n);
}

/** The counts once two reads a second apart agree (a receiver may apply after answering). */
async function settled(db, prefix, expected) {
  let last = await applied(db, prefix);
  for (let i = 0; i < 30; i++) {
    await sleep(1);
    const now = await applied(db, prefix);
    if (sameCounts(now, last) && now.size >= expected) return now;
    last = now;
  }
  return last;
}

/** Wilson's 95 % upper bound for k of n, as a percentage rounded up. */
function under(k, n) {
  const z2 = Z95 * Z95;
  const center = (k + z2 / 2) / (n + z2);
  const half = Z95 / (n + z2) * Math.sqrt(k * (n - k) / n + z2 / 4);
  const p = (k === n ? 1.0 : Math.min(center + half, 1.0)) * 100;
  return p >= 1 ? String(Math.ceil(p - 1e-9)) : (Math.ceil(p * 10 - 1e-9) / 10).toFixed(1);
}

/**
 * Pairs of events about one object under two ids, the second created a second later, each sent
 * until answered: the same change twice, as the audit sent it. Their ids, and how many were
 * answered at all.
 */
async function semanticPairs(url, prefix, trials, keys) {
  const pairs = [];
  let answered = 0;
  for (let n = 0; n < trials; n++) {
    const obj = `${prefix}sem_obj_${pad4(n)}`;
    const [account, amount, created] = [FINDING.account_base + n, 100 + n, unixNow()];
    const first = [`${prefix}sem_${pad4(2 * n)}`, account, amount, created, obj];
    const second = [`${prefix}sem_${pad4(2 * n + 1)}`, account, amount, created + 1, obj];
    for (const event of [first, second]) {
      if ((await deliverUntilAnswered(url, event, keys)) !== null) answered += 1;
    }
    pairs.push([first[0], second[0]]);
  }
  return [pairs, answered];
}

/** Reproduced when both events of one change were applied. */
function judgePairs(pairs, counts, trials) {
  const count = (eventId) => counts.get(eventId) || 0;
  const ran = pairs.filter(([a, b]) => count(a) + count(b) >= 1);
  const both = ran.filter(([a, b]) => count(a) >= 1 && count(b) >= 1);
  if (both.length) {
    return [1, `reproduced: ${both.length} of ${ran.length} pairs applied both events of one change (first: ${both[0][0]} and ${both[0][1]})`];
  }
  if (!ran.length) {
    return [2, `repro: cannot run: none of ${trials} pairs was applied at all (is --db the receiver's database?)`];
  }
  return [0, `not reproduced in ${ran.length} pairs (under ${under(0, ran.length)} % at 95 %)`];
}

/**
 * The `n`th fresh event of this run: its id under the run's prefix, an account from the audit's
 * base (a receiver may know only the accounts the audit used), its amount, now.
 */
function eventOf(prefix, n, tag = null) {
  return [`${prefix}${tag || FINDING.tag}_${pad4(n)}`, FINDING.account_base + n, 100 + n, unixNow()];
}

/** Reproduced when an event was applied more than once. */
function judgeTwice(events, counts, trials, how = 'trials') {
  const ran = events.filter((eventId) => (counts.get(eventId) || 0) >= 1);
  const twice = ran.filter((eventId) => counts.get(eventId) > 1);
  if (twice.length) {
    const first = twice[0];
    return [1, `reproduced: ${twice.length} of ${ran.length} ${how} applied twice (first: ${first}, applied ${counts.get(first)} times)`];
  }
  if (!ran.length) {
    return [2, `repro: cannot run: none of ${trials} ${how} was applied at all (is --db the receiver's database?)`];
  }
  return [0, `not reproduced in ${ran.length} ${how} (under ${under(0, ran.length)} % at 95 %)`];
}

/** `text` quoted as Python's repr() quotes it, so the messages read as script.py's do. */
function pythonQuoted(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return quote + (quote === "'" ? escaped.replace(/'/g, "\\'") : escaped) + quote;
}

/**
 * Runs the user's shell command; a failure stops the reproduction. Not spawnSync: the senders go
 * on while it runs (a receiver killed and restarted under load), as script.py's threads do.
 */
/** The order account `a` gets versions 1 to 6 in, as the audit sent them: rotated, the latest never last. */
function order(a) {
  const k = (a % 6) + 1;
  const versions = [1, 2, 3, 4, 5, 6];
  const rotated = [...versions.slice(k), ...versions.slice(0, k)];
  if (rotated[5] === 6) [rotated[0], rotated[5]] = [rotated[5], rotated[0]];
  return rotated;
}

/**
 * Accounts no earlier run used (their state would hide this run's): past the audit's, keyed on
 * this run's second, so runs a second apart of up to 1,000 accounts never share one.
 */
function freshAccounts(trials) {
  const base = FINDING.account_base + 1_000_000 + (unixNow() % 100_000) * 1_000;
  return Array.from({ length: trials }, (_, a) => base + a);
}

/**
 * For each of --trials fresh accounts, plan updates of versions 1 to 6 as the audit sent them (the
 * latest never last), one at a time, each until answered: reproduced when an account is left below
 * the latest version it acknowledged (a stale write, or an update never applied).
 */
async function outOfOrder(url, db, prefix, trials, keys) {
  const latest = new Map();
  let answered = 0;
  let n = 0;
  const accounts = freshAccounts(trials);
  for (let a = 0; a < accounts.length; a++) {
    for (const version of order(a)) {
      n += 1;
      const event = [`${prefix}ooo_${pad4(n)}`, accounts[a], version, unixNow() + version, `plan_v${version}`];
      const status = await deliverUntilAnswered(url, event, keys);
      if (status !== null) answered += 1;
      if (is2xx(status)) latest.set(accounts[a], Math.max(latest.get(accounts[a]) || 0, version));
    }
  }
  if (answered === 0) throw new CannotRun(`no answer from ${url} to any of ${n} updates`);
  if (latest.size === 0) throw new CannotRun(`${url} acknowledged none of ${n} updates: nothing to judge`);
  const state = await settledStates(db, latest);
  if (![...latest.keys()].some((a) => state.has(a))) {
    throw new CannotRun(`none of ${latest.size} accounts is in the state query's rows (is --db the receiver's database?)`);
  }
  const stale = [...latest.keys()].filter((a) => (state.get(a) || 0) < latest.get(a));
  if (stale.length) {
    const a = stale[0];
    const at = state.has(a) ? `at version ${state.get(a)}` : 'with no version';
    return [1, `reproduced: ${stale.length} of ${latest.size} accounts left at an older version (first: account ${a}, ${at} after version ${latest.get(a)} was acknowledged)`];
  }
  return [0, `not reproduced in ${latest.size} accounts (under ${under(0, latest.size)} % at 95 %)`];
}

function runCmd(flag, cmd) {
  return new Promise((resolve, reject) => {
    const child = childProcess.spawn(cmd, { shell: true, stdio: 'inherit' });
    child.on('error', (e) => reject(new CannotRun(`${flag} ${pythonQuoted(cmd)} could not start: ${e.message}`)));
    child.on('exit', (code, signal) => {
      const status = code !== null ? code : -(os.constants.signals[signal] || 1);
      if (status !== 0) reject(new CannotRun(`${flag} ${pythonQuoted(cmd)} exited ${status}`));
      else resolve();
    });
  });
}

/**
 * Events delivered until answered and applied once; then, after --retention-cmd and
 * --replay-after, each re-sent signed afresh.
 */
async function lateReplay(url, db, prefix, trials, keys, opts) {
  const events = [];
  for (let n = 1; n <= trials; n++) events.push(eventOf(prefix, n));
  const answers = [];
  for (const event of events) answers.push(await deliverUntilAnswered(url, event, keys));
  if (answers.every((a) => a === null)) throw new CannotRun(`no answer from ${url} to any of ${trials} events`);
  const first = await settled(db, prefix, trials);
  const once = events.filter((event) => first.get(event[0]) === 1);
  if (!once.length) {
    throw new CannotRun(`none of ${trials} events was seen applied once before the replay (is --db the receiver's database?)`);
  }
  if (opts.retentionCmd) await runCmd('--retention-cmd', opts.retentionCmd);
  await sleep(opts.replayAfter);
  const replayed = [];
  for (const event of once) {
    const body = bodyOf(event);
    replayed.push(await post(url, headersOf(event, body, keys), body));
  }
  if (replayed.every((r) => r === null)) {
    throw new CannotRun(`no answer from ${url} to any of ${once.length} replays (is the receiver up after --retention-cmd?)`);
  }
  const counts = await settled(db, prefix, once.length);
  return judgeTwice(once.map((event) => event[0]), counts, trials);
}

/** The body with the amount raised, or, where the body carries none, a key added. */
function tampered(body, event) {
  const raised = bodyOf([event[0], event[1], event[2] + 1000001, event[3]]);
  if (!raised.equals(body)) return raised;
  const at = body.indexOf('{');
  if (at < 0) return Buffer.concat([body, Buffer.from(' ')]);
  return Buffer.concat([body.subarray(0, at + 1), Buffer.from('"hookbench_tampered":true,'), body.subarray(at + 1)]);
}

/**
 * A signed request declaring a 1,000,000-byte body, of which only the first 10 bytes are sent, as
 * the audit sends it: 'held' when the receiver still holds it after `wait` seconds without an
 * answer, else the status it answered, or 'closed'; null when no connection was made.
 */
function stalled(url, event, keys, wait) {
  const { host, port } = target(url);
  const body = bodyOf(event);
  return new Promise((resolve) => {
    const socket = net.createConnection({ host, port });
    let done = false;
    const finish = (outcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    let connected = false;
    // The wait starts once connected; no connection within the sender's timeout is no answer.
    let timer = setTimeout(() => finish(null), FINDING.timeout_s * 1000);
    socket.on('error', () => finish(connected ? 'closed' : null));
    socket.on('close', () => finish(connected ? 'closed' : null));
    socket.on('data', (chunk) => {
      const status = chunk.toString('latin1').split(' ', 3)[1];
      finish(/^\d+$/.test(status || '') ? Number(status) : 'closed');
    });
    socket.on('connect', () => {
      connected = true;
      clearTimeout(timer);
      timer = setTimeout(() => finish('held'), wait * 1000);
      socket.write(Buffer.concat([rawHead(url, headersOf(event, body, keys), 1_000_000), body.subarray(0, 10)]));
    });
  });
}

/** One case of hostile-input for `event`: the statuses of what was sent. */
async function hostileCase(url, which, event, keys) {
  if (which.startsWith('oversized:')) {
    // A body of the size the audit's --oversized-bytes named: past the receiver's limit.
    const n = Number(which.split(':')[1]);
    const head = Buffer.from(`{"id":"${event[0]}","padding":"`);
    const body = Buffer.concat([head, Buffer.alloc(Math.max(n - 2 - head.length, 0), 'x'), Buffer.from('"}')]);
    return [await post(url, headersOf(event, body, keys), body)];
  }
  const body = bodyOf(event);
  if (which === 'malformed') {
    // JSON cut off after a key, signed as a whole body would be: refused, never applied.
    const cut = Buffer.from(`{"id": "${event[0]}", "amount": `);
    return [await post(url, headersOf(event, cut, keys), cut)];
  }
  if (which === 'tampered') return [await post(url, headersOf(event, body, keys), tampered(body, event))];
  if (which === 'wrong-secret') return [await post(url, headersOf(event, body, strangerKeys()), body)];
  if (which === 'unsigned') return [await post(url, { 'content-type': 'application/json' }, body)];
  if (which === 'stale' || which === 'future') {
    const ts = unixNow() + (which === 'stale' ? -3600 : 3600);
    const dated = bodyOf(event, ts); // a body that carries its time carries this one
    return [await post(url, headersOf(event, dated, keys, ts), dated)];
  }
  // rebodied: the event until answered, then its id with another amount, as the audit sends it.
  const other = [event[0], event[1], 999, event[3]];
  return [await deliverUntilAnswered(url, event, keys), await deliverUntilAnswered(url, other, keys)];
}

/**
 * Each case the audit's witnesses showed, --trials times: what must be refused (4xx, never
 * applied), one id sent with another body (applied at most once), a stalled body (not held past
 * --stall-wait, the audit's) and a body past the receiver's limit (never acknowledged).
 */
async function hostileInput(url, db, prefix, trials, keys, wait = FINDING.stall_wait_s) {
  // First a control: one event signed right, which must be acknowledged and applied, or nothing
  // the cases show can be judged (a wrong HOOKBENCH_SECRET refuses everything; a wrong --db
  // applies nothing).
  const control = eventOf(prefix, 0, 'hos_control');
  const answer = await deliverUntilAnswered(url, control, keys);
  if (answer === null) throw new CannotRun(`no answer from ${url} to a correctly signed event`);
  if (!is2xx(answer)) {
    throw new CannotRun(`a correctly signed event was answered ${answer}: is HOOKBENCH_SECRET the receiver's secret?`);
  }
  const sent = [];
  const holds = [];
  let n = 0;
  for (let t = 0; t < trials; t++) {
    for (const which of FINDING.cases) {
      n += 1;
      const event = eventOf(prefix, n, `hos_${which.split(':')[0].split('-').join('')}`);
      // Stalled bodies are held together below: one wait, not one per trial.
      if (which === 'stalled') holds.push(event);
      else sent.push([which, event[0], await hostileCase(url, which, event, keys)]);
    }
  }
  const held = await Promise.all(holds.map((event) => stalled(url, event, keys, wait)));
  holds.forEach((event, i) => sent.push(['stalled', event[0], [held[i]]]));
  const counts = await settled(db, prefix, 1 + sent.filter(([which]) => which === 'rebodied').length);
  if (!counts.get(control[0])) {
    throw new CannotRun(`the correctly signed control event ${control[0]} was never applied (is --db the receiver's database?)`);
  }
  const found = new Map();
  for (const [which, eventId, statuses] of sent) {
    const appliedN = counts.get(eventId) || 0;
    let bad = '';
    if (which === 'rebodied') {
      if (appliedN > 1) bad = `applied ${appliedN} times`;
    } else if (which === 'stalled' || which.startsWith('oversized:')) {
      // Never acknowledged, never applied; a stalled body also never held past the wait.
      const acked = statuses.filter((s) => typeof s === 'number' && is2xx(s));
      if (which === 'stalled' && statuses[0] === 'held') bad = `held open past ${wait} s`;
      else if (acked.length) bad = `answered ${acked[0]}`;
      else if (appliedN) bad = `applied ${appliedN} times`;
    } else {
      const wrong = statuses.filter((s) => s !== null && !(s >= 400 && s < 500));
      if (appliedN) bad = `applied ${appliedN} times`;
      else if (wrong.length) bad = `answered ${wrong[0]}, not 4xx`;
    }
    if (bad) {
      if (!found.has(which)) found.set(which, []);
      found.get(which).push(`${eventId} ${bad}`);
    }
  }
  if (found.size) {
    const said = [...found].map(([which, w]) => `${which.split(':')[0]}: ${w.length} of ${trials} (${w[0]})`).join('; ');
    return [1, `reproduced: ${said}`];
  }
  const names = FINDING.cases.map((which) => which.split(':')[0]).join(', ');
  return [0, `not reproduced in ${trials} trials of ${names} (under ${under(0, trials)} % at 95 %)`];
}

/**
 * How the audit's load sends event `n`: 'once', or, at the load's shares, 'concurrent' (two copies
 * together), 'duplicate' (a second copy 50 ms after the first) or 'ack-lost' (a first attempt
 * whose answer is dropped). Chosen by a hash of `n`, so every run sends the same.
 */
function copiesOf(n) {
  const load = FINDING.load;
  let r = ((n * 2654435761) % 4294967296) / 4294967296;
  for (const kind of ['concurrent', 'duplicate', 'ack-lost']) {
    const share = load['p_' + kind.replace('-', '_')];
    if (r < share) return kind;
    r -= share;
  }
  return 'once';
}

/**
 * --trials events sent by 16 senders, each until acknowledged (2xx), with the copies the audit's
 * load sends (copiesOf), while the receiver is killed with --kill-cmd and started with
 * --start-cmd: reproduced when an event was applied twice or acknowledged and never applied.
 */
async function crash(url, db, prefix, trials, keys, opts) {
  if (!(opts.killCmd && opts.startCmd)) {
    throw new CannotRun('--check crash needs --kill-cmd and --start-cmd (your receiver\'s kill and start commands)');
  }
  const events = [];
  for (let n = 1; n <= trials; n++) events.push(eventOf(prefix, n));
  const acked = new Set();
  const deadline = Date.now() + 300 * 1000;
  let stop = false;
  let failure = null;
  let next = 0;
  let done = 0;

  async function untilAcked(event) {
    const kind = copiesOf(Number(event[0].slice(event[0].lastIndexOf('_') + 1)));
    if (kind === 'concurrent' || kind === 'duplicate') {
      const statuses = await released(url, event, keys, [0, kind === 'concurrent' ? 0 : 0.05]);
      if (statuses.some(is2xx)) {
        acked.add(event[0]);
        return;
      }
    } else if (kind === 'ack-lost') {
      const body = bodyOf(event);
      await postAndDrop(url, headersOf(event, body, keys), body);
    }
    while (Date.now() < deadline && !stop) {
      const body = bodyOf(event);
      const status = await post(url, headersOf(event, body, keys), body);
      if (is2xx(status)) {
        acked.add(event[0]);
        return;
      }
      await sleep(0.2);
    }
  }

  // 16 senders taking the events in turn, as script.py's pool of 16 threads does.
  async function sender() {
    while (next < events.length) {
      const event = events[next++];
      await untilAcked(event).catch((e) => {
        failure = failure || e;
        stop = true;
      });
      done += 1;
    }
  }

  const senders = Promise.all(Array.from({ length: 16 }, sender));
  try {
    for (let k = 0; k < opts.kills; k++) {
      // Kill once a share of the events is in, while the rest are in flight.
      const share = Math.floor(trials * (k + 1) / (opts.kills + 1));
      while (done < share && Date.now() < deadline && !failure) await sleep(0.005);
      if (failure) break;
      await runCmd('--kill-cmd', opts.killCmd);
      await runCmd('--start-cmd', opts.startCmd);
    }
  } catch (e) {
    stop = true;
    await senders;
    throw e;
  }
  await senders;
  if (failure) throw failure;
  if (!acked.size) throw new CannotRun(`no event was acknowledged by ${url}`);
  const counts = await settled(db, prefix, acked.size);
  const [code, said] = judgeTwice(events.map((event) => event[0]), counts, trials, `events under ${opts.kills} kills`);
  if (code === 2) return [code, said]; // nothing applied at all: no event can be called lost
  const kinds = events.map((_, i) => copiesOf(i + 1));
  const many = (kind) => kinds.filter((k) => k === kind).length;
  const load = `as the audit's load, ${many('concurrent')} sent as two copies together, ${many('duplicate')} twice 50 ms apart, ${many('ack-lost')} with a lost answer`;
  const lost = [...acked].sort().filter((eventId) => (counts.get(eventId) || 0) === 0);
  if (lost.length) {
    const doubled = code === 1 ? `; ${said.slice(said.indexOf(': ') + 2)}` : '';
    return [1, `reproduced: ${lost.length} of ${acked.size} acknowledged events never applied (first: ${lost[0]})${doubled}; ${load}`];
  }
  return [code, `${said}; ${load}`];
}

/**
 * --trials events, every fifth a credit to the audit's --poison-account (which the handler refuses),
 * each sent as a provider sends it: until acknowledged (2xx) or refused (4xx), five attempts at
 * most. Reproduced when a poison event is applied, or (with the audit's dead-letter query) not
 * dead-lettered, or another event is not applied exactly once.
 */
async function poison(url, db, prefix, trials, keys) {
  if (trials < 5) throw new CannotRun('--trials must be at least 5 for poison: every fifth event is poison');
  const events = [];
  const poisoned = new Set();
  for (let n = 1; n <= trials; n++) {
    let event = eventOf(prefix, n);
    if (n % 5 === 0) {
      event = [event[0], FINDING.poison_account, event[2], event[3]];
      poisoned.add(event[0]);
    }
    events.push(event);
  }
  const answers = [];
  for (const event of events) answers.push(await deliverUntilAnswered(url, event, keys, 5));
  if (answers.every((a) => a === null)) throw new CannotRun(`no answer from ${url} to any of ${trials} events`);
  const rest = events.map((e) => e[0]).filter((id) => !poisoned.has(id));
  const counts = await settled(db, prefix, rest.length);
  if (!rest.some((id) => counts.get(id))) {
    throw new CannotRun(`none of ${rest.length} events was applied at all (is --db the receiver's database?)`);
  }
  const found = [];
  const sortedPoison = [...poisoned].sort();
  const appliedPoison = sortedPoison.filter((id) => counts.get(id));
  if (appliedPoison.length) found.push(`${appliedPoison.length} of ${poisoned.size} poison events applied (first: ${appliedPoison[0]})`);
  if (FINDING.dead_letter_query) {
    const parked = new Set((await queried(db, FINDING.dead_letter_query, 'dead-letter')).map((row) => String(row[0])));
    const missing = sortedPoison.filter((id) => !parked.has(id));
    if (missing.length) found.push(`${missing.length} of ${poisoned.size} poison events not dead-lettered (first: ${missing[0]})`);
  }
  const wrong = rest.filter((id) => (counts.get(id) || 0) !== 1);
  if (wrong.length) {
    found.push(`${wrong.length} of ${rest.length} other events not applied exactly once (first: ${wrong[0]}, applied ${counts.get(wrong[0]) || 0} times)`);
  }
  if (found.length) return [1, 'reproduced: ' + found.join('; ')];
  return [0, `not reproduced with ${poisoned.size} poison events among ${trials} (under ${under(0, poisoned.size)} % at 95 %)`];
}

/** [exit code, what to say]: 1 reproduced, 0 not, 2 it could not run. */
async function reproduce(url, db, trials, opts = {}) {
  opts = { retentionCmd: null, replayAfter: 0, killCmd: null, startCmd: null, kills: 1, signedUrl: null, ...opts };
  if (trials < 1) return [2, 'repro: --trials must be at least 1'];
  signedUrl = opts.signedUrl || url;
  try {
    const keys = secrets();
    // The query it judges with runs before anything is sent.
    if (FINDING.check === 'out-of-order') await states(db);
    else await baseline(db);
    target(url);
    const stamp = Date.now();
    const prefix = 'r' + stamp.toString(36) + '_';
    const check = FINDING.check;
    if (check === 'semantic-duplicate') {
      const [pairs, answered] = await semanticPairs(url, prefix, trials, keys);
      if (answered === 0) throw new CannotRun(`no answer from ${url} to any of ${trials} pairs`);
      // A receiver right to dedupe on the object applies one event of each pair.
      return judgePairs(pairs, await settled(db, prefix, trials), trials);
    }
    if (check === 'late-replay') return await lateReplay(url, db, prefix, trials, keys, opts);
    if (check === 'hostile-input') return await hostileInput(url, db, prefix, trials, keys, opts.stallWait ?? FINDING.stall_wait_s);
    if (check === 'crash') return await crash(url, db, prefix, trials, keys, opts);
    if (check === 'out-of-order') return await outOfOrder(url, db, prefix, trials, keys);
    if (check === 'poison') return await poison(url, db, prefix, trials, keys);
    const send = { 'concurrent-copies': concurrentCopies, 'sequential-duplicate': sequentialDuplicate,
      'lost-ack': lostAck, 'race-window': raceWindow }[check];
    if (!send) throw new CannotRun(`this script does not reproduce ${check}`);
    let answered = 0;
    const events = [];
    for (let n = 1; n <= trials; n++) {
      const event = eventOf(prefix, n);
      events.push(event[0]);
      const statuses = await send(url, event, keys);
      if (statuses.some((s) => s !== null)) answered += 1;
    }
    if (answered === 0) throw new CannotRun(`no answer from ${url} to any of ${trials} trials`);
    return judgeTwice(events, await settled(db, prefix, trials), trials);
  } catch (e) {
    if (e instanceof CannotRun) return [2, `repro: cannot run: ${e.message}`];
    throw e;
  }
}

/** The flags this finding's check takes: for parseArgs, with their help. */
function flags() {
  const f = {
    url: { type: 'string', help: "the receiver's webhook URL (default: the audited one)" },
    db: { type: 'string', help: "the observer's database: a SQLite path, sqlite:///path or postgres://... (required)" },
    trials: { type: 'string', kind: 'int', help: 'how many fresh events to try (accounts for out-of-order, pairs for semantic-duplicate)' },
    'signed-url': { type: 'string', help: 'the URL the provider signs (Square), when not --url' },
    help: { type: 'boolean', short: 'h', help: 'show this help and exit' },
  };
  if (FINDING.check === 'late-replay') {
    f['retention-cmd'] = { type: 'string', help: 'a shell command run before the replay (your purge job)' };
    f['replay-after'] = { type: 'string', kind: 'float', help: 'seconds to wait before the replay' };
  }
  if (FINDING.cases.includes('stalled')) {
    f['stall-wait'] = { type: 'string', kind: 'float', help: "seconds a stalled body may be held (default: the audit's --stall-wait)" };
  }
  if (FINDING.check === 'crash') {
    f['kill-cmd'] = { type: 'string', help: 'a shell command that kills the receiver (required)' };
    f['start-cmd'] = { type: 'string', help: 'a shell command that starts it and returns once it answers (required)' };
    f.kills = { type: 'string', kind: 'int', help: 'how many times to kill it during the run' };
  }
  return f;
}

/** The flag's value as a number, as Python's int() or float() reads it; NaN when it is none. */
function numberOf(kind, text) {
  const plain = text.trim().replace(/(\d)_(?=\d)/g, '$1');
  if (kind === 'int') return /^[+-]?\d+$/.test(plain) ? Number(plain) : NaN;
  return plain !== '' && Number.isFinite(Number(plain)) ? Number(plain) : NaN;
}

/** The parsed flags; exits 2 naming the flag when one is unknown, missing or not a number. */
function parseFlags(prog) {
  const spec = flags();
  const usage = `usage: ${prog} [-h] [--url URL] --db DB [--trials TRIALS] [--signed-url SIGNED_URL]` +
    (spec['replay-after'] ? ' [--retention-cmd RETENTION_CMD] [--replay-after REPLAY_AFTER]' : '') +
    (spec.kills ? ' --kill-cmd KILL_CMD --start-cmd START_CMD [--kills KILLS]' : '') +
    (spec['stall-wait'] ? ' [--stall-wait STALL_WAIT]' : '');
  const fail = (message) => {
    process.stderr.write(`${usage}\n${prog}: error: ${message}\n`, () => process.exit(2));
    return null;
  };
  let values;
  try {
    const options = Object.fromEntries(Object.entries(spec)
      .map(([name, o]) => [name, o.short ? { type: o.type, short: o.short } : { type: o.type }]));
    ({ values } = util.parseArgs({ args: process.argv.slice(2), options, strict: true, allowPositionals: false }));
  } catch (e) {
    return fail(e.message);
  }
  if (values.help) {
    const lines = Object.entries(spec).map(([name, o]) => `  --${name.padEnd(14)} ${o.help}`);
    process.stdout.write(`${usage}\n\n${ABOUT}\n\noptions:\n${lines.join('\n')}\n`, () => process.exit(0));
    return null;
  }
  const missing = ['db', 'kill-cmd', 'start-cmd'].filter((name) => spec[name] && values[name] === undefined);
  if (missing.length) return fail(`the following arguments are required: ${missing.map((m) => '--' + m).join(', ')}`);
  for (const [name, o] of Object.entries(spec)) {
    if (!o.kind || values[name] === undefined) continue;
    const n = numberOf(o.kind, values[name]);
    if (Number.isNaN(n)) return fail(`argument --${name}: invalid ${o.kind} value: ${pythonQuoted(values[name])}`);
    values[name] = n;
  }
  return values;
}

async function main() {
  if (typeof util.parseArgs !== 'function') {
    process.stderr.write('repro: cannot run: this needs Node 18.3 or later (node:util parseArgs)\n', () => process.exit(2));
    return;
  }
  const values = parseFlags(path.basename(process.argv[1] || 'repro.js'));
  if (!values) return;
  const opts = {
    retentionCmd: values['retention-cmd'] || null,
    replayAfter: values['replay-after'] !== undefined ? values['replay-after'] : 0,
    killCmd: values['kill-cmd'] || null,
    startCmd: values['start-cmd'] || null,
    kills: values.kills !== undefined ? values.kills : 1,
    signedUrl: values['signed-url'] || null,
    stallWait: values['stall-wait'] !== undefined ? values['stall-wait'] : FINDING.stall_wait_s,
  };
  const url = values.url !== undefined ? values.url : FINDING.url;
  const trials = values.trials !== undefined ? values.trials : FINDING.trials;
  const [code, said] = await reproduce(url, values.db, trials, opts);
  // Exit once the line is out (a pipe may be written asynchronously).
  (code === 2 ? process.stderr : process.stdout).write(said + '\n', () => process.exit(code));
}

// Anything unforeseen is exit 2, never 1: exit 1 says the finding reproduced.
function unforeseen(e) {
  process.stderr.write(`repro: cannot run: ${(e && e.stack) || e}\n`, () => process.exit(2));
}
if (require.main === module) {
  process.on('unhandledRejection', unforeseen);
  process.on('uncaughtException', unforeseen);
  main().catch(unforeseen);
} else {
  // Required rather than run (hookbench's tests compare its signatures with hookbench's own).
  module.exports = { signature, secrets };
}
