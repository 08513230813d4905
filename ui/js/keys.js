// Keys: create (the key is shown once, with a copy button), edit limits and budget, block, unblock,
// delete. A proxy admin (and the master key) sees and changes every key, a proxy admin viewer reads
// them all; an internal user sees and changes its own keys (a viewer reads them), a team admin its
// teams' keys: /key/list answers each with what it may see, and a row offers only what it may change.

import { request } from "./api.js";
import { formatMoney, formatTime, h } from "./dom.js";
import { budgetText, limitFields, limitsText, modelNames, modelsText, principalsPage, shownOnce, statusPill } from "./principals.js";

const PAGE_SIZE = 25;

const teamText = (t) => (t.team_alias && t.team_alias !== t.team_id ? `${t.team_alias} (${t.team_id})` : t.team_id);

/** The teams a key may be put in: every team (a proxy admin), else the ones it administers, and for its own keys its teams. */
async function teamChoices(r) {
  if (r.writesAll) {
    const teams = await request("GET", "/team/list").catch(() => []);
    return [["", "No team"], ...teams.map((t) => [t.team_id, teamText(t)])];
  }
  const known = new Map(r.teams.map((t) => [t.team_id, t]));
  const ids = [...new Set([...r.adminTeams, ...(r.ownKeys ? r.teams.map((t) => t.team_id) : [])])];
  const options = ids.map((id) => [id, teamText(known.get(id) || { team_id: id })]);
  return r.ownKeys ? [["", "No team"], ...options] : options;
}

export async function mount(root, { toast, rights: r }) {
  const [models, teamOptions, users] = await Promise.all([modelNames(), teamChoices(r),
    r.writesAll && r.users ? request("GET", "/user/list", { query: { page_size: 100 } }).then((a) => a.users).catch(() => []) : []]);
  const userOptions = [["", "No user"], ...users.map((u) => [u.user_id, u.user_alias || u.user_email ? `${u.user_alias || u.user_email} (${u.user_id})` : u.user_id])];
  const secret = h("div", { class: "secret-host", "aria-live": "polite" });
  const showSecret = (made) => shownOnce(secret, toast, made.key, "The new key",
    `Key ${made.key_alias ? `“${made.key_alias}” ` : ""}created`, "Copy it now.");

  await principalsPage(root, toast, {
    noun: "key",
    title: "Keys",
    intro: r.readsAll ? "Virtual keys: who may call which models, and within what limits and budget."
      : r.adminTeams.length ? "Your keys and your teams' keys: which models they may call, and within what limits and budget."
        : "Your keys: which models they may call, and within what limits and budget.",
    top: [secret],
    canCreate: r.makesKeys && teamOptions.length > 0,
    canWrite: (k) => r.writesKey(k),
    readOnly: !r.makesKeys,
    specs: (record) => [
      { name: "key_alias", label: "Name", type: "text", placeholder: "e.g. support-bot" },
      { name: "team_id", label: "Team", type: "select", options: teamOptions },
      ...(r.writesAll && r.users ? [{ name: "user_id", label: "User", type: "select", options: userOptions }] : []),
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
      { title: "User", cell: (k) => k.user_id || "–" },
      { title: "Models", cell: modelsText },
      { title: "Spend", cell: (k) => formatMoney(k.spend), num: true },
      { title: "Budget", cell: budgetText },
      { title: "Limits", cell: limitsText },
      { title: "Expires", cell: (k) => (k.expires ? formatTime(k.expires) : "Never") },
      { title: "Status", cell: statusPill },
    ],
    name: (k) => `key ${k.key_alias || k.key_name || k.token.slice(0, 10)}`,
    ref: (k) => ({ key: k.token }),
    spendGroup: r.readsAll ? "key" : null,
    spendKey: (k) => k.token,
    paths: { update: "/key/update", block: "/key/block", unblock: "/key/unblock", delete: "/key/delete" },
    deleteBody: (k) => ({ keys: [k.token] }),
    deleteWarning: "Requests with this key will be refused at once. This cannot be undone.",
    deleted: () => "Key deleted.",
  });
}
