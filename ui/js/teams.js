// Teams: create, edit limits and budget, block, unblock, delete (deleting a team deletes its keys), and
// its members (add with a role, remove). A proxy admin (and the master key) changes them; a proxy
// admin viewer reads every team; a team admin reads its own teams (/team/info), members included.

import { request } from "./api.js";
import { button, formatMoney, h, select } from "./dom.js";
import { budgetText, confirmDialog, dialog, limitFields, limitsText, modelNames, modelsText, principalsPage, statusPill } from "./principals.js";

const TEAM_ROLES = [["user", "Member"], ["admin", "Team admin: the team's keys and spend"]];

function membersCell(team) {
  const members = team.members_with_roles || [];
  if (!members.length) return h("span", { class: "muted" }, "None");
  return h("ul", { class: "members" }, members.map((m) => h("li", { dataset: { member: m.user_id } },
    m.user_email || m.user_id, m.role === "admin" ? h("span", { class: "pill warn" }, "admin") : null)));
}

/** Every team (a caller that reads all), else the teams it administers, each from /team/info. */
async function loadTeams(r) {
  if (r.readsAll) return request("GET", "/team/list");
  const infos = await Promise.all(r.adminTeams.map((team_id) => request("GET", "/team/info", { query: { team_id } })));
  return infos.map((info) => ({ ...info.team_info, members_with_roles: info.team_info.members_with_roles || info.members_with_roles || [] }));
}

export async function mount(root, { toast, rights: r }) {
  const [models, users] = await Promise.all([modelNames(),
    r.writesAll && r.users ? request("GET", "/user/list", { query: { page_size: 100 } }).then((a) => a.users).catch(() => []) : []]);

  function membersButton(team, reload) {
    const name = `team ${team.team_alias || team.team_id}`;
    return button("Members", () => {
      const members = team.members_with_roles || [];
      const current = new Set(members.map((m) => m.user_id));
      const choices = users.filter((u) => !current.has(u.user_id))
        .map((u) => [u.user_id, u.user_alias || u.user_email ? `${u.user_alias || u.user_email} (${u.user_id})` : u.user_id]);
      const who = select(choices, choices.length ? choices[0][0] : "", { name: "user_id" });
      const role = select(TEAM_ROLES, "user", { name: "role" });
      const list = h("ul", { class: "members stack" }, members.map((m) => h("li", { dataset: { member: m.user_id } },
        h("span", null, m.user_email || m.user_id, " · ", m.role === "admin" ? "team admin" : "member"),
        button("Remove", () => {
          box.close();
          confirmDialog(`Remove ${m.user_email || m.user_id} from ${name}?`, "The user's keys stay; the user loses what the team's role gave it.",
            "Remove member", async () => {
              await request("POST", "/team/member_delete", { body: { team_id: team.team_id, user_id: m.user_id } });
              await reload();
              toast("Member removed.");
            });
        }, { class: "button small danger", "aria-label": `Remove ${m.user_id} from ${name}` }))));
      const content = h("div", { class: "stack" },
        members.length ? list : h("p", { class: "muted" }, "No members yet."),
        choices.length
          ? h("div", { class: "grid wide" },
            h("div", { class: "field", dataset: { loc: "member" } }, h("label", { for: "member-user" }, "User"), who),
            h("div", { class: "field", dataset: { loc: "role" } }, h("label", { for: "member-role" }, "Role in the team"), role))
          : h("p", { class: "muted" }, "Every user is a member already (make users on the Users page)."));
      who.id = "member-user";
      role.id = "member-role";
      const box = dialog(`Members of ${name}`, content, {
        submitText: "Add member",
        onSubmit: async () => {
          if (!who.value) throw new Error("Choose a user to add.");
          await request("POST", "/team/member_add", { body: { team_id: team.team_id, member: { user_id: who.value, role: role.value } } });
          await reload();
          toast("Member added.");
        },
      });
    }, { class: "button small", "aria-label": `Members of ${name}` });
  }

  await principalsPage(root, toast, {
    noun: "team",
    title: "Teams",
    intro: r.readsAll ? "A team's models bound its keys' models; its budget and limits are shared by its keys."
      : "The teams you administer: their keys are yours to make and change on the Keys page.",
    canCreate: r.writesAll,
    canWrite: () => r.writesAll,
    readOnly: !r.writesAll,
    moreActions: (team, reload) => (r.writesAll && r.users ? [membersButton(team, reload)] : []),
    specs: (record) => [
      { name: "team_alias", label: "Name", type: "text", placeholder: "e.g. Support" },
      ...(record ? [] : [{ name: "team_id", label: "Team id", type: "text", placeholder: "optional", hint: "Empty: a new UUID." }]),
      ...limitFields(models),
    ],
    create: (payload) => request("POST", "/team/new", { body: payload }),
    created: (made) => toast(`Team ${made.team_alias || made.team_id} created.`),
    load: async () => ({ rows: await loadTeams(r), page: 1, pages: 1 }),
    columns: [
      { title: "Team", cell: (t) => h("span", null, h("strong", null, t.team_alias || "–"), h("br"), h("code", { class: "small muted" }, t.team_id)) },
      { title: "Members", cell: membersCell },
      { title: "Models", cell: modelsText },
      { title: "Spend", cell: (t) => formatMoney(t.spend), num: true },
      { title: "Budget", cell: budgetText },
      { title: "Limits", cell: limitsText },
      { title: "Status", cell: statusPill },
    ],
    name: (t) => `team ${t.team_alias || t.team_id}`,
    ref: (t) => ({ team_id: t.team_id }),
    spendGroup: r.readsAll ? "team" : null,
    spendKey: (t) => t.team_id,
    paths: { update: "/team/update", block: "/team/block", unblock: "/team/unblock", delete: "/team/delete" },
    deleteBody: (t) => ({ team_ids: [t.team_id] }),
    deleteWarning: "The team's keys are deleted with it and refused at once. This cannot be undone.",
    deleted: (done) => `Team deleted, with ${done.deleted_keys} key${done.deleted_keys === 1 ? "" : "s"}.`,
  });
}
