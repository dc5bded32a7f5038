// Creates the handler_calls table (schema.sql) in WILD_DB_URL's database.
import { readFileSync } from "node:fs";
import pg from "pg";

const client = new pg.Client({ connectionString: process.env.WILD_DB_URL });
await client.connect();
await client.query(readFileSync(new URL("./schema.sql", import.meta.url), "utf8"));
await client.end();
