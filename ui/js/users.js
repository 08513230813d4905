// Users: LiteLLM's users, each with a role (what its keys may do), its teams, a budget and limits. A
// proxy admin (and the master key) creates them (with a first key, shown once), edits their role and
// budget, and deletes them (with their keys); a proxy admin viewer reads them.

import { request } from "./api.js";
import { formatMoney, h } from "./dom.js";
import { budgetText, limitFields, limitsText, modelNames, modelsText, principalsPage, shownOnce } from "./principals.js";
import { roleName, USER_ROLES } from "./roles.js";

const PAGE_SIZE = 25;

export async function mount(root, { toast, rights: r }) {
  const [models, teams] = await Promise.all([modelNames(), request("GET", "/team/list").catch(() => [])]);
  const teamNames = teams.map((t) => t.team_id);
  const secret = h("div", { class: "secret-host", "aria-live": "polite" });

  function showSecret(made) {
    if (!made.key) {
      toast(`User ${made.user_alias || made.user_id} created.`);
      return;
    }
    shownOnce(secret, toast, made.key, "The new user's key", `User ${made.user_alias || made.user_email || made.user_id} created, with a key`,
      "Copy it now and give it to the user.");
  }

  await principalsPage(root, toast, {
    noun: "user",
    title: "Users",
    intro: "A user's role says what its keys may do; its teams give it their models, and a team admin manages the team's keys.",
    top: [secret],
    canCreate: r.writesAll,
    canWrite: () => r.writesAll,
    readOnly: !r.writesAll,
    specs: (record) => [
      ...(record ? [] : [{ name: "user_id", label: "User id", type: "text", placeholder: "optional", hint: "Empty: a new UUID." }]),
      { name: "user_alias", label: "Name", type: "text", placeholder: "e.g. Alice" },
      ...(record ? [] : [{ name: "user_email", label: "Email", type: "text", placeholder: "optional" }]),
      { name: "user_role", label: "Role", type: "select", options: USER_ROLES },
      ...(record ? [] : [{ name: "teams", label: "Teams", type: "models", options: teamNames, hint: "A member of each (team admins: on the Teams page)." }]),
      ...limitFields(models),
    ],
    create: (payload) => request("POST", "/user/new", { body: payload }),
    created: showSecret,
    load: async (page) => {
      const listing = await request("GET", "/user/list", { query: { page, page_size: PAGE_SIZE } });
      return { rows: listing.users, page: listing.page, pages: listing.total_pages };
    },
    columns: [
      { title: "User", cell: (u) => h("span", null, h("strong", null, u.user_alias || u.user_email || "–"), h("br"), h("code", { class: "small muted" }, u.user_id)) },
      { title: "Role", cell: (u) => roleName(u.user_role) },
      { title: "Teams", cell: (u) => ((u.teams || []).length ? u.teams.map((t) => (typeof t === "string" ? t : t.team_id)).join(", ") : "–") },
      { title: "Keys", cell: (u) => String(u.key_count ?? 0), num: true },
      { title: "Models", cell: modelsText },
      { title: "Spend", cell: (u) => formatMoney(u.spend), num: true },
      { title: "Budget", cell: budgetText },
      { title: "Limits", cell: limitsText },
    ],
    name: (u) => `user ${u.user_alias || u.user_email || u.user_id}`,
    ref: (u) => ({ user_id: u.user_id }),
    spendGroup: null,
    spendKey: (u) => u.user_id,
    paths: { update: "/user/update", delete: "/user/delete" },
    deleteBody: (u) => ({ user_ids: [u.user_id] }),
    deleteWarning: "The user's keys are deleted with it and refused at once. This cannot be undone.",
    deleted: () => "User deleted.",
  });
}
