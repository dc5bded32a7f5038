// Produces, into the directory given as its one argument (produce.sh passes harness/tests/vectors,
// or a temporary directory for --check), two files from the providers' own libraries:
//
// signing.json: signatures made, or accepted, by each provider's own library, for fixed inputs.
// hookbench's signer must reproduce every one of them byte for byte (harness/src/wire/signing.rs's
// tests).
//
// - Standard Webhooks: `standardwebhooks` signs; its `verify` accepts.
// - Stripe: `stripe`'s `webhooks.generateTestHeaderString` signs; `webhooks.constructEvent` accepts.
// - GitHub: `@octokit/webhooks-methods`' `sign` signs; its `verify` accepts.
// - Shopify: `@shopify/shopify-api` has no signing function; the signature is Node's crypto as
//   Shopify's documentation computes it, and the vector is written only if the library's
//   `webhooks.validate` accepts the whole request.
//
// verification.json: what each library ACCEPTS when a receiver verifies with it, holding one secret
// ("held"), at a fixed now (NOW, with Date.now mocked to it), called as a receiver calls it (each
// library's default tolerance): the signed timestamp moved by OFFSETS, and signature headers
// carrying signatures made with "held" and/or a secret the receiver does not hold ("other"). Each
// case records accepted true/false and, when refused, the library's message (first line).
//
// Where each library's rule lives (the files Node loads for this script's imports, versions as
// pinned in package-lock.json):
//
// - standardwebhooks 1.1.1, node_modules/standardwebhooks/dist/index.js:
//     line 7     `const WEBHOOK_TOLERANCE_IN_SECONDS = 5 * 60;` (not configurable)
//     line 60    verify() calls verifyTimestamp() BEFORE it looks at any signature
//     line 101   `const now = Math.floor(Date.now() / 1000);`
//     line 106   `if (now - timestamp > WEBHOOK_TOLERANCE_IN_SECONDS)` -> "Message timestamp too old"
//     line 109   `if (timestamp > now + WEBHOOK_TOLERANCE_IN_SECONDS)` -> "Message timestamp too new"
//                so |now - t| <= 300 is accepted, both ways
//     lines 63-83 the header is split on " "; every `v1,<sig>` entry is compared (entries of
//                other versions skipped) and the first match accepts; none -> "No matching
//                signature found"
// - stripe 23.1.0, node_modules/stripe/esm/Webhooks.js:
//     line 12    `DEFAULT_TOLERANCE: 300`
//     line 20    constructEvent passes `tolerance ?? Webhook.DEFAULT_TOLERANCE` to verifyHeader
//     lines 198-215 parseHeader: split on ",", `t=` sets the timestamp, every `v1=` is collected
//     line 163   accepted if ANY collected v1 equals the expected signature (secureCompare);
//                the signature is checked BEFORE the timestamp (lines 169-189)
//     line 190   `const timestampAge = Math.floor((typeof receivedAt === 'number' ? receivedAt : Date.now()) / 1000) - details.timestamp;`
//     line 191   `if (tolerance > 0 && timestampAge > tolerance)` -> "Timestamp outside the tolerance zone"
//                so only OLD timestamps are refused (age > 300); a timestamp in the future has a
//                negative age and is accepted however far ahead; tolerance 0 turns the check off
// - @octokit/webhooks-methods 6.0.0, node_modules/@octokit/webhooks-methods/dist-node/index.js:
//     lines 25-42 verify(secret, payload, signature): no timestamp at all; the whole header value
//                is compared with `sha256=<hex HMAC-SHA256(secret, payload)>` (length check, then
//                timingSafeEqual) and it resolves false (no message) when they differ. One
//                signature per X-Hub-Signature-256 header: a header of two is not expressible.
//                (verifyWithFallback, lines 46-60, tries more secrets the RECEIVER holds.)
// - @shopify/shopify-api 13.1.0, node_modules/@shopify/shopify-api/dist/esm/lib/:
//     webhooks/validate.mjs lines 20-38: validate() checks the HMAC, then the required headers
//     utils/hmac-validator.mjs lines 58-78: validateHmacFromRequest: base64 HMAC-SHA256 of the
//                raw body with config.apiSecretKey, compared (safeCompare, line 72) with the whole
//                X-Shopify-Hmac-Sha256 value; no timestamp. It returns {valid: false, reason:
//                "invalid_hmac"} instead of throwing; that reason is recorded as the error.
//                HMAC_TIMESTAMP_PERMITTED_CLOCK_TOLERANCE_SEC = 90 (line 13) applies only to
//                validateHmac (OAuth/query-string HMACs, line 45), not to webhooks. One signature
//                per header: a header of two is not expressible.
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import Stripe from "stripe";
import { sign as ghSign, verify as ghVerify } from "@octokit/webhooks-methods";
import "@shopify/shopify-api/adapters/node";
import { shopifyApi, ApiVersion } from "@shopify/shopify-api";
import { createHmac } from "node:crypto";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

const outDir = process.argv[2];
if (!outDir) { console.error("usage: node produce.mjs <output directory>"); process.exit(2); }

const inputs = [
  { id: "evt_000001", event_type: "credit", timestamp: 1764460800, body: '{"type":"credit","id":"evt_000001","account":7,"amount":100,"created":1764460000}' },
  { id: "a1b2c3_seq_0003", event_type: "plan_update", timestamp: 1764464400, body: '{"type":"plan","id":"a1b2c3_seq_0003","account":42,"plan":"pro","version":3,"created":1764464000}' },
  { id: "evt_unicode", event_type: "credit", timestamp: 1700000000, body: '{"note":"caf\u00e9 \u2713","amount":1}' },
];
const secrets = {
  "standard-webhooks": ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24="],
  stripe: ["whsec_test_7d8c1a2b3c4d5e6f", "whsec_test_second_secret"],
  github: ["It's a Secret to Everybody"],
  shopify: ["hush-shopify-app-secret"],
};
const shopDomain = "hookbench-audit.myshopify.com";
const shopApiVersion = "2025-10";

const stripe = new Stripe("sk_test_unused");
const shopify = shopifyApi({
  apiKey: "unused", apiSecretKey: secrets.shopify[0], scopes: [], hostName: "localhost",
  apiVersion: ApiVersion.October25, isEmbeddedApp: false, logger: { level: 0 },
});

function fail(what) { console.error(`not accepted by the provider's library: ${what}`); process.exit(1); }

const vectors = [];
for (const input of inputs) {
  const { id, timestamp, body } = input;
  // Standard Webhooks: one signature per secret, space-separated.
  const sws = secrets["standard-webhooks"].map((s) => new Webhook(s).sign(id, new Date(timestamp * 1000), body));
  const swHeaders = { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": sws.join(" ") };
  // The library refuses old timestamps before it looks at the signature: verify at the
  // vector's own time.
  const realNow = Date.now;
  Date.now = () => timestamp * 1000;
  for (const s of secrets["standard-webhooks"]) {
    try { new Webhook(s).verify(body, swHeaders); } catch (e) { fail(`standard-webhooks ${id}: ${e}`); }
  }
  Date.now = realNow;
  vectors.push({ scheme: "standard-webhooks", secrets: secrets["standard-webhooks"], ...input, headers: swHeaders });

  // Stripe: the library signs with one secret; with two, a `v1` each, as Stripe sends during a roll.
  const one = (s) => stripe.webhooks.generateTestHeaderString({ payload: body, secret: s, timestamp });
  const v1s = secrets.stripe.map((s) => one(s).split(",").find((p) => p.startsWith("v1=")));
  const stripeHeader = `t=${timestamp},${v1s.join(",")}`;
  for (const s of secrets.stripe) {
    try { stripe.webhooks.constructEvent(body, stripeHeader, s, Number.MAX_SAFE_INTEGER); } catch (e) { fail(`stripe ${id}: ${e}`); }
  }
  vectors.push({ scheme: "stripe", secrets: secrets.stripe, ...input, headers: { "stripe-signature": stripeHeader } });

  // GitHub.
  const gh = await ghSign({ secret: secrets.github[0], algorithm: "sha256" }, body).catch(() => ghSign(secrets.github[0], body));
  if (!(await ghVerify(secrets.github[0], body, gh))) fail(`github ${id}`);
  vectors.push({ scheme: "github", secrets: secrets.github, ...input,
    headers: { "x-hub-signature-256": gh, "x-github-delivery": id, "x-github-event": input.event_type } });

  // Shopify: Node's crypto, accepted by the library before it is written.
  const shop = createHmac("sha256", secrets.shopify[0]).update(body, "utf8").digest("base64");
  const shopHeaders = {
    "x-shopify-hmac-sha256": shop, "x-shopify-webhook-id": id, "x-shopify-event-id": id,
    "x-shopify-topic": input.event_type, "x-shopify-shop-domain": shopDomain, "x-shopify-api-version": shopApiVersion,
  };
  const rawRequest = { method: "POST", url: "/webhooks", headers: { ...shopHeaders, "content-type": "application/json" } };
  const result = await shopify.webhooks.validate({ rawBody: body, rawRequest, rawResponse: {} });
  if (!result.valid) fail(`shopify ${id}: ${JSON.stringify(result)}`);
  vectors.push({ scheme: "shopify", secrets: secrets.shopify, ...input, headers: shopHeaders });
}

const pkg = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
const libraries = {
  standardwebhooks: pkg("standardwebhooks"), stripe: pkg("stripe"),
  "@octokit/webhooks-methods": pkg("@octokit/webhooks-methods"), "@shopify/shopify-api": pkg("@shopify/shopify-api"),
};

// verification.json. The receiver holds `held` only; `other` makes signatures it cannot check.
const NOW = 1764460800;
const OFFSETS = [-3600, -301, -300, -299, 0, 299, 300, 301, 3600];
const SIGNATURE_SETS = [["held"], ["other"], ["held", "other"], ["other", "held"]];
const { id: vId, body: vBody, event_type: vTopic } = inputs[0];
const keys = {
  "standard-webhooks": { held: secrets["standard-webhooks"][0], other: secrets["standard-webhooks"][1] },
  stripe: { held: secrets.stripe[0], other: secrets.stripe[1] },
  github: { held: secrets.github[0], other: "Not the secret the receiver holds" },
  shopify: { held: secrets.shopify[0], other: "not-the-shopify-app-secret" },
};
const oneLine = (message) => String(message).split("\n")[0].trim();

// Each scheme: how to build the signature header(s) for a timestamp and a list of secrets, and how
// a receiver holding `held` verifies with the library. verify returns null (accepted) or the
// library's refusal; anything else the library throws (a changed API, say) is not a refusal and
// stops the script.
const schemes = [
  {
    scheme: "standard-webhooks", verified_by: "standardwebhooks Webhook.verify", timestamped: true, oneSignaturePerHeader: false,
    verify: async (ts, names) => {
      const sig = names.map((n) => new Webhook(keys["standard-webhooks"][n]).sign(vId, new Date(ts * 1000), vBody)).join(" ");
      const headers = { "webhook-id": vId, "webhook-timestamp": String(ts), "webhook-signature": sig };
      try { new Webhook(keys["standard-webhooks"].held).verify(vBody, headers); return null; } catch (e) {
        if (e instanceof WebhookVerificationError) return oneLine(e.message);
        throw e;
      }
    },
  },
  {
    scheme: "stripe", verified_by: "stripe webhooks.constructEvent", timestamped: true, oneSignaturePerHeader: false,
    verify: async (ts, names) => {
      const v1s = names.map((n) => stripe.webhooks.generateTestHeaderString({ payload: vBody, secret: keys.stripe[n], timestamp: ts })
        .split(",").find((p) => p.startsWith("v1=")));
      const header = `t=${ts},${v1s.join(",")}`;
      // No tolerance argument: the library's default, as a receiver calls it.
      try { stripe.webhooks.constructEvent(vBody, header, keys.stripe.held); return null; } catch (e) {
        if (e instanceof Stripe.errors.StripeSignatureVerificationError) return oneLine(e.message);
        throw e;
      }
    },
  },
  {
    scheme: "github", verified_by: "@octokit/webhooks-methods verify", timestamped: false, oneSignaturePerHeader: true,
    verify: async (_ts, names) => {
      const header = await ghSign(keys.github[names[0]], vBody);
      // verify resolves false without a message; that is what is recorded.
      return (await ghVerify(keys.github.held, vBody, header)) ? null : "verify resolved false";
    },
  },
  {
    scheme: "shopify", verified_by: "@shopify/shopify-api webhooks.validate", timestamped: false, oneSignaturePerHeader: true,
    verify: async (_ts, names) => {
      const hmac = createHmac("sha256", keys.shopify[names[0]]).update(vBody, "utf8").digest("base64");
      const headers = {
        "x-shopify-hmac-sha256": hmac, "x-shopify-webhook-id": vId, "x-shopify-event-id": vId,
        "x-shopify-topic": vTopic, "x-shopify-shop-domain": shopDomain, "x-shopify-api-version": shopApiVersion,
        "content-type": "application/json",
      };
      const result = await shopify.webhooks.validate({ rawBody: vBody, rawRequest: { method: "POST", url: "/webhooks", headers }, rawResponse: {} });
      return result.valid ? null : oneLine(result.reason ?? JSON.stringify(result));
    },
  },
];

const cases = [];
const realNow = Date.now;
Date.now = () => NOW * 1000;
for (const s of schemes) {
  const record = async (offset, names) => {
    const error = await s.verify(NOW + offset, names);
    cases.push({ scheme: s.scheme, offset_s: offset, signed_with: names, accepted: error === null, error, verified_by: s.verified_by });
  };
  // Timestamp offsets, signed with `held` (offset 0 only for the schemes that sign no timestamp).
  for (const offset of s.timestamped ? OFFSETS : [0]) await record(offset, ["held"]);
  // Signature sets at offset 0 (["held"] at offset 0 is already above). GitHub's and Shopify's
  // headers carry one signature: their two-signature sets are not expressible and not emitted.
  for (const names of SIGNATURE_SETS.slice(1)) {
    if (names.length > 1 && s.oneSignaturePerHeader) continue;
    await record(0, names);
  }
}
Date.now = realNow;

const write = (name, value) => writeFileSync(join(outDir, name), JSON.stringify(value, null, 2) + "\n");
mkdirSync(outDir, { recursive: true });
write("signing.json", { produced_by: "scripts/signing-vectors/produce.mjs", libraries, vectors });
write("verification.json", { produced_by: "scripts/signing-vectors/produce.mjs", libraries, now: NOW, cases });
