// @octokit/webhooks as its README shows it (`createNodeMiddleware` on node:http, a handler on
// `onAny`), under node:cluster with WORKERS workers (default 2) on 127.0.0.1:PORT. The example's
// one addition is in the handler: a row per call, (delivery id, event name), in Postgres.
import cluster from "node:cluster";
import { createServer } from "node:http";
import process from "node:process";
import { Webhooks, createNodeMiddleware } from "@octokit/webhooks";
import pg from "pg";

const port = Number(process.env.PORT);
const databaseUrl = process.env.WILD_DB_URL;
const secret = process.env.WILD_GITHUB_SECRET ?? "wild-example-secret";
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
  const webhooks = new Webhooks({ secret });

  webhooks.onAny(async ({ id, name }) => {
    await db.query("INSERT INTO handler_calls (delivery_id, event_name) VALUES ($1, $2)", [id, name]);
  });

  const middleware = createNodeMiddleware(webhooks, { path: "/webhooks" });
  createServer(async (req, res) => {
    // `middleware` returns `false` when `req` is unhandled (beyond `/webhooks`)
    if (await middleware(req, res)) return;
    if (req.url === "/healthz") {
      res.writeHead(200).end("ok");
      return;
    }
    res.writeHead(404);
    res.end();
  }).listen(port, "127.0.0.1");
}
