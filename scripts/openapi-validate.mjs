// The node half of scripts/openapi-validate: reads FILE or fetches URL, and validates it with
// swagger-parser (installed by the bash half in $BATON_SWAGGER_PARSER_DIR).
//   node scripts/openapi-validate.mjs FILE_OR_URL
// Prints "openapi: valid (N paths)" and exits 0, or prints why not and exits 1.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const target = process.argv[2];
const dir = process.env.BATON_SWAGGER_PARSER_DIR;
if (!target || !dir) {
  console.error("usage: BATON_SWAGGER_PARSER_DIR=DIR node openapi-validate.mjs FILE_OR_URL");
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(dir), "package.json"));
const SwaggerParser = require("@apidevtools/swagger-parser");

function fail(message) {
  console.error(`openapi: invalid: ${message}`);
  process.exit(1);
}

let text;
try {
  if (/^https?:\/\//i.test(target)) {
    const res = await fetch(target, { signal: AbortSignal.timeout(30000) });
    text = await res.text();
    if (!res.ok) fail(`GET ${target} answered ${res.status}: ${text.replace(/\s+/g, " ").trim().slice(0, 300)}`);
  } else {
    text = await readFile(target, "utf8");
  }
} catch (e) {
  fail(`cannot read ${target}: ${e.cause?.message ?? e.message}`);
}

let doc;
try {
  doc = JSON.parse(text);
} catch (e) {
  fail(`${target} is not JSON: ${e.message}`);
}

// swagger-parser checks the document against the OpenAPI 3.0 schema and resolves every $ref.
// For OpenAPI 3 it checks nothing beyond the schema, so two rules of the specification it leaves
// out are checked here: operationIds are unique, and every {name} of a path template has a
// required path parameter of that name (and no path parameter is left without one).
let api;
try {
  // validate() dereferences what it is given and answers it; keep `doc` as it was.
  api = await SwaggerParser.validate(structuredClone(doc));
} catch (e) {
  const lines = String(e.message).split("\n");
  const shown = lines.slice(0, 25).join("\n");
  fail(lines.length > 25 ? `${shown}\n  ... (${lines.length - 25} more lines)` : shown);
}

const methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const seen = new Map();
for (const [p, item] of Object.entries(api.paths ?? {})) {
  const names = new Set([...p.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]));
  for (const method of methods) {
    const operation = item[method];
    if (!operation) continue;
    const where = `${method.toUpperCase()} ${p}`;
    const id = operation.operationId;
    if (typeof id === "string") {
      if (seen.has(id)) fail(`operationId ${id} is used by both ${seen.get(id)} and ${where}`);
      seen.set(id, where);
    }
    // Operation parameters override path-level ones of the same name and location.
    const params = new Map();
    for (const q of [...(item.parameters ?? []), ...(operation.parameters ?? [])]) params.set(`${q.in}:${q.name}`, q);
    for (const name of names) {
      const q = params.get(`path:${name}`);
      if (!q) fail(`${where}: no path parameter for {${name}}`);
      if (q.required !== true) fail(`${where}: path parameter ${name} must be required: true`);
    }
    for (const q of params.values()) {
      if (q.in === "path" && !names.has(q.name)) fail(`${where}: path parameter ${q.name} is not in the path`);
    }
  }
}
console.log(`openapi: valid (${Object.keys(api.paths ?? {}).length} paths)`);
