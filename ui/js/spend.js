// Spend: charts of spend and requests by day, and by model, team and key, over a chosen range (from
// /global/spend/report's daily roll-ups), and the recent calls with filters (from /spend/logs/ui,
// LiteLLM's paginated route for its UI).
// A caller that reads everything sees everyone's; a team admin its teams' (team_id on every call); an
// internal user its own calls (user_id) and its spend and budget (/user/info).

import { request } from "./api.js";
import { barChart, columnChart } from "./charts.js";
import { button, clear, field, formatMoney, formatNumber, formatTime, h } from "./dom.js";
import { table } from "./principals.js";

const DAY_MS = 86400000;
const LOG_PAGE = 25;

const isoDay = (date) => date.toISOString().slice(0, 10);
const money = (v) => formatMoney(v);

function days(start, end) {
  const out = [];
  for (let t = Date.parse(`${start}T00:00:00Z`); t <= Date.parse(`${end}T00:00:00Z`); t += DAY_MS) out.push(isoDay(new Date(t)));
  return out;
}

/** What the caller may look at: [{label, query, reports}] (reports: whether /global/spend/report answers it). */
function scopesOf(r) {
  if (!r || r.readsAll) return [{ label: "Everyone", query: {}, reports: true }];
  const teams = new Map(r.teams.map((t) => [t.team_id, t]));
  return [...r.adminTeams.map((team_id) => ({ label: `Team ${(teams.get(team_id) || {}).team_alias || team_id}`,
    query: { team_id }, reports: true, team: true })),
  ...(r.userId ? [{ label: "My keys", query: { user_id: r.userId }, reports: false }] : [])];
}

export async function mount(root, { rights: r } = {}) {
  const scopes = scopesOf(r);
  let scope = scopes[0];
  const today = isoDay(new Date());
  const range = { start: isoDay(new Date(Date.now() - 29 * DAY_MS)), end: today };
  let metric = "spend";
  let logPage = 1;

  const from = h("input", { type: "date", name: "start_date", value: range.start, max: today });
  const to = h("input", { type: "date", name: "end_date", value: range.end, max: today });
  const rangeError = h("p", { class: "form-error", role: "alert" });
  const quick = (n) => button(`${n} days`, () => {
    from.value = isoDay(new Date(Date.now() - (n - 1) * DAY_MS));
    to.value = today;
    apply();
  }, { class: "button small ghost", dataset: { days: String(n) } });
  const rangeForm = h("form", { class: "range", "aria-label": "Date range" }, field("From", from), field("To", to),
    h("button", { type: "submit", class: "button" }, "Show"), quick(7), quick(30), quick(90));
  rangeForm.addEventListener("submit", (event) => { event.preventDefault(); apply(); });

  const totals = h("div", { class: "totals", "aria-live": "polite" });
  const byDay = h("div", { class: "charts" });
  const metricSwitch = h("div", { class: "segmented", role: "group", "aria-label": "Breakdown by" });
  const breakdown = h("div", { class: "charts breakdown" });
  const logs = h("div", { class: "logs-host" });
  const pager = h("div", { class: "pager" });

  const filters = {
    key_alias: h("input", { type: "text", name: "key_alias", placeholder: "any" }),
    ...(scope.query.team_id || scope.query.user_id ? {} : { team_id: h("input", { type: "text", name: "team_id", placeholder: "any" }) }),
    model: h("input", { type: "text", name: "model", placeholder: "group or provider/model" }),
    request_id: h("input", { type: "text", name: "request_id", placeholder: "req_…" }),
  };
  const logError = h("p", { class: "form-error", role: "alert" });
  const filterForm = h("form", { class: "filters", "aria-label": "Filter calls" },
    field("Key name", filters.key_alias), filters.team_id ? field("Team id", filters.team_id) : null, field("Model", filters.model),
    field("Request id", filters.request_id), h("div", { class: "buttons" }, h("button", { type: "submit", class: "button" }, "Filter"),
      button("Clear", () => { for (const input of Object.values(filters)) input.value = ""; logPage = 1; loadLogs(); }, { class: "button ghost" })));
  filterForm.addEventListener("submit", (event) => { event.preventDefault(); logPage = 1; loadLogs(); });

  const scopeSwitch = h("div", { class: "segmented", role: "group", "aria-label": "Whose spend" });
  const breakdownHead = h("div", { class: "card-head" }, h("h2", null, "Breakdown"), metricSwitch);
  function drawScopeSwitch() {
    clear(scopeSwitch);
    for (const each of scopes) {
      scopeSwitch.append(h("button", { type: "button", "aria-pressed": String(each === scope),
        onclick: () => { scope = each; logPage = 1; drawScopeSwitch(); apply(); } }, each.label));
    }
  }
  const intro = r && !r.readsAll ? "What you may see of the spend, day by day (UTC), and every call."
    : "What the gateway's callers spent, day by day (UTC), and every call.";
  root.append(
    h("div", { class: "page-head" }, h("div", null, h("h1", null, "Spend"),
      h("p", null, intro)), rangeForm),
    ...(scopes.length > 1 ? [scopeSwitch] : []),
    rangeError, totals, byDay, breakdownHead, breakdown,
    h("section", { class: "card", "aria-labelledby": "calls-title" }, h("div", { class: "card-head" }, h("h2", { id: "calls-title" }, "Recent calls")),
      filterForm, logError, logs, pager));

  let reports = null;

  function drawMetricSwitch() {
    clear(metricSwitch);
    for (const [value, text] of [["spend", "Spend"], ["requests", "Requests"]]) {
      metricSwitch.append(h("button", { type: "button", "aria-pressed": String(metric === value), onclick: () => { metric = value; drawMetricSwitch(); drawBreakdown(); } }, text));
    }
  }

  function totalCard(label, value, key) {
    return h("div", { class: "total", dataset: { total: key } }, h("span", { class: "label" }, label), h("span", { class: "value" }, value));
  }

  function drawReports() {
    const { day } = reports;
    const sum = (k) => day.reduce((acc, e) => acc + (e[k] || 0), 0);
    clear(totals).append(totalCard("Spend", money(sum("spend")), "spend"), totalCard("Requests", formatNumber(sum("requests")), "requests"),
      totalCard("Failed", formatNumber(sum("failed_requests")), "failed"),
      totalCard("Tokens in", formatNumber(sum("prompt_tokens")), "tokens"));
    const byDate = Object.fromEntries(day.map((e) => [String(e.date).slice(0, 10), e]));
    const series = days(range.start, range.end).map((d) => ({ label: d, short: d.slice(5), entry: byDate[d] || {} }));
    clear(byDay).append(
      h("section", { class: "card", "aria-label": "Spend by day" }, h("h2", null, "Spend by day"),
        columnChart(series.map((d) => ({ ...d, value: d.entry.spend || 0, detail: `${d.entry.requests || 0} requests` })),
          { title: "Spend by day", format: money })),
      h("section", { class: "card", "aria-label": "Requests by day" }, h("h2", null, "Requests by day"),
        columnChart(series.map((d) => ({ ...d, value: d.entry.requests || 0, detail: `${d.entry.failed_requests || 0} failed` })),
          { title: "Requests by day", format: (v) => formatNumber(Math.round(v)), alt: true, integer: true })));
    drawBreakdown();
  }

  function drawBreakdown() {
    if (!reports) return;
    const format = metric === "spend" ? money : (v) => formatNumber(Math.round(v));
    const rows = (entries, label) => entries.map((e) => ({ label: label(e), value: e[metric] || 0,
      detail: metric === "spend" ? `${e.requests} requests` : money(e.spend) }));
    const chart = (title, entries, label) => h("section", { class: "card", "aria-label": title }, h("h2", null, title),
      barChart(rows(entries, label), { title, format }));
    clear(breakdown).append(
      chart("By model", reports.model_group, (e) => e.model_group || "–"),
      chart("By deployment", reports.model, (e) => e.model || "no deployment (refused before a call)"),
      ...(scope.team ? [] : [chart("By team", reports.team, (e) => e.team_alias || e.team_id || "No team")]),
      chart("By key", reports.key, (e) => e.key_alias || (e.api_key ? `${e.api_key.slice(0, 10)}…` : "No key")));
  }

  /** An internal user's own spend and budget (it may not read the spend report). */
  async function loadOwn() {
    reports = null;
    clear(byDay);
    clear(breakdown);
    breakdownHead.hidden = true;
    const self = await request("GET", "/user/info");
    const info = self.user_info || {};
    const keys = self.keys || [];
    clear(totals).append(totalCard("Spend", money(info.spend ?? 0), "spend"),
      totalCard("Budget", info.max_budget === null || info.max_budget === undefined ? "No budget" : money(info.max_budget), "budget"),
      totalCard("Keys", formatNumber(keys.length), "keys"));
    clear(byDay).append(h("section", { class: "card", "aria-label": "By key" }, h("h2", null, "By key"),
      barChart(keys.map((k) => ({ label: k.key_alias || k.key_name || "key", value: k.spend || 0, detail: money(k.spend || 0) })),
        { title: "By key", format: money })));
  }

  async function loadReports() {
    if (!scope.reports) return loadOwn();
    breakdownHead.hidden = false;
    const query = { start_date: range.start, end_date: range.end, ...scope.query };
    const groups = scope.team ? ["day", "model_group", "model", "key"] : ["day", "model_group", "model", "team", "key"];
    const answers = await Promise.all(groups.map((group_by) => request("GET", "/global/spend/report", { query: { ...query, group_by } })));
    reports = Object.fromEntries(groups.map((g, i) => [g, answers[i]]));
    drawReports();
  }

  const logColumns = [
    { title: "Time", cell: (r) => formatTime(r.startTime) },
    { title: "Request", cell: (r) => h("code", { class: "small", title: r.request_id }, r.request_id) },
    { title: "Key", cell: (r) => r.key_alias || (r.api_key ? `${r.api_key.slice(0, 10)}…` : "–") },
    { title: "Team", cell: (r) => r.team_id || "–" },
    { title: "User", cell: (r) => r.user || "–" },
    { title: "Model", cell: (r) => h("span", null, r.model_group || "–", r.model ? h("br") : null, r.model ? h("span", { class: "small muted" }, r.model) : null) },
    { title: "Status", cell: (r) => h("span", { class: `pill${r.status && r.status >= 400 ? " off" : ""}` }, String(r.status ?? "–")) },
    { title: "Tokens", cell: (r) => formatNumber(r.total_tokens), num: true },
    { title: "Cost", cell: (r) => (r.metadata && r.metadata.cost_unknown ? "unknown" : money(r.spend)), num: true },
    { title: "Cache hits", cell: (r) => formatNumber(r.cache_hits ?? 0), num: true },
    { title: "Retries", cell: (r) => formatNumber(r.retries ?? 0), num: true },
  ];

  async function loadLogs() {
    const query = { start_date: range.start, end_date: range.end, page: logPage, page_size: LOG_PAGE, ...scope.query };
    for (const [name, input] of Object.entries(filters)) query[name] = input.value.trim();
    logError.textContent = "";
    try {
      const answer = await request("GET", "/spend/logs/ui", { query });
      clear(logs).append(table(logColumns, answer.data, null, "No calls match."));
      clear(pager);
      pager.append(`${formatNumber(answer.total)} call${answer.total === 1 ? "" : "s"}`);
      if (answer.total_pages > 1) {
        pager.append(button("Previous", () => { logPage -= 1; loadLogs(); }, { class: "button small", disabled: logPage <= 1 }),
          `Page ${answer.page} of ${answer.total_pages}`,
          button("Next", () => { logPage += 1; loadLogs(); }, { class: "button small", disabled: logPage >= answer.total_pages }));
      }
    } catch (err) {
      clear(logs);
      logError.textContent = err.message;
    }
  }

  async function apply() {
    rangeError.textContent = "";
    range.start = from.value || range.start;
    range.end = to.value || range.end;
    try {
      await Promise.all([loadReports(), loadLogs()]);
    } catch (err) {
      rangeError.textContent = err.message;
    }
  }

  drawMetricSwitch();
  drawScopeSwitch();
  await apply();
}
