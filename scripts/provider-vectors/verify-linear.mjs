// Asks Linear's own webhook library (@linear/sdk, pinned in package-lock.json) whether a delivery is
// valid. judges.py keeps one of these running (for verify.py and for
// examples/receivers/providers/receiver.py) and talks to it in JSON lines on stdin/stdout:
//
//   in:  {"secret": "...", "body_b64": "<the raw body, base64>", "signature": "<linear-signature>",
//         "now_ms": 1764460800000}            (now_ms optional: the clock to judge at; else the real one)
//   out: {"accepted": true|false, "error": "<first line of the library's error>"|null,
//         "error_name": "Error"|"SyntaxError"|...}
//
// Run by hand: echo '{"secret":"s","body_b64":"e30=","signature":"x"}' | node verify-linear.mjs
//
// Where the rule lives (@linear/sdk 98.0.0, node_modules/@linear/sdk/dist/webhooks-BtY8wrj8.mjs;
// exported as LinearWebhookClient from "@linear/sdk/webhooks", dist/webhooks/index.mjs line 1; the
// old name LinearWebhooks is a deprecated alias in dist/index.mjs line 123642):
//   line 47    constructor(secret): a non-empty string, else TypeError
//   line 217   verify(rawBody, signature, timestamp): the third argument is ignored (line 214)
//   line 218   expected = hex HMAC-SHA256(secret, rawBody); lines 220-221 length check then
//              timingSafeEqual, else throws "Invalid webhook signature"
//   line 222   the timestamp is the body's own `webhookTimestamp` (JSON.parse of the raw body, so a
//              body that is not JSON throws SyntaxError, but only after the signature matched)
//   lines 223-224 missing -> "Missing webhook timestamp"; not a finite number -> "Invalid webhook timestamp"
//   line 225   `if (Math.abs(Date.now() - timestamp) > 1e3 * 60)` -> "Invalid webhook timestamp":
//              |now - webhookTimestamp| <= 60 000 ms is accepted, both ways (so 60 s old passes,
//              61 s old or 61 s ahead does not)
// Date.now is replaced for the one call when now_ms is given, and put back after it.
import { LinearWebhookClient } from "@linear/sdk/webhooks";
import { createInterface } from "node:readline";

const realNow = Date.now;

function judge({ secret, body_b64, signature, now_ms }) {
  const body = Buffer.from(body_b64 ?? "", "base64");
  if (typeof now_ms === "number") Date.now = () => now_ms;
  try {
    const client = new LinearWebhookClient(secret);
    const ok = client.verify(body, signature ?? "");
    return { accepted: ok === true, error: ok === true ? null : `verify returned ${ok}`, error_name: null };
  } catch (e) {
    const message = String(e && e.message !== undefined ? e.message : e).split("\n")[0];
    return { accepted: false, error: message, error_name: e && e.name ? e.name : "Error" };
  } finally {
    Date.now = realNow;
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let answer;
  try {
    answer = judge(JSON.parse(line));
  } catch (e) {
    answer = { accepted: false, error: `bad request to verify-linear.mjs: ${e.message}`, error_name: "BadRequest" };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
}
