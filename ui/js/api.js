// The gateway's own API, called with the key the user signed in with (held in this tab's session
// storage only: never a cookie, never a URL).

const KEY = "decisions-gateway.key";
const ROLE = "decisions-gateway.role";
const CALLER = "decisions-gateway.caller";

/**
 * The key the tab signed in with, its kind ("master", "user": a key of a user, "virtual": a key of no
 * user, "open": a gateway without a master key) and, for the first two, who the gateway says it is
 * (GET /user/info's "caller", with the user's teams): what the pages show and offer.
 */
export const session = {
  get key() { return sessionStorage.getItem(KEY); },
  get role() { return sessionStorage.getItem(ROLE); },
  get caller() {
    try { return JSON.parse(sessionStorage.getItem(CALLER) || "null"); } catch { return null; }
  },
  save(key, role, caller = null) {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(ROLE, role);
    sessionStorage.setItem(CALLER, JSON.stringify(caller));
  },
  clear() { for (const name of [KEY, ROLE, CALLER]) sessionStorage.removeItem(name); },
};

/** The sentence the server sent, from any of its envelopes (OpenAI's, System One's, FastAPI's). */
export function errorMessage(data, status) {
  if (data && typeof data === "object") {
    if (data.error && typeof data.error === "object" && data.error.message) return String(data.error.message);
    const detail = data.detail;
    if (Array.isArray(detail)) return detail.map((d) => d.msg).filter(Boolean).join(" ");
    if (detail && typeof detail === "object" && detail.message) return String(detail.message);
    if (typeof detail === "string") return detail;
  }
  if (typeof data === "string" && data.trim()) return data.trim().slice(0, 400);
  return `The gateway answered ${status}.`;
}

let unauthorized = null;

/** ``fn(message)`` when the key the tab signed in with is refused (401): deleted, or never valid. */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

/**
 * One call. Returns {ok, status, data, headers, ms}; never throws for an HTTP error (the caller shows
 * the server's sentence), only for a network failure or an abort.
 */
export async function call(method, path, { body, rawBody, query, key = session.key, signal, contentType } = {}) {
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(name, String(value));
  }
  const headers = { Accept: "application/json" };
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload;
  if (rawBody !== undefined) {
    payload = rawBody;
    headers["Content-Type"] = contentType || "application/json";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["Content-Type"] = "application/json";
  }
  const started = performance.now();
  // No fetch cache mode: "no-store" would send Cache-Control: no-cache, which the gateway honours (a cache bypass).
  const response = await fetch(url, { method, headers, body: payload, signal, credentials: "omit" });
  const text = await response.text();
  const ms = performance.now() - started;
  let data = text;
  try { data = text ? JSON.parse(text) : null; } catch { /* not JSON: keep the text */ }
  if (response.status === 401 && key && key === session.key && unauthorized) unauthorized(errorMessage(data, 401));
  return { ok: response.ok, status: response.status, data, text, headers: response.headers, ms };
}

/** call(), raising an Error carrying the server's sentence (and its field) when it fails. */
export async function request(method, path, options) {
  const result = await call(method, path, options);
  if (!result.ok) {
    const err = new Error(errorMessage(result.data, result.status));
    err.status = result.status;
    err.param = result.data && result.data.error ? result.data.error.param : null;
    err.code = result.data && result.data.error ? result.data.error.code : null;
    throw err;
  }
  return result.data;
}
