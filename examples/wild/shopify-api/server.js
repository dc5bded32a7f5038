// @shopify/shopify-api's `shopify.webhooks.validate` on Express as Shopify's docs show it
// (`express.text({type: '*/*'})`, then validate the raw body), under node:cluster with WORKERS
// workers (default 2) on 127.0.0.1:PORT. The example's one addition is where the docs say "Run my
// webhook-processing code here": a row per call, (X-Shopify-Webhook-Id, topic), in Postgres.
import "@shopify/shopify-api/adapters/node";
import cluster from "node:cluster";
import process from "node:process";
import { ApiVersion, shopifyApi } from "@shopify/shopify-api";
import express from "express";
import pg from "pg";

const port = Number(process.env.PORT);
const databaseUrl = process.env.WILD_DB_URL;
const secret = process.env.WILD_SHOPIFY_SECRET ?? "wild-example-secret";
const workers = Number(process.env.WORKERS ?? 2);

if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT: expected a TCP port, got ${JSON.stringify(process.env.PORT)}`);
  process.exit(2);
}
if (!databaseUrl?.startsWith("postgres")) {
  console.error("WILD_DB_URL: expected a postgres:// URL");
  process.exit(2);
}

if (cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  // A worker that dies is replaced, as a process manager would.
  cluster.on("exit", () => cluster.fork());
} else {
  const db = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  const shopify = shopifyApi({
    apiKey: "wild-example-key",
    apiSecretKey: secret,
    scopes: ["read_orders"],
    hostName: "127.0.0.1",
    apiVersion: ApiVersion.October25,
    isEmbeddedApp: false,
    logger: { level: 0 },
  });

  const app = express();
  app.get("/healthz", (_req, res) => res.send("ok"));
  app.post("/webhooks", express.text({ type: "*/*" }), async (req, res) => {
    const { valid, topic, webhookId } = await shopify.webhooks.validate({
      rawBody: req.body, // is a string
      rawRequest: req,
      rawResponse: res,
    });
    if (!valid) {
      // The docs' snippet answers 400 and falls through; returning is what it means.
      res.sendStatus(400);
      return;
    }
    // Run my webhook-processing code here
    await db.query("INSERT INTO handler_calls (webhook_id, topic) VALUES ($1, $2)", [webhookId, topic]);
    res.sendStatus(200);
  });
  app.listen(port, "127.0.0.1");
}
