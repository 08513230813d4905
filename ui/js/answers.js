// Answer cards: one per question, probability bars sorted by probability, and one card about the
// request (latency, the deployment that answered, retries, fallbacks, cache, cost) from the
// gateway's x-decisions-* response headers.

import { errorMessage } from "./api.js";
import { formatMoney, formatNumber, formatPercent, h } from "./dom.js";

const KIND_LABELS = { noul: "Yes / no", predicate: "Predicate", choice: "Choice", score: "Score", box: "Box", refusal: "Refused" };

function header(headers, name) {
  const value = headers.get(name);
  return value === null || value === "" ? null : value;
}

function meta(label, value, key) {
  return h("div", { dataset: { meta: key } }, h("dt", null, label), h("dd", null, value));
}

/** The card about the request itself. */
export function requestCard(res, usage) {
  const hd = (n) => header(res.headers, n);
  const cost = hd("x-decisions-response-cost");
  const cacheHits = hd("x-decisions-cache-hits");
  const saved = hd("x-decisions-cost-saved");
  const items = [
    meta("Latency", `${Math.round(res.ms)} ms`, "latency"),
    meta("Model group", hd("x-decisions-model-group") || "–", "model-group"),
    meta("Deployment", hd("x-decisions-model") || "–", "deployment"),
    meta("Retries", hd("x-decisions-attempted-retries") ?? "0", "retries"),
    meta("Fallbacks", hd("x-decisions-attempted-fallbacks") ?? "0", "fallbacks"),
    meta("Cost", cost === null ? "unknown" : formatMoney(Number(cost)), "cost"),
  ];
  if (cacheHits !== null) items.push(meta("Cache hits", cacheHits, "cache-hits"));
  if (saved !== null) items.push(meta("Cost saved", formatMoney(Number(saved)), "cost-saved"));
  if (usage) {
    const input = usage.input_tokens ?? null;
    const output = usage.output_tokens ?? null;
    items.push(meta("Tokens in / out", `${formatNumber(input)} / ${formatNumber(output)}`, "tokens"));
  }
  if (hd("x-decisions-model-id")) items.push(meta("Deployment id", hd("x-decisions-model-id"), "model-id"));
  if (hd("x-decisions-hedged")) items.push(meta("Hedged", "yes", "hedged"));
  const requestId = hd("x-request-id");
  const card = h("section", { class: "card request-card", "aria-label": "About this request" },
    h("div", { class: "card-head" }, h("h2", null, "Answered"),
      h("span", { class: "badge good" }, `HTTP ${res.status}`)),
    h("dl", { class: "meta" }, items));
  if (hd("x-decisions-cooldown")) card.append(h("p", { class: "small muted" }, hd("x-decisions-cooldown")));
  if (requestId) card.append(h("p", { class: "small muted" }, "Request id ", h("code", null, requestId)));
  return card;
}

/** Bars for [{label, probability, key}], sorted by probability; the top one is highlighted. */
function bars(rows, chosen) {
  const sorted = [...rows].sort((a, b) => b.probability - a.probability);
  const list = h("ol", { class: "bars", "aria-label": "Probabilities, highest first" });
  sorted.forEach((row, i) => {
    const isTop = chosen !== undefined ? row.key === chosen : i === 0;
    const fill = h("div", { class: "bar-fill" });
    fill.style.width = `${Math.max(0, Math.min(1, row.probability)) * 100}%`;
    list.append(h("li", { class: `bar${isTop ? " top" : ""}`, dataset: { option: row.key, probability: String(row.probability) } },
      h("span", { class: "bar-label", title: row.label }, row.label),
      h("div", { class: "bar-track", "aria-hidden": "true" }, fill),
      h("span", { class: "bar-value" }, formatPercent(row.probability))));
  });
  return list;
}

function badges(confidence, labelMass) {
  const out = h("div", { class: "badges" });
  if (typeof confidence === "number") {
    out.append(h("span", { class: "badge", dataset: { confidence: String(confidence) },
      title: "How concentrated the distribution is (not the probability of the choice)" },
    `Confidence ${formatPercent(confidence)}`));
  }
  if (typeof labelMass === "number") {
    out.append(h("span", { class: `badge${labelMass < 0.5 ? " warn" : ""}`, dataset: { labelMass: String(labelMass) },
      title: "The share of the model's probability that fell on the answer labels" },
    `Label mass ${formatPercent(labelMass)}`));
  }
  return out.childNodes.length ? out : null;
}

function card(title, kind, ...content) {
  return h("section", { class: "card answer-card", dataset: { question: title, kind }, "aria-label": `Answer to ${title}` },
    h("h3", null, title, h("span", { class: "kind" }, KIND_LABELS[kind] || kind)), ...content);
}

const valueText = (v) => (typeof v === "string" ? v : JSON.stringify(v));

function refusal(title) {
  return card(title, "refusal", h("p", { class: "refusal" }, "The model declined to answer this question."));
}

function boxView(box, image) {
  const coords = ["top", "bottom", "left", "right"].map((k) => `${k} ${formatPercent(Number(box[k]))}`).join(" · ");
  const out = [h("p", { class: "headline" }, h("small", null, coords))];
  if (image) {
    const rect = h("div", { class: "box-rect", "aria-hidden": "true" });
    rect.style.top = `${box.top * 100}%`;
    rect.style.left = `${box.left * 100}%`;
    rect.style.height = `${Math.max(0, box.bottom - box.top) * 100}%`;
    rect.style.width = `${Math.max(0, box.right - box.left) * 100}%`;
    out.push(h("div", { class: "box-view" }, h("img", { src: image, alt: "The image with the box drawn on it" }), rect));
  }
  return out;
}

// ---- System One ----------------------------------------------------------------------------------

function systemOneCard(id, answer, question, image) {
  const q = question && typeof question === "object" ? question : {};
  if (!answer || typeof answer !== "object") return refusal(id);
  const mass = answer.x_label_mass;
  if (answer.type === "noul") {
    const p = Number(answer.noul);
    return card(id, "noul", h("p", { class: "headline" }, `${formatPercent(p)} `, h("small", null, "yes")), badges(undefined, mass),
      bars([{ key: "true", label: "Yes", probability: p }, { key: "false", label: "No", probability: 1 - p }]));
  }
  if (answer.type === "choice") {
    const rows = Object.entries(answer.probabilities || {}).map(([label, p]) => ({ key: label, label, probability: Number(p) }));
    return card(id, "choice", h("p", { class: "headline" }, answer.choice, " ", h("small", null, "chosen")),
      badges(answer.confidence, mass), bars(rows, answer.choice));
  }
  if (answer.type === "score") {
    const legend = answer.legend || {};
    const levels = Array.isArray(q.criteria) ? q.criteria : [];
    const rows = Object.entries(answer.probabilities || {}).map(([i, p]) => ({
      key: i, label: `${i}: ${valueText(legend[i] ?? levels[Number(i)] ?? "")}`, probability: Number(p) }));
    const top = Math.max(0, rows.length - 1);
    return card(id, "score", h("p", { class: "headline" }, Number(answer.score).toFixed(2), " ",
      h("small", null, `expected score, 0–${top}`)), badges(answer.confidence, mass), bars(rows));
  }
  if (answer.type === "box") {
    return card(id, "box", ...boxView(answer.box || {}, image), badges(answer.confidence, mass));
  }
  return card(id, String(answer.type), h("pre", null, JSON.stringify(answer, null, 2)));
}

export function systemOneCards(body, data) {
  const questions = body && typeof body.questions === "object" && body.questions ? body.questions : {};
  const answers = (data && data.answers) || {};
  let image = null;
  if (body && body.assets && typeof body.assets === "object") {
    const first = Object.values(body.assets)[0];
    if (first && first.data_base64) image = `data:image/${first.format || "png"};base64,${first.data_base64}`;
  }
  const ids = [...new Set([...Object.keys(questions), ...Object.keys(answers)])];
  return ids.map((id) => systemOneCard(id, answers[id], questions[id], image));
}

// ---- OpenAI Decisions ----------------------------------------------------------------------------

function decisionsCard(answer, question, i) {
  const title = (answer && answer.name) || (question && question.name) || `Question ${i + 1}`;
  if (!answer || answer.type === "refusal") return refusal(title);
  if (answer.type === "predicate") {
    const p = Number(answer.probability);
    return card(title, "predicate", h("p", { class: "headline" }, `${formatPercent(p)} `, h("small", null, "true")),
      bars([{ key: "true", label: "true", probability: p }, { key: "false", label: "false", probability: 1 - p }]));
  }
  if (answer.type === "choice") {
    const rows = (answer.probabilities || []).map((row) => ({ key: valueText(row.value), label: valueText(row.value),
      probability: Number(row.probability) }));
    return card(title, "choice", h("p", { class: "headline" }, valueText(answer.choice), " ", h("small", null, "chosen")),
      badges(answer.confidence), bars(rows, valueText(answer.choice)));
  }
  if (answer.type === "score") {
    const rows = (answer.probabilities || []).map((row) => ({ key: String(row.value), label: `${row.value}: ${row.label}`,
      probability: Number(row.probability) }));
    return card(title, "score", h("p", { class: "headline" }, Number(answer.score).toFixed(2), " ",
      h("small", null, `expected score, 0–${Math.max(0, rows.length - 1)}`)), badges(answer.confidence), bars(rows));
  }
  if (answer.type === "box") return card(title, "box", ...boxView(answer.box || {}, null), badges(answer.confidence));
  return card(title, String(answer.type), h("pre", null, JSON.stringify(answer, null, 2)));
}

export function decisionsCards(body, data) {
  const questions = body && Array.isArray(body.questions) ? body.questions : [];
  const answers = (data && Array.isArray(data.answers)) ? data.answers : [];
  const count = Math.max(questions.length, answers.length);
  return Array.from({ length: count }, (_, i) => decisionsCard(answers[i], questions[i], i));
}

/** The failure as the server said it. */
export function errorCard(res) {
  return h("section", { class: "card", "aria-label": "The request failed" },
    h("div", { class: "error-box", role: "alert" }, h("strong", null, `The gateway answered ${res.status}`),
      errorMessage(res.data, res.status)));
}

export function rawJson(res) {
  return h("details", { class: "raw card" }, h("summary", null, "Response JSON"),
    h("pre", { class: "raw-json" }, typeof res.data === "string" ? res.data : JSON.stringify(res.data, null, 2)));
}
