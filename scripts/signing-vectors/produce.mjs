// Produces harness/tests/vectors/signing.json: signatures made, or accepted, by each provider's own
// library, for fixed inputs. hookbench's signer must reproduce every one of them byte for byte
// (harness/src/wire/signing.rs's tests). Run by scripts/signing-vectors/produce.sh.
//
// - Standard Webhooks: `standardwebhooks` signs; its `verify` accepts.
// - Stripe: `stripe`'s `webhooks.generateTestHeaderString` signs; `webhooks.constructEvent` accepts.
// - GitHub: `@octokit/webhooks-methods`' `sign` signs; its `verify` accepts.
// - Shopify: `@shopify/shopify-api` has no signing function; the signature is Node's crypto as
//   Shopify's documentation computes it, and the vector is written only if the library's
//   `webhooks.validate` accepts the whole request.
import { Webhook } from "standardwebhooks";
import Stripe from "stripe";
import { sign as ghSign, verify as ghVerify } from "@octokit/webhooks-methods";
import "@shopify/shopify-api/adapters/node";
import { shopifyApi, ApiVersion } from "@shopify/shopify-api";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";

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
process.stdout.write(JSON.stringify({ produced_by: "scripts/signing-vectors/produce.mjs", libraries, vectors }, null, 2) + "\n");
