// My usage: a virtual key's own spend, budget, limits and models (/key/info, which a virtual key may
// call for itself only).

import { request } from "./api.js";
import { formatMoney, formatTime, h } from "./dom.js";
import { limitsText, modelsText } from "./principals.js";

export async function mount(root, { signOut }) {
  root.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, "My usage"),
    h("p", null, "This key's spend, budget and limits."))));
  let info;
  try {
    info = (await request("GET", "/key/info")).info;
  } catch (err) {
    if (err.status === 401 || err.status === 403) return signOut(err.message);
    root.append(h("div", { class: "error-box", role: "alert" }, err.message));
    return undefined;
  }
  const budget = info.max_budget;
  const left = budget === null || budget === undefined ? null : budget - info.spend;
  const total = (label, value, key) => h("div", { class: "total", dataset: { total: key } }, h("span", { class: "label" }, label),
    h("span", { class: "value" }, value));
  const meter = h("div", { class: "meter", role: "meter", "aria-label": "Budget used", "aria-valuemin": "0",
    "aria-valuemax": String(budget || 0), "aria-valuenow": String(info.spend) });
  const fill = h("div", { class: `meter-fill${left !== null && left < 0 ? " over" : ""}` });
  fill.style.width = `${budget ? Math.min(100, (info.spend / budget) * 100) : 0}%`;
  meter.append(fill);
  root.append(
    h("div", { class: "totals" }, total("Spend", formatMoney(info.spend), "spend"),
      total("Budget", budget === null || budget === undefined ? "No budget" : formatMoney(budget), "budget"),
      total("Left", left === null ? "–" : formatMoney(left), "left")),
    h("section", { class: "card" }, h("h2", null, "Budget"),
      budget ? meter : h("p", { class: "muted" }, "This key has no budget of its own (its team's may apply)."),
      h("p", { class: "small muted" }, info.budget_duration ? `Resets every ${info.budget_duration}${info.budget_reset_at ? `; next on ${formatTime(info.budget_reset_at)}` : ""}.` : "The budget does not reset.")),
    h("section", { class: "card" }, h("h2", null, "Key"), h("dl", { class: "kv" }, [
      ["Name", info.key_alias || "–"], ["Key", h("code", null, info.key_name || "–")], ["Team", info.team_id || "–"],
      ["Models", modelsText(info)], ["Limits", limitsText(info)], ["Expires", info.expires ? formatTime(info.expires) : "Never"],
      ["Status", info.blocked ? "Blocked" : "Active"],
    ].flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]))));
  return undefined;
}
