// The shell: sign-in, the navigation, and one page at a time (each page is its own module, loaded
// when it is first opened).

import { call, errorMessage, onUnauthorized, session } from "./api.js";
import { button, clear, field, h } from "./dom.js";

const PAGES = {
  playground: { title: "Playground", module: "./playground.js", roles: ["master", "virtual", "open"] },
  usage: { title: "My usage", module: "./usage.js", roles: ["virtual"] },
  keys: { title: "Keys", module: "./keys.js", roles: ["master"] },
  teams: { title: "Teams", module: "./teams.js", roles: ["master"] },
  spend: { title: "Spend", module: "./spend.js", roles: ["master"] },
  models: { title: "Models", module: "./models.js", roles: ["master"] },
};
const ROLE_LABELS = { master: "Master key", virtual: "Virtual key", open: "Open gateway" };

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

/** What the key may do: the admin API answers the master key, refuses a virtual key (admin_only). */
async function roleOf(key) {
  const models = await call("GET", "/v1/models", { key });
  if (!models.ok) return { error: errorMessage(models.data, models.status) };
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
    h("p", { class: "muted" }, "Use the gateway's master key to manage keys, teams, spend and models, or a virtual " +
      "key to try questions and see its own usage. The key stays in this tab only."),
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
      session.save(key, found.role);
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

function renderNav(role, current) {
  clear(nav);
  const list = h("ul", { class: "nav-list" });
  for (const [name, page] of Object.entries(PAGES)) {
    if (!page.roles.includes(role)) continue;
    const link = h("a", { href: `#/${name}`, class: "nav-link" }, page.title);
    if (name === current) link.setAttribute("aria-current", "page");
    list.append(h("li", null, link));
  }
  nav.append(list);
  nav.hidden = false;
  document.getElementById("who-label").textContent = ROLE_LABELS[role] || role;
  who.hidden = false;
}

let shown = 0;

async function show() {
  const turn = ++shown;
  const role = session.role;
  if (!session.key || !role) return signIn();
  const name = (location.hash.match(/^#\/([a-z]+)/) || [])[1] || "playground";
  const page = PAGES[name];
  if (!page || !page.roles.includes(role)) {
    location.replace("#/playground");
    return;
  }
  renderNav(role, name);
  if (unmount) unmount();
  unmount = null;
  clear(main);
  document.title = `${page.title} · Decisions Gateway`;
  const module = await import(page.module);
  if (turn !== shown) return;
  const root = h("div", { class: "page", id: `page-${name}` });
  main.append(root);
  unmount = (await module.mount(root, { role, toast, signOut })) || null;
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
