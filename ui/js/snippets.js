// "Copy as": the request in the editor as cURL and as Python (requests, typesafe-sdk, openai). The key
// is never written into a snippet: each reads DECISIONS_API_KEY from the environment.

const ENV = "DECISIONS_API_KEY";

/** A JSON value as a Python literal, indented like black would. */
export function pyLiteral(value, indent = 0) {
  const pad = " ".repeat(indent + 4);
  const end = " ".repeat(indent);
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "None";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return `[\n${value.map((v) => pad + pyLiteral(v, indent + 4)).join(",\n")},\n${end}]`;
  }
  const entries = Object.entries(value);
  if (!entries.length) return "{}";
  return `{\n${entries.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${pyLiteral(v, indent + 4)}`).join(",\n")},\n${end}}`;
}

function shellQuote(text) {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

export function curl(origin, path, body) {
  const json = JSON.stringify(body, null, 2);
  return [
    `curl -sS ${shellQuote(origin + path)} \\`,
    `  -H "Authorization: Bearer $${ENV}" \\`,
    "  -H 'Content-Type: application/json' \\",
    "  --data-binary @- <<'JSON'",
    json,
    "JSON",
  ].join("\n");
}

export function requests(origin, path, body) {
  return [
    "import os",
    "",
    "import requests",
    "",
    `body = ${pyLiteral(body)}`,
    "response = requests.post(",
    `    ${JSON.stringify(origin + path)},`,
    "    json=body,",
    `    headers={"Authorization": f"Bearer {os.environ['${ENV}']}"},`,
    "    timeout=60,",
    ")",
    "response.raise_for_status()",
    "print(response.json())",
  ].join("\n");
}

const S1_ARGUMENTS = ["model", "state", "questions", "assets"];

export function typesafeSdk(origin, body) {
  const { model, state, questions, assets } = body;
  const extra = Object.fromEntries(Object.entries(body).filter(([k]) => !S1_ARGUMENTS.includes(k)));
  const imports = assets && typeof assets === "object" && Object.keys(assets).length;
  const lines = ["import os"];
  if (imports) lines.push("from base64 import b64decode");
  lines.push("", `from typesafe_sdk import ${imports ? "Image, " : ""}TypeSafeClient`, "",
    `client = TypeSafeClient(api_key=os.environ["${ENV}"], base_url=${JSON.stringify(origin)}, timeout=60)`,
    "response = client.system_one(");
  if (model !== undefined) lines.push(`    model=${pyLiteral(model, 4)},`);
  lines.push(`    state=${pyLiteral(state, 4)},`, `    questions=${pyLiteral(questions, 4)},`);
  if (imports) {
    const images = Object.entries(assets).map(([ref, asset]) =>
      `        ${JSON.stringify(ref)}: Image(b64decode(${JSON.stringify((asset && asset.data_base64) || "")})),`);
    lines.push("    assets={", ...images, "    },");
  }
  if (Object.keys(extra).length) lines.push(`    extra_body=${pyLiteral(extra, 4)},`);
  lines.push(")", "for question_id, answer in response.answers.items():", "    print(question_id, answer)");
  return lines.join("\n");
}

const OPENAI_ARGUMENTS = ["model", "input", "questions", "prompt_cache_key", "prompt_cache_options", "safety_identifier"];

export function openai(origin, body) {
  const extra = Object.fromEntries(Object.entries(body).filter(([k]) => !OPENAI_ARGUMENTS.includes(k)));
  const lines = ["import os", "", "from openai import OpenAI", "",
    `client = OpenAI(api_key=os.environ["${ENV}"], base_url=${JSON.stringify(`${origin}/v1`)})`,
    "decision = client.decisions.create("];
  for (const name of OPENAI_ARGUMENTS) {
    if (body[name] !== undefined) lines.push(`    ${name}=${pyLiteral(body[name], 4)},`);
  }
  if (Object.keys(extra).length) lines.push(`    extra_body=${pyLiteral(extra, 4)},`);
  lines.push(")", "for answer in decision.answers:", "    print(answer)");
  return lines.join("\n");
}

/** The snippet kinds offered on a wire: [id, label]. */
export function kindsFor(wire) {
  return wire === "systemone"
    ? [["curl", "cURL"], ["typesafe", "Python · typesafe-sdk"], ["requests", "Python · requests"]]
    : [["curl", "cURL"], ["openai", "Python · openai"], ["requests", "Python · requests"]];
}

export function snippet(kind, origin, path, body) {
  if (kind === "typesafe") return typesafeSdk(origin, body);
  if (kind === "openai") return openai(origin, body);
  if (kind === "requests") return requests(origin, path, body);
  return curl(origin, path, body);
}
