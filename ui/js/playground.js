// The playground: a System One tab and an OpenAI Decisions tab (each is its endpoint), a model
// picker from /v1/models, a form and a JSON editor in step, validation by the server's own parser
// (POST /v1/<wire>/validate: nothing is called upstream, nothing billed), presets, copy as cURL
// or Python, and answer cards.

import { decisionsCards, errorCard, rawJson, requestCard, systemOneCards } from "./answers.js";
import { call, errorMessage, request } from "./api.js";
import { button, clear, copyText, field, h, select } from "./dom.js";
import { createForm, locKey } from "./forms.js";
import { emptyBody, presetBody, presetList } from "./presets.js";
import { kindsFor, snippet } from "./snippets.js";

const WIRES = {
  systemone: { title: "System One", path: "/v1/systemone", validate: "/v1/systemone/validate" },
  decisions: { title: "OpenAI Decisions", path: "/v1/decisions", validate: "/v1/decisions/validate" },
};
const S1_KINDS = new Set(["noul", "choice", "score", "box"]);
const VALIDATE_DELAY_MS = 300;

// Drafts live as long as the page: switching tabs or pages keeps each wire's request.
const drafts = {};
let lastWire = "systemone";

/** A server location -> the data-loc spelling of the form: OpenAI's param, or System One's loc list. */
export function locOfParam(param) {
  return param ? String(param).replace(/\[(\d+)\]/g, ".$1").replace(/^\./, "") : null;
}

export function locOfS1(loc) {
  if (!Array.isArray(loc)) return null;
  const parts = loc[0] === "body" ? loc.slice(1) : [...loc];
  if (parts.length > 2 && parts[0] === "questions" && S1_KINDS.has(parts[2])) parts.splice(2, 1);
  return parts.length ? locKey(...parts) : null;
}

/** The problems in an error response, each {loc, message}, in the caller's wire. */
export function problemsOf(wire, data, status) {
  if (wire === "decisions") {
    const err = data && data.error;
    return [{ loc: err ? locOfParam(err.param) : null, message: errorMessage(data, status) }];
  }
  const detail = data && data.detail;
  if (Array.isArray(detail)) return detail.map((d) => ({ loc: locOfS1(d.loc), message: String(d.msg) }));
  if (detail && typeof detail === "object") return [{ loc: locOfS1(detail.loc), message: errorMessage(data, status) }];
  return [{ loc: null, message: errorMessage(data, status) }];
}

function limitsText(limits) {
  if (!limits) return "";
  const range = (pair, what) => (Array.isArray(pair) ? `${pair[0] ?? 1}–${pair[1] ?? "any"} ${what}` : null);
  const parts = [
    limits.max_questions ? `up to ${limits.max_questions} questions` : "any number of questions",
    range(limits.options, "options"),
    range(limits.levels, "levels"),
    limits.max_images === 0 ? "no images" : limits.max_images ? `up to ${limits.max_images} images` : "images",
    limits.box ? "box questions" : "no box questions",
  ];
  if (limits.max_context_tokens) parts.push(`${limits.max_context_tokens.toLocaleString("en-US")} tokens of context`);
  return parts.filter(Boolean).join(" · ");
}

export async function mount(root, { toast }) {
  let models = [];
  try {
    const listing = await request("GET", "/v1/models");
    models = listing.data || [];
  } catch (err) {
    toast(err.message, "bad");
  }
  const firstModel = models.length ? models[0].id : "";
  for (const wire of Object.keys(WIRES)) {
    if (!drafts[wire]) drafts[wire] = { body: presetBody("triage", wire, firstModel), view: "form", snippet: null };
  }

  let wire = lastWire;
  let checkTimer = null;
  let checkTurn = 0;
  let controller = null;
  let lastProblems = [];
  const state = () => drafts[wire];

  // ---- layout ----
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Endpoint" });
  const modelSelect = h("select", { name: "model" });
  const modelLimits = h("p", { class: "model-limits", id: "model-limits" });
  modelSelect.setAttribute("aria-describedby", modelLimits.id);
  const modelField = field("Model", modelSelect);
  modelField.dataset.loc = "model";
  modelField.append(modelLimits);
  const viewSwitch = h("div", { class: "segmented", role: "group", "aria-label": "Editor" });
  const viewButtons = {};
  for (const [view, text] of [["form", "Form"], ["json", "JSON"]]) {
    viewButtons[view] = h("button", { type: "button", "aria-pressed": "false", onclick: () => setView(view) }, text);
    viewSwitch.append(viewButtons[view]);
  }
  const presets = h("div", { class: "presets" }, h("span", { class: "label" }, "Presets"));
  for (const preset of presetList) {
    presets.append(button(preset.title, () => loadBody(presetBody(preset.id, wire, modelSelect.value || firstModel)),
      { class: "button small", dataset: { preset: preset.id } }));
  }
  presets.append(button("Clear", () => loadBody(emptyBody(wire, modelSelect.value || firstModel)), { class: "button ghost small" }));

  const formHost = h("div", { class: "form-host" });
  const jsonArea = h("textarea", { class: "code", spellcheck: "false", autocomplete: "off", wrap: "off" });
  const jsonNote = h("p", { class: "json-note", role: "status" });
  jsonNote.hidden = true;
  const jsonBox = h("div", { class: "json-host" }, field("Request JSON", jsonArea), jsonNote);
  const status = h("div", { class: "status-line", role: "status", "aria-live": "polite" },
    h("span", { class: "status-dot", "aria-hidden": "true" }), h("span", { class: "status-text" }, ""));
  const issues = h("ul", { class: "issues", "aria-label": "Problems the server found" });
  const send = h("button", { type: "button", class: "button primary", id: "send" }, "Send request");
  const cancel = button("Cancel", () => controller && controller.abort(), { class: "button ghost" });
  cancel.hidden = true;
  const panel = h("div", { role: "tabpanel", id: "wire-panel" },
    h("div", { class: "editor-top" }, modelField, viewSwitch),
    presets,
    h("div", { class: "send-bar" }, status, issues,
      h("div", { class: "send-row" }, send, cancel, h("span", { class: "small muted", id: "send-hint" },
        "Checking calls no model; sending does."))),
    formHost, jsonBox);
  const editor = h("section", { class: "card editor", "aria-labelledby": "editor-title" },
    h("h2", { id: "editor-title", class: "visually-hidden" }, "Request"), tabs, panel);

  const answers = h("section", { class: "answers", "aria-label": "Answers", "aria-live": "polite" });
  const snippetKinds = h("div", { class: "segmented", role: "group", "aria-label": "Copy as" });
  const snippetPre = h("pre", { class: "snippet-code", tabindex: "0", "aria-label": "Code for this request" });
  const copy = h("button", { type: "button", class: "button small", id: "copy-snippet" }, "Copy");
  const snippetNote = h("p", { class: "note" }, "The key is read from DECISIONS_API_KEY; set it to your key first.");
  const code = h("section", { class: "card snippet", "aria-labelledby": "code-title" },
    h("div", { class: "card-head" }, h("h2", { id: "code-title" }, "Copy as"), copy), snippetKinds, snippetPre, snippetNote);

  root.append(
    h("div", { class: "page-head" }, h("div", null, h("h1", null, "Playground"),
      h("p", null, "Try questions on either wire before you put them in code."))),
    h("div", { class: "playground" }, editor, h("div", { class: "side" }, answers, code)));

  // ---- tabs (each tab is an endpoint) ----
  const tabButtons = {};
  for (const [name, info] of Object.entries(WIRES)) {
    const tab = h("button", { type: "button", role: "tab", class: "tab", id: `tab-${name}`, "aria-selected": "false",
      "aria-controls": "wire-panel", dataset: { wire: name } }, info.title, h("span", { class: "tab-path" }, `POST ${info.path}`));
    tab.addEventListener("click", () => setWire(name));
    tab.addEventListener("keydown", (event) => {
      if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
      const other = name === "systemone" ? "decisions" : "systemone";
      setWire(other);
      tabButtons[other].focus();
    });
    tabButtons[name] = tab;
    tabs.append(tab);
  }

  // ---- model picker ----
  function renderModels() {
    clear(modelSelect);
    const current = state().body && typeof state().body === "object" ? state().body.model : undefined;
    const ids = models.map((m) => m.id);
    for (const model of models) modelSelect.append(h("option", { value: model.id }, model.id));
    if (current !== undefined && current !== null && !ids.includes(current)) {
      modelSelect.append(h("option", { value: String(current) }, `${current} (not configured)`));
    }
    if (!models.length && current === undefined) modelSelect.append(h("option", { value: "" }, "No models configured"));
    modelSelect.value = current === undefined || current === null ? (ids[0] || "") : String(current);
    const chosen = models.find((m) => m.id === modelSelect.value);
    modelLimits.textContent = chosen ? `${chosen.owned_by}: ${limitsText(chosen.limits)}` : "";
  }
  modelSelect.addEventListener("change", () => {
    if (state().body && typeof state().body === "object") state().body.model = modelSelect.value;
    renderModels();
    changed({ from: "form" });
  });

  // ---- the editors ----
  let form = null;
  function renderEditors() {
    clear(formHost);
    form = createForm(wire, () => state().body, () => changed({ from: "form" }));
    formHost.append(form.el);
    form.render();
    jsonArea.value = state().text ?? JSON.stringify(state().body, null, 2);
    jsonNote.hidden = true;
  }

  function setView(view) {
    state().view = view;
    for (const [name, btn] of Object.entries(viewButtons)) btn.setAttribute("aria-pressed", String(name === view));
    formHost.hidden = view !== "form";
    jsonBox.hidden = view !== "json";
    if (view === "form" && form) {
      form.render();
      showProblems(lastProblems);
    }
  }

  jsonArea.addEventListener("input", () => {
    state().text = jsonArea.value;
    try {
      state().body = JSON.parse(jsonArea.value);
      jsonNote.hidden = true;
      renderModels();
      form.render();
    } catch (err) {
      jsonNote.textContent = `The JSON does not parse yet (${err.message}); the form shows the last version that did.`;
      jsonNote.hidden = false;
    }
    changed({ from: "json" });
  });
  jsonArea.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
      // Two spaces, as JSON is indented here; Escape first lets Tab leave the editor.
      if (jsonArea.dataset.escaped === "1") return;
      event.preventDefault();
      jsonArea.setRangeText("  ", jsonArea.selectionStart, jsonArea.selectionEnd, "end");
      jsonArea.dispatchEvent(new Event("input"));
    } else if (event.key === "Escape") {
      jsonArea.dataset.escaped = "1";
    }
  });
  jsonArea.addEventListener("blur", () => { delete jsonArea.dataset.escaped; });

  function changed({ from }) {
    if (from === "form") {
      state().text = JSON.stringify(state().body, null, 2);
      jsonArea.value = state().text;
    }
    renderSnippet();
    scheduleCheck();
  }

  function loadBody(body) {
    state().body = body;
    state().text = JSON.stringify(body, null, 2);
    renderModels();
    renderEditors();
    changed({ from: "json" });
  }

  // ---- validation by the server ----
  function setStatus(kind, text) {
    status.className = `status-line ${kind}`;
    status.querySelector(".status-text").textContent = text;
  }

  function scheduleCheck() {
    clearTimeout(checkTimer);
    setStatus("", "Checking with the server…");
    checkTimer = setTimeout(check, VALIDATE_DELAY_MS);
  }

  async function check() {
    const turn = ++checkTurn;
    const checking = wire;
    let res;
    try {
      res = await call("POST", WIRES[checking].validate, { rawBody: state().text ?? JSON.stringify(state().body) });
    } catch (err) {
      if (turn === checkTurn) setStatus("bad", `The gateway cannot be reached: ${err.message}`);
      return;
    }
    if (turn !== checkTurn || checking !== wire) return;
    if (res.ok) {
      lastProblems = [];
      showProblems([]);
      const n = res.data && res.data.questions;
      setStatus("good", `Ready to send: the server accepts this request${n ? ` (${n} question${n === 1 ? "" : "s"})` : ""}.`);
      return;
    }
    lastProblems = problemsOf(checking, res.data, res.status);
    showProblems(lastProblems);
    const n = lastProblems.length;
    setStatus("bad", `${n} ${n === 1 ? "issue" : "issues"} to fix (HTTP ${res.status}).`);
  }

  /** Each problem under the field it names (the closest one the form shows), and in the list. */
  function showProblems(problems) {
    for (const el of root.querySelectorAll(".server-error")) el.remove();
    for (const el of root.querySelectorAll(".field.invalid, [data-loc].invalid")) el.classList.remove("invalid");
    for (const el of root.querySelectorAll("[aria-invalid]")) {
      el.removeAttribute("aria-invalid");
      const ids = (el.getAttribute("aria-describedby") || "").split(" ").filter((id) => !id.startsWith("err-"));
      if (ids.length) el.setAttribute("aria-describedby", ids.join(" ")); else el.removeAttribute("aria-describedby");
    }
    clear(issues);
    problems.forEach((problem, i) => {
      const target = placeFor(problem.loc);
      const id = `err-${i}`;
      if (target) {
        target.classList.add("invalid");
        const message = h("p", { class: "field-error server-error", id, dataset: { loc: problem.loc } }, problem.message);
        target.append(message);
        const control = target.querySelector("input, textarea, select");
        if (control) {
          control.setAttribute("aria-invalid", "true");
          const described = control.getAttribute("aria-describedby");
          control.setAttribute("aria-describedby", described ? `${described} ${id}` : id);
        }
      }
      const item = target
        ? h("button", { type: "button", onclick: () => focusProblem(problem.loc) }, problem.message)
        : h("span", { class: "field-error" }, problem.message);
      issues.append(h("li", null, item));
    });
  }

  function placeFor(loc) {
    if (!loc) return null;
    if (loc === "model") return modelField;
    const parts = loc.split(".");
    while (parts.length) {
      const key = parts.join(".");
      const found = formHost.querySelector(`[data-loc="${CSS.escape(key)}"]`);
      if (found && !formHost.hidden) return found;
      parts.pop();
    }
    return null;
  }

  function focusProblem(loc) {
    if (state().view !== "form") setView("form");
    const target = placeFor(loc);
    const control = target && target.querySelector("input:not([disabled]), textarea:not([disabled]), select");
    if (control) control.focus();
  }

  // ---- snippets ----
  function renderSnippet() {
    const kinds = kindsFor(wire);
    if (!kinds.some(([k]) => k === state().snippet)) state().snippet = kinds[0][0];
    clear(snippetKinds);
    for (const [kind, label] of kinds) {
      snippetKinds.append(h("button", { type: "button", "aria-pressed": String(kind === state().snippet), dataset: { kind },
        onclick: () => { state().snippet = kind; renderSnippet(); } }, label));
    }
    let body;
    try {
      body = JSON.parse(state().text ?? JSON.stringify(state().body));
    } catch {
      snippetPre.textContent = "Fix the JSON first.";
      return;
    }
    snippetPre.textContent = snippet(state().snippet, window.location.origin, WIRES[wire].path, body);
  }
  copy.addEventListener("click", async () => {
    const copied = await copyText(snippetPre.textContent, snippetPre);
    toast(copied ? "Copied." : "Selected: press Ctrl+C to copy.");
  });

  // ---- sending ----
  function showEmpty() {
    clear(answers).append(h("section", { class: "card answers-empty" },
      h("span", { class: "big", "aria-hidden": "true" }, "◔"),
      h("p", null, "Answers appear here, one card per question, with the probability of every option."),
      h("p", { class: "small" }, "Pick a preset or write your own questions, then send.")));
  }

  send.addEventListener("click", async () => {
    const sentWire = wire;
    let body = null;
    try { body = JSON.parse(state().text ?? JSON.stringify(state().body)); } catch { /* the server will say */ }
    controller = new AbortController();
    send.disabled = true;
    cancel.hidden = false;
    clear(answers).append(h("section", { class: "card answers-empty" }, h("p", null, "Asking the model…")));
    let res;
    try {
      res = await call("POST", WIRES[sentWire].path, { rawBody: state().text ?? JSON.stringify(state().body),
        signal: controller.signal });
    } catch (err) {
      clear(answers).append(h("section", { class: "card" }, h("div", { class: "error-box", role: "alert" },
        err.name === "AbortError" ? "Cancelled." : `The gateway cannot be reached: ${err.message}`)));
      return;
    } finally {
      send.disabled = false;
      cancel.hidden = true;
      controller = null;
    }
    clear(answers);
    if (!res.ok) {
      answers.append(errorCard(res), rawJson(res));
      if (window.matchMedia("(max-width: 960px)").matches) answers.scrollIntoView({ block: "start" });
      if (sentWire === wire) {
        lastProblems = problemsOf(sentWire, res.data, res.status);
        showProblems(lastProblems);
      }
      return;
    }
    const cards = sentWire === "systemone" ? systemOneCards(body, res.data) : decisionsCards(body, res.data);
    answers.append(requestCard(res, res.data && res.data.usage), ...cards, rawJson(res));
    if (window.matchMedia("(max-width: 960px)").matches) answers.scrollIntoView({ block: "start" });  // below the form
  });

  // ---- switching wires ----
  function setWire(name) {
    wire = name;
    lastWire = name;
    lastProblems = [];
    for (const [n, tab] of Object.entries(tabButtons)) {
      tab.setAttribute("aria-selected", String(n === name));
      tab.tabIndex = n === name ? 0 : -1;
    }
    panel.setAttribute("aria-labelledby", `tab-${name}`);
    renderModels();
    renderEditors();
    setView(state().view);
    showEmpty();
    renderSnippet();
    scheduleCheck();
  }

  setWire(wire);
  return () => {
    clearTimeout(checkTimer);
    if (controller) controller.abort();
  };
}
