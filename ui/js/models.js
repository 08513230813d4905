// Models: the deployments of each model group (LiteLLM's /model/info), with their health (the
// router's cooldowns), limits and prices. The master key only.

import { request } from "./api.js";
import { clear, formatMoney, h } from "./dom.js";

const perMillion = (v) => (v === null || v === undefined ? "input price" : `${formatMoney(v * 1e6)} / 1M tokens`);

function range(pair) {
  if (!Array.isArray(pair)) return "–";
  return `${pair[0] ?? 1} to ${pair[1] ?? "any"}`;
}

function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.flatMap(([k, v]) => [h("dt", null, k), h("dd", null, v)]));
}

function health(info) {
  const hl = info.health || {};
  if (hl.status === "cooling_down") {
    const left = hl.cooldown_seconds_left ? ` · ${Math.ceil(hl.cooldown_seconds_left)} s left` : "";
    return h("span", null, h("span", { class: "pill off" }, "Cooling down"), h("span", { class: "small muted" }, ` ${hl.cooldown_reason || ""}${left}`));
  }
  return h("span", { class: "pill" }, "Healthy");
}

function deployment(entry) {
  const info = entry.model_info || {};
  const params = entry.litellm_params || {};
  const limits = info.limits || {};
  const prices = info.priced
    ? [["Input", perMillion(info.input_cost_per_token)], ["Output", perMillion(info.output_cost_per_token)],
      ["Cached input", info.cache_read_input_token_cost === null ? "input price" : perMillion(info.cache_read_input_token_cost)],
      ["Per request", info.cost_per_request ? formatMoney(info.cost_per_request) : "–"]]
    : [["Prices", "Not priced: costs are reported as unknown"]];
  return h("article", { class: "card deployment", dataset: { deployment: params.model } },
    h("div", { class: "card-head" }, h("h3", null, params.model), health(info)),
    h("div", { class: "grid wide" },
      h("div", null, h("h4", { class: "label" }, "Deployment"), kv([["Id", h("code", null, info.id || "–")], ["Provider", info.litellm_provider || "–"],
        ["Address", params.api_base || "built in"], ["Timeout", params.timeout ? `${params.timeout} s` : "–"],
        ["Rate caps", [params.rpm ? `${params.rpm} rpm` : null, params.tpm ? `${params.tpm} tpm` : null].filter(Boolean).join(" · ") || "none"]])),
      h("div", null, h("h4", { class: "label" }, "Limits"), kv([["Questions", limits.max_questions ? `up to ${limits.max_questions}` : "any"],
        ["Options", range(limits.options)], ["Levels", range(limits.levels)],
        ["Images", limits.max_images === 0 ? "no" : limits.max_images ? `up to ${limits.max_images}` : "yes"],
        ["Box questions", limits.box ? "yes" : "no"],
        ["Context", limits.max_context_tokens ? `${limits.max_context_tokens.toLocaleString("en-US")} tokens` : "not limited"]])),
      h("div", null, h("h4", { class: "label" }, "Prices"), kv(prices))));
}

export async function mount(root) {
  const host = h("div", { class: "deployments" });
  root.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, "Models"),
    h("p", null, "Each model group and the deployments the router chooses among."))), host);
  try {
    const info = await request("GET", "/model/info");
    const groups = new Map();
    for (const entry of info.data || []) {
      if (!groups.has(entry.model_name)) groups.set(entry.model_name, []);
      groups.get(entry.model_name).push(entry);
    }
    if (!groups.size) host.append(h("p", { class: "empty card" }, "No models are configured."));
    for (const [name, entries] of groups) {
      const cooling = entries.filter((e) => e.model_info && e.model_info.health && e.model_info.health.status === "cooling_down").length;
      host.append(h("section", { class: "group", "aria-label": `Model group ${name}`, dataset: { group: name } },
        h("div", { class: "card-head" }, h("h2", null, name),
          h("span", { class: "small muted" }, `${entries.length} deployment${entries.length === 1 ? "" : "s"}${cooling ? ` · ${cooling} cooling down` : ""}`)),
        entries.map(deployment)));
    }
  } catch (err) {
    clear(host).append(h("div", { class: "error-box", role: "alert" }, err.message));
  }
}
