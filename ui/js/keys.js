// Keys: create (the key is shown once, with a copy button), edit limits and budget, block, unblock,
// delete. The master key only.

import { request } from "./api.js";
import { button, clear, copyText, formatMoney, formatTime, h } from "./dom.js";
import { budgetText, limitFields, limitsText, modelNames, modelsText, principalsPage, statusPill } from "./principals.js";

const PAGE_SIZE = 25;

export async function mount(root, { toast }) {
  const [models, teams] = await Promise.all([modelNames(), request("GET", "/team/list").catch(() => [])]);
  const teamOptions = [["", "No team"], ...teams.map((t) => [t.team_id, t.team_alias ? `${t.team_alias} (${t.team_id})` : t.team_id])];
  const secret = h("div", { class: "secret-host", "aria-live": "polite" });

  function showSecret(made) {
    const code = h("code", { class: "new-key" }, made.key);
    const copy = button("Copy key", async () => {
      const copied = await copyText(made.key, code);
      toast(copied ? "Key copied." : "Key selected: press Ctrl+C to copy.");
    }, { class: "button primary small" });
    clear(secret).append(h("section", { class: "secret", "aria-label": "The new key" },
      h("h2", null, `Key ${made.key_alias ? `“${made.key_alias}” ` : ""}created`),
      h("p", null, "This is the only time the key is shown: the gateway keeps only its hash. Copy it now."),
      h("div", { class: "secret-value" }, code, copy),
      button("Done, I have saved it", () => clear(secret), { class: "button ghost small" })));
    copy.focus();
  }

  await principalsPage(root, toast, {
    noun: "key",
    title: "Keys",
    intro: "Virtual keys: who may call which models, and within what limits and budget.",
    top: [secret],
    specs: (record) => [
      { name: "key_alias", label: "Name", type: "text", placeholder: "e.g. support-bot" },
      { name: "team_id", label: "Team", type: "select", options: teamOptions },
      ...limitFields(models),
      ...(record ? [] : [{ name: "duration", label: "Lifetime", type: "text", placeholder: "e.g. 30d", hint: "Empty: never expires." }]),
    ],
    create: (payload) => request("POST", "/key/generate", { body: payload }),
    created: showSecret,
    load: async (page) => {
      const listing = await request("GET", "/key/list", { query: { page, size: PAGE_SIZE, return_full_object: true } });
      return { rows: listing.keys, page: listing.current_page, pages: listing.total_pages };
    },
    columns: [
      { title: "Name", cell: (k) => h("span", null, h("strong", null, k.key_alias || "–"), h("br"), h("code", { class: "small muted" }, k.key_name || "")) },
      { title: "Team", cell: (k) => k.team_id || "–" },
      { title: "Models", cell: modelsText },
      { title: "Spend", cell: (k) => formatMoney(k.spend), num: true },
      { title: "Budget", cell: budgetText },
      { title: "Limits", cell: limitsText },
      { title: "Expires", cell: (k) => (k.expires ? formatTime(k.expires) : "Never") },
      { title: "Status", cell: statusPill },
    ],
    name: (k) => `key ${k.key_alias || k.key_name || k.token.slice(0, 10)}`,
    ref: (k) => ({ key: k.token }),
    spendGroup: "key",
    spendKey: (k) => k.token,
    paths: { update: "/key/update", block: "/key/block", unblock: "/key/unblock", delete: "/key/delete" },
    deleteBody: (k) => ({ keys: [k.token] }),
    deleteWarning: "Requests with this key will be refused at once. This cannot be undone.",
    deleted: () => "Key deleted.",
  });
}
