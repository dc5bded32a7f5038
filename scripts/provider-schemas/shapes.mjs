// Reads the providers' published type declarations with the TypeScript compiler and writes
// shapes.json: for each object hookbench writes, every key the declaration has, whether it is
// optional, and the JSON kinds its type allows (string, number, boolean, null, array, object).
// Stripe: the `stripe` package's interfaces (types/*.d.ts); Shopify: the Admin REST resources
// of `@shopify/shopify-api` (dist/ts/rest/admin/<version>/*.d.ts), their instance properties.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ts = require("typescript");
const here = path.dirname(new URL(import.meta.url).pathname);
const modules = path.join(here, "node_modules");

// The objects, by the name the Rust test uses, and where each is declared.
const STRIPE = {
  payment_intent: ["PaymentIntents.d.ts", "PaymentIntent"],
  charge: ["Charges.d.ts", "Charge"],
  invoice: ["Invoices.d.ts", "Invoice"],
  "checkout.session": ["Checkout/Sessions.d.ts", "Session"],
  subscription: ["Subscriptions.d.ts", "Subscription"],
  subscription_item: ["SubscriptionItems.d.ts", "SubscriptionItem"],
  plan: ["Plans.d.ts", "Plan"],
  price: ["Prices.d.ts", "Price"],
  event: ["Events.d.ts", "EventBase"],
};
const SHOPIFY_VERSION = "2025-07";
const SHOPIFY = { order: ["order.d.ts", "Order"], customer: ["customer.d.ts", "Customer"] };

function kinds(node) {
  const out = new Set();
  const walk = (n) => {
    if (ts.isUnionTypeNode(n)) return n.types.forEach(walk);
    if (ts.isParenthesizedTypeNode(n)) return walk(n.type);
    if (ts.isLiteralTypeNode(n)) {
      if (n.literal.kind === ts.SyntaxKind.NullKeyword) return out.add("null");
      if (ts.isStringLiteral(n.literal)) return out.add("string");
      if (ts.isNumericLiteral(n.literal)) return out.add("number");
      return out.add("boolean");
    }
    switch (n.kind) {
      case ts.SyntaxKind.StringKeyword: return out.add("string");
      case ts.SyntaxKind.NumberKeyword: return out.add("number");
      case ts.SyntaxKind.BooleanKeyword: return out.add("boolean");
      case ts.SyntaxKind.NullKeyword: return out.add("null");
      case ts.SyntaxKind.ArrayType: return out.add("array");
      case ts.SyntaxKind.TypeLiteral: return out.add("object");
      case ts.SyntaxKind.AnyKeyword:
      case ts.SyntaxKind.UnknownKeyword:
        ["string", "number", "boolean", "null", "array", "object"].forEach((k) => out.add(k));
        return;
    }
    if (ts.isTypeReferenceNode(n)) {
      const name = n.typeName.getText();
      if (name === "Array") return out.add("array");
      // Stripe's enums are string unions declared as types (PaymentIntent.Status): read below.
      return out.add(`ref:${name}`);
    }
    out.add("object");
  };
  walk(node);
  return out;
}

// A reference to a type alias of string literals in the same file is a string.
function resolve(file, set) {
  const aliases = new Map();
  const visit = (n) => {
    if (ts.isTypeAliasDeclaration(n)) aliases.set(n.name.text, n.type);
    ts.forEachChild(n, visit);
  };
  visit(file);
  const out = new Set();
  for (const k of set) {
    if (!k.startsWith("ref:")) { out.add(k); continue; }
    const last = k.slice(4).split(".").pop();
    const alias = aliases.get(last);
    if (alias) { for (const a of kinds(alias)) out.add(a.startsWith("ref:") ? "object" : a); }
    else out.add("object");
  }
  return [...out].sort();
}

function members(fileName, typeName, { classes }) {
  const text = fs.readFileSync(fileName, "utf8");
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  let found = null;
  const visit = (n) => {
    if (found) return;
    const match = (classes ? ts.isClassDeclaration(n) : ts.isInterfaceDeclaration(n)) && n.name?.text === typeName;
    if (match) { found = n; return; }
    ts.forEachChild(n, visit);
  };
  visit(file);
  if (!found) throw new Error(`${typeName} is not declared in ${fileName}`);
  const keys = {};
  for (const m of found.members) {
    const isProperty = classes ? ts.isPropertyDeclaration(m) : ts.isPropertySignature(m);
    if (!isProperty || !m.type) continue;
    const isStatic = m.modifiers?.some((x) => x.kind === ts.SyntaxKind.StaticKeyword);
    const name = m.name.getText(file);
    if (isStatic || name === "session") continue;
    keys[name] = { optional: Boolean(m.questionToken), kinds: resolve(file, kinds(m.type)) };
  }
  return keys;
}

// Each Stripe event type and the object its `data.object` is declared as (`Stripe.Invoice`), from
// types/EventTypes.d.ts: `interface XEvent extends EventBase { type: '...' }` and its namespace's
// `Data { object: ... }`.
function stripeEventObjects(fileName) {
  const file = ts.createSourceFile(fileName, fs.readFileSync(fileName, "utf8"), ts.ScriptTarget.Latest, true);
  const typeOf = new Map();
  const objectOf = new Map();
  const visit = (n, namespace) => {
    if (ts.isInterfaceDeclaration(n)) {
      for (const m of n.members) {
        if (!ts.isPropertySignature(m) || !m.type) continue;
        const key = m.name.getText(file);
        if (!namespace && key === "type" && ts.isLiteralTypeNode(m.type)) typeOf.set(n.name.text, m.type.literal.text);
        if (namespace && n.name.text === "Data" && key === "object") {
          objectOf.set(namespace, m.type.getText(file).replace(/^Stripe\./, ""));
        }
      }
    }
    const inner = ts.isModuleDeclaration(n) && n.name.text !== "Stripe" && n.name.text !== "stripe" ? n.name.text : namespace;
    ts.forEachChild(n, (c) => visit(c, inner));
  };
  visit(file, null);
  return Object.fromEntries([...typeOf].map(([iface, type]) => [type, objectOf.get(iface) ?? null]));
}

const stripeTypes = path.join(modules, "stripe", "types");
const shopifyTypes = path.join(modules, "@shopify", "shopify-api", "dist", "ts", "rest", "admin", SHOPIFY_VERSION);
const out = {
  sources: {
    stripe: `stripe ${require(path.join(modules, "stripe", "package.json")).version}`,
    shopify: `@shopify/shopify-api ${require(path.join(modules, "@shopify", "shopify-api", "package.json")).version} rest/admin/${SHOPIFY_VERSION}`,
  },
  stripe: Object.fromEntries(
    Object.entries(STRIPE).map(([k, [f, t]]) => [k, members(path.join(stripeTypes, f), t, { classes: false })]),
  ),
  stripe_event_objects: stripeEventObjects(path.join(stripeTypes, "EventTypes.d.ts")),
  shopify: Object.fromEntries(
    Object.entries(SHOPIFY).map(([k, [f, t]]) => [k, members(path.join(shopifyTypes, f), t, { classes: true })]),
  ),
};
fs.writeFileSync(path.join(here, "shapes.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${path.join(here, "shapes.json")} (${out.sources.stripe}; ${out.sources.shopify})`);
