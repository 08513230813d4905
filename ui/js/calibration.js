// Calibration: how well each question's (site's) probabilities match the outcomes callers posted
// (/calibration/report), as the upstream answered them (raw) and as callers were served them
// (calibrated); a site's reliability diagram, its fitted calibrators (/calibration/calibrators; fit
// and roll back: proxy admins only) and its ECE and Brier score day by day over the last week.
// Every caller that reads everything sees every decision; the server scopes anyone else to its team.

import { request } from "./api.js";
import { reliabilityChart } from "./charts.js";
import { button, clear, field, formatNumber, formatPercent, formatTime, h, select } from "./dom.js";
import { table } from "./principals.js";

const DAY_MS = 86400000;
const DAYS = 7;
const SERIES = [["raw", "Raw"], ["calibrated", "Calibrated"]];

/** A measure as the page writes it: three decimals. */
export const figure = (v) => (v === null || v === undefined ? "–" : Number(v).toFixed(3));
const percent = (v) => (v === null || v === undefined ? "–" : formatPercent(v));
const interval = (pair) => (Array.isArray(pair) && pair[0] !== null && pair[0] !== undefined
  ? `${figure(pair[0])}–${figure(pair[1])}` : null);
const siteName = (site) => site.name || site.question || `${site.site.slice(0, 8)}…`;
const isoDay = (t) => new Date(t).toISOString().slice(0, 10);

/** One measure, raw and calibrated, a line each (data-series, its figure in .figure). */
function pair(measures, key, format = figure, withInterval = false) {
  return h("span", { class: "pair" }, SERIES.map(([series, label]) => {
    const m = measures[series] || {};
    const ci = withInterval ? interval(m.ece_interval) : null;
    return h("span", { class: `pair-item ${series}`, dataset: { series } }, h("span", { class: "pair-label" }, label),
      h("span", { class: "figure" }, format(m[key])), ci ? h("span", { class: "ci", title: "95% interval" }, ` (${ci})`) : null);
  }));
}

function beforeAfter(report, key) {
  const held = (report && report.held_out) || {};
  const before = (held.before || {})[key];
  const after = (held.after || {})[key];
  return h("span", { class: "before-after" }, h("span", { dataset: { before: "" } }, figure(before)), " → ",
    h("span", { dataset: { after: "" } }, figure(after)));
}

function paramsText(c) {
  const p = c.params || {};
  if (c.method === "temperature") {
    const t = (c.report && c.report.temperature) ?? (p.beta ? 1 / p.beta : null);
    return `T = ${figure(t)}`;
  }
  if (c.method === "platt") return `a = ${figure(p.a)}, b = ${figure(p.b)}`;
  return Object.entries(p).map(([k, v]) => `${k} = ${figure(v)}`).join(", ") || "–";
}

export async function mount(root, { toast, rights: r } = {}) {
  const admin = Boolean(r && r.writesAll);
  let report = null;
  let group = null;
  let site = null;

  const groupPick = h("div", { class: "group-pick" });
  const loadError = h("div", { class: "error-box", role: "alert", hidden: true });
  const sitesHost = h("div", { class: "sites-host" });
  const detail = h("div", { class: "calibration-detail" });
  root.append(
    h("div", { class: "page-head" }, h("div", null, h("h1", null, "Calibration"),
      h("p", null, "How well each question's probabilities match the outcomes posted for it: raw (as the upstream " +
        "answered) and calibrated (as callers were served).")), groupPick),
    loadError,
    h("section", { class: "card", "aria-labelledby": "sites-title" }, h("div", { class: "card-head" },
      h("h2", { id: "sites-title" }, "Sites"), h("span", { class: "small muted" }, "A site is one question, on either wire.")),
    sitesHost),
    detail);

  const groupsOf = () => [...new Set(report.sites.map((one) => one.model_group))];
  const sitesOf = () => report.sites.filter((one) => one.model_group === group);

  function showError(box, err) {
    box.textContent = err ? err.message : "";
    box.hidden = !err;
  }

  function drawGroups() {
    const groups = groupsOf();
    const pick = select(groups.map((g) => [g, g]), group, { name: "model_group" });
    pick.addEventListener("change", () => choose(pick.value, null));
    clear(groupPick).append(field("Model group", pick));
  }

  const siteColumns = [
    { title: "Question", cell: (one) => h("span", null,
      h("button", { type: "button", class: "link-button", "aria-pressed": String(one.site === site), onclick: () => choose(group, one.site) },
        siteName(one)), h("br"), h("code", { class: "small muted", title: one.site }, one.site)) },
    { title: "Kind", cell: (one) => one.kind || "–" },
    { title: "n", cell: (one) => formatNumber(one.raw.n), num: true },
    { title: "Accuracy", cell: (one) => pair(one, "accuracy", percent) },
    { title: "Brier", cell: (one) => pair(one, "brier") },
    { title: "Log loss", cell: (one) => pair(one, "log_loss") },
    { title: "ECE", cell: (one) => pair(one, "ece", figure, true) },
  ];

  function drawSites() {
    const rows = sitesOf();
    const shown = table(siteColumns, rows, null, "No decisions of this group have outcomes yet.");
    shown.querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.dataset.site = rows[i].site;
      if (rows[i].site === site) tr.classList.add("selected");
    });
    clear(sitesHost).append(shown);
  }

  const calibratorColumns = (reload) => [
    { title: "Version", cell: (c) => `v${c.version}` },
    { title: "Method", cell: (c) => (c.method === "platt" ? "Platt" : c.method) },
    { title: "Parameters", cell: paramsText },
    { title: "Held-out ECE", cell: (c) => beforeAfter(c.report, "ece") },
    { title: "Held-out log loss", cell: (c) => beforeAfter(c.report, "log_loss") },
    { title: "Outcomes", cell: (c) => (c.report ? `${formatNumber(c.report.train_n)} train · ${formatNumber(c.report.held_out_n)} held out`
      : formatNumber(c.n)) },
    { title: "Fitted", cell: (c) => h("span", null, formatTime(c.created_at), c.created_by ? h("br") : null,
      c.created_by ? h("span", { class: "small muted" }, c.created_by) : null) },
    { title: "Status", cell: (c) => (c.active ? h("span", { class: "pill" }, "Active") : h("span", { class: "badge" }, "Inactive")) },
    ...(admin ? [{ title: "Actions", cell: (c) => (c.active ? button("Roll back", () => reload.rollback(c),
      { class: "button small danger", "aria-label": `Roll back version ${c.version}` }) : "") }] : []),
  ];

  function calibratorsCard(chosen) {
    const host = h("div", { class: "calibrators-host" }, h("p", { class: "muted" }, "Loading…"));
    const error = h("div", { class: "error-box", role: "alert", hidden: true });
    const actions = {
      async load() {
        const listed = await request("GET", "/calibration/calibrators", { query: { model_group: chosen.model_group, site: chosen.site } });
        const rows = listed.calibrators || [];
        const shown = table(calibratorColumns(actions), rows, null, "No calibrator has been fitted for this site: its answers are served raw.");
        shown.querySelectorAll("tbody tr").forEach((tr, i) => {
          tr.dataset.calibrator = String(rows[i].version);
          tr.dataset.active = String(Boolean(rows[i].active));
        });
        clear(host).append(shown);
      },
      async run(path, done, trigger) {
        showError(error, null);
        if (trigger) trigger.disabled = true;
        try {
          const answer = await request("POST", path, { body: { model_group: chosen.model_group, site: chosen.site } });
          await actions.load();
          toast(done(answer));
        } catch (err) {
          showError(error, err);
        } finally {
          if (trigger) trigger.disabled = false;
        }
      },
      rollback(c) {
        return actions.run("/calibration/rollback", (answer) => (answer.activated
          ? `Version ${c.version} rolled back: version ${answer.activated.version} applies again.`
          : `Version ${c.version} rolled back: this site is served raw again.`));
      },
    };
    const fit = admin ? button("Fit", () => actions.run("/calibration/fit", (answer) =>
      `Version ${answer.calibrator.version} fitted: held-out ECE ${figure(answer.held_out.before.ece)} → ${figure(answer.held_out.after.ece)}.`, fit),
    { class: "button primary small" }) : null;
    const note = admin
      ? "Fit: a new version from this site's outcomes (fitted on most, measured on a held-out part); it applies to answers at once."
      : "Proxy admins fit and roll back calibrators.";
    const card = h("section", { class: "card", "aria-labelledby": "calibrators-title" },
      h("div", { class: "card-head" }, h("h2", { id: "calibrators-title" }, "Calibrators"), fit),
      h("p", { class: "small muted" }, note), error, host);
    actions.load().catch((err) => { clear(host); showError(error, err); });
    return card;
  }

  function overTimeCard(chosen) {
    const host = h("div", { class: "over-time-host" }, h("p", { class: "muted" }, "Loading…"));
    const today = Date.parse(`${isoDay(Date.now())}T00:00:00Z`);
    const days = Array.from({ length: DAYS }, (_, i) => today - (DAYS - 1 - i) * DAY_MS);
    const empty = { n: 0, ece: null, brier: null };
    Promise.all(days.map((start) => request("GET", "/calibration/report", { query: { model_group: chosen.model_group, site: chosen.site,
      start: new Date(start).toISOString(), end: new Date(start + DAY_MS).toISOString() } })))
      .then((answers) => {
        const rows = answers.map((answer, i) => {
          const found = (answer.sites || []).find((one) => one.site === chosen.site) || { raw: empty, calibrated: empty };
          return { day: isoDay(days[i]), ...found };
        });
        const shown = table([
          { title: "Day", cell: (d) => d.day },
          { title: "n", cell: (d) => formatNumber(d.raw.n), num: true },
          { title: "ECE", cell: (d) => pair(d, "ece") },
          { title: "Brier", cell: (d) => pair(d, "brier") },
        ], rows, null, "");
        shown.querySelectorAll("tbody tr").forEach((tr, i) => { tr.dataset.day = rows[i].day; });
        shown.classList.remove("stack"); // four narrow columns: a table at any width
        clear(host).append(shown);
      })
      .catch((err) => clear(host).append(h("div", { class: "error-box", role: "alert" }, err.message)));
    return h("section", { class: "card", "aria-labelledby": "over-time-title" },
      h("h2", { id: "over-time-title" }, "Measures over time"),
      h("p", { class: "small muted" }, `The last ${DAYS} days (UTC), by when the question was answered.`), host);
  }

  function drawDetail() {
    const chosen = sitesOf().find((one) => one.site === site);
    if (!chosen) return clear(detail);
    const series = SERIES.map(([name, label]) => ({ name, label, bins: chosen[name].bins || [] }));
    const bins = report.binning && report.binning.bins ? `${report.binning.bins} equal-width bins of ${report.binning.of}` : "bins";
    clear(detail).append(
      h("div", { class: "charts" },
        h("section", { class: "card", "aria-labelledby": "reliability-title", dataset: { site: chosen.site } },
          h("h2", { id: "reliability-title" }, `Reliability: ${siteName(chosen)}`),
          h("p", { class: "small muted" }, `Accuracy against confidence over ${bins}; hover a point for its bin and n.`),
          reliabilityChart(series, { title: "Reliability diagram" })),
        overTimeCard(chosen)),
      calibratorsCard(chosen));
    return detail;
  }

  function choose(nextGroup, nextSite) {
    group = nextGroup;
    const rows = sitesOf();
    site = nextSite && rows.some((one) => one.site === nextSite) ? nextSite : (rows[0] || {}).site || null;
    drawGroups();
    drawSites();
    drawDetail();
  }

  try {
    report = await request("GET", "/calibration/report");
  } catch (err) {
    showError(loadError, err);
    clear(sitesHost);
    return;
  }
  if (!report.sites.length) {
    clear(sitesHost).append(h("p", { class: "empty" }, "No decisions have outcomes yet: post them to /v1/outcomes " +
      "(request id, question, outcome) and their measures show here."));
    return;
  }
  choose(groupsOf()[0], null);
}
