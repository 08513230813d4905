// The shell: sign-in, the navigation, and one page at a time (each page is its own module, loaded
// when it is first opened).

import { call, errorMessage, onUnauthorized, session } from "./api.js";
import { button, clear, field, h } from "./dom.js";
import { rights, whoText } from "./roles.js";

// Which pages a signed-in key sees: shows(rights) (roles.js), from who the gateway says it is.
const PAGES = {
  playground: { title: "Playground", module: "./playground.js", shows: () => true },
  usage: { title: "My usage", module: "./usage.js", shows: (r) => r.kind === "virtual" || r.kind === "user" },
  keys: { title: "Keys", module: "./keys.js", shows: (r) => r.kind === "master" || (r.kind === "user" && r.keysPage) },
  teams: { title: "Teams", module: "./teams.js", shows: (r) => r.kind === "master" || (r.kind === "user" && r.teamsPage) },
  users: { title: "Users", module: "./users.js", shows: (r) => r.usersPage },
  spend: { title: "Spend", module: "./spend.js", shows: (r) => r.kind === "master" || (r.kind === "user" && r.spendPage) },
  models: { title: "Models", module: "./models.js", shows: (r) => r.kind === "master" || (r.kind === "user" && r.readsAll) },
  calibration: { title: "Calibration", module: "./calibration.js", shows: (r) => r.kind === "master" || (r.kind === "user" && r.readsAll) },
};

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
let unmount = null;

export function toast(message, kind = "info") {
  const box = document.getElementById("toast");
  const item = h("div", { class: `toast-item ${kind}` }, message);
  box.append(item);
  setTimeout(() => item.remove(), 4000);
}

/**
 * Who the key is: GET /user/info (no user_id) answers any key of a user (and the master key) with
 * "caller" {role, admin_teams, team_id, user_id} and the user's teams. A gateway without a master key
 * refuses it (admin_disabled); a key of no user may be refused it too: then the admin API answers the
 * master key and refuses a virtual key (admin_only).
 */
async function roleOf(key) {
  const models = await call("GET", "/v1/models", { key });
  if (!models.ok) return { error: errorMessage(models.data, models.status) };
  const self = await call("GET", "/user/info", { key });
  if (self.ok && self.data && self.data.caller) {
    const caller = { ...self.data.caller,
      teams: (self.data.teams || []).map((t) => ({ team_id: t.team_id, team_alias: t.team_alias || null })) };
    if (caller.role === "proxy_admin" && !caller.user_id) return { role: "master", caller };
    return { role: caller.role ? "user" : "virtual", caller };
  }
  const refused = self.data && self.data.error ? self.data.error.code : null;
  if (refused === "admin_disabled") return { role: "open" };
  if (self.status === 503) return { role: "master" };
  const admin = await call("GET", "/key/list", { key, query: { size: 1 } });
  if (admin.ok || admin.status === 503) return { role: "master" };
  const code = admin.data && admin.data.error ? admin.data.error.code : null;
  if (code === "admin_disabled") return { role: "open" };
  return { role: "virtual" };
}

function signIn(message) {
  nav.hidden = true;
  who.hidden = true;
  clear(main);
  const input = h("input", { type: "password", name: "key", autocomplete: "off", spellcheck: "false",
    required: true, placeholder: "sk-…" });
  const error = h("p", { class: "form-error", id: "sign-in-error", role: "alert" }, message || "");
  input.setAttribute("aria-describedby", error.id);
  const submit = h("button", { type: "submit", class: "button primary" }, "Sign in");
  const form = h("form", { class: "sign-in card", "aria-labelledby": "sign-in-title" },
    h("h1", { id: "sign-in-title" }, "Sign in"),
    h("p", { class: "muted" }, "Use the gateway's master key, or any key: a user's key shows what the user's role " +
      "may see and do (its own keys and spend, its teams' keys, or everything); a key of no user tries questions " +
      "and shows its own usage. The key stays in this tab only."),
    field("API key", input),
    error,
    submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    error.textContent = "";
    try {
      const key = input.value.trim();
      const found = await roleOf(key);
      if (found.error) {
        error.textContent = found.error;
        input.focus();
        return;
      }
      session.save(key, found.role, found.caller || null);
      if (!/^#\/[a-z]+/.test(location.hash)) history.replaceState(null, "", "#/playground");
      start();
    } catch (err) {
      error.textContent = `The gateway cannot be reached: ${err.message}`;
    } finally {
      submit.disabled = false;
    }
  });
  main.append(form);
  input.focus();
}

function renderNav(allowed, current) {
  clear(nav);
  const list = h("ul", { class: "nav-list" });
  for (const [name, page] of Object.entries(PAGES)) {
    if (!page.shows(allowed)) continue;
    const link = h("a", { href: `#/${name}`, class: "nav-link" }, page.title);
    if (name === current) link.setAttribute("aria-current", "page");
    list.append(h("li", null, link));
  }
  nav.append(list);
  nav.hidden = false;
  document.getElementById("who-label").textContent = whoText(allowed.kind, session.caller);
  who.hidden = false;
}

let shown = 0;

async function show() {
  const turn = ++shown;
  const role = session.role;
  if (!session.key || !role) return signIn();
  const name = (location.hash.match(/^#\/([a-z]+)/) || [])[1] || "playground";
  const page = PAGES[name];
  const allowed = rights(role, session.caller);
  if (!page || !page.shows(allowed)) {
    location.replace("#/playground");
    return;
  }
  renderNav(allowed, name);
  if (unmount) unmount();
  unmount = null;
  clear(main);
  document.title = `${page.title} · Decisions Gateway`;
  const module = await import(page.module);
  if (turn !== shown) return;
  const root = h("div", { class: "page", id: `page-${name}` });
  main.append(root);
  unmount = (await module.mount(root, { role, rights: allowed, toast, signOut })) || null;
}

function signOut(message) {
  session.clear();
  if (unmount) unmount();
  unmount = null;
  signIn(message);
}

function start() {
  show().catch((err) => {
    clear(main).append(h("div", { class: "card error-card", role: "alert" },
      h("h1", null, "This page could not be shown"), h("p", null, err.message),
      button("Try again", () => start())));
  });
}

document.getElementById("sign-out").addEventListener("click", () => {
  history.replaceState(null, "", "#/playground");
  signOut();
});
window.addEventListener("hashchange", start);
onUnauthorized((message) => signOut(`Signed out: ${message}`));
start();
