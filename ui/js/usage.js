// My usage: a virtual key's own spend, budget, limits and models (/key/info, which a virtual key may
// call for itself only).

import { request } from "./api.js";
import { formatMoney, formatTime, h } from "./dom.js";
import { limitsText, modelsText } from "./principals.js";

export async function mount(root, { signOut }) {
  root.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, "My usage"),
    h("p", null, "This key's spend, budget and limits."))));
  let info;
  let usage;
  try {
    ({ info, usage } = await request("GET", "/key/info"));
  } catch (err) {
    if (err.status === 401 || err.status === 403) return signOut(err.message);
    root.append(h("div", { class: "error-box", role: "alert" }, err.message));
    return undefined;
  }
  const budget = info.max_budget;
  const total = usage ? usage.total_spend : info.spend;
  const counted = usage && usage.period_spend !== null && usage.period_spend !== undefined ? usage.period_spend : total;
  const left = budget === null || budget === undefined ? null : budget - counted;
  const card = (label, value, key) => h("div", { class: "total", dataset: { total: key } }, h("span", { class: "label" }, label),
    h("span", { class: "value" }, value));
  const meter = h("div", { class: "meter", role: "meter", "aria-label": "Budget used", "aria-valuemin": "0",
    "aria-valuemax": String(budget || 0), "aria-valuenow": String(counted) });
  const fill = h("div", { class: `meter-fill${left !== null && left < 0 ? " over" : ""}` });
  fill.style.width = `${budget ? Math.min(100, (counted / budget) * 100) : 0}%`;
  meter.append(fill);
  root.append(
    h("div", { class: "totals" }, card("Spend", formatMoney(total), "spend"),
      card("Requests", usage ? String(usage.requests) : "–", "requests"),
      card("Budget", budget === null || budget === undefined ? "No budget" : formatMoney(budget), "budget"),
      card("Left", left === null ? "–" : formatMoney(left), "left")),
    h("section", { class: "card" }, h("h2", null, "Budget"),
      budget ? meter : h("p", { class: "muted" }, "This key has no budget of its own (its team's may apply)."),
      budget ? h("p", { class: "small" }, `${formatMoney(counted)} of ${formatMoney(budget)} counted in this period` +
        " (requests in flight count at their worst case until they settle).") : null,
      h("p", { class: "small muted" }, info.budget_duration ? `Resets every ${info.budget_duration}${info.budget_reset_at ? `; next on ${formatTime(info.budget_reset_at)}` : ""}.` : "The budget does not reset.")),
    h("section", { class: "card" }, h("h2", null, "Key"), h("dl", { class: "kv" }, [
      ["Name", info.key_alias || "–"], ["Key", h("code", null, info.key_name || "–")], ["Team", info.team_id || "–"],
      ["Models", modelsText(info)], ["Limits", limitsText(info)], ["Expires", info.expires ? formatTime(info.expires) : "Never"],
      ["Status", info.blocked ? "Blocked" : "Active"],
    ].flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]))));
  return undefined;
}
