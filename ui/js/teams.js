// Teams: create, edit limits and budget, block, unblock, delete (deleting a team deletes its keys).
// The master key only.

import { request } from "./api.js";
import { formatMoney, h } from "./dom.js";
import { budgetText, limitFields, limitsText, modelNames, modelsText, principalsPage, statusPill } from "./principals.js";

export async function mount(root, { toast }) {
  const models = await modelNames();
  await principalsPage(root, toast, {
    noun: "team",
    title: "Teams",
    intro: "A team's models bound its keys' models; its budget and limits are shared by its keys.",
    specs: (record) => [
      { name: "team_alias", label: "Name", type: "text", placeholder: "e.g. Support" },
      ...(record ? [] : [{ name: "team_id", label: "Team id", type: "text", placeholder: "optional", hint: "Empty: a new UUID." }]),
      ...limitFields(models),
    ],
    create: (payload) => request("POST", "/team/new", { body: payload }),
    created: (made) => toast(`Team ${made.team_alias || made.team_id} created.`),
    load: async () => ({ rows: await request("GET", "/team/list"), page: 1, pages: 1 }),
    columns: [
      { title: "Team", cell: (t) => h("span", null, h("strong", null, t.team_alias || "–"), h("br"), h("code", { class: "small muted" }, t.team_id)) },
      { title: "Models", cell: modelsText },
      { title: "Spend", cell: (t) => formatMoney(t.spend), num: true },
      { title: "Budget", cell: budgetText },
      { title: "Limits", cell: limitsText },
      { title: "Status", cell: statusPill },
    ],
    name: (t) => `team ${t.team_alias || t.team_id}`,
    ref: (t) => ({ team_id: t.team_id }),
    spendGroup: "team",
    spendKey: (t) => t.team_id,
    paths: { update: "/team/update", block: "/team/block", unblock: "/team/unblock", delete: "/team/delete" },
    deleteBody: (t) => ({ team_ids: [t.team_id] }),
    deleteWarning: "The team's keys are deleted with it and refused at once. This cannot be undone.",
    deleted: (done) => `Team deleted, with ${done.deleted_keys} key${done.deleted_keys === 1 ? "" : "s"}.`,
  });
}
