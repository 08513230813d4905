// What the two form editors share: text controls bound to a value, keys renamed in place, images
// read from files, and the small notes and messages of the editor itself.

import { button, h } from "./dom.js";

export const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
export const structured = (v) => v !== undefined && v !== null && typeof v !== "string";

/** Join a location's parts the way data-loc attributes spell them: questions.0.choices.1.value */
export const locKey = (...parts) => parts.join(".");

/** A text input or textarea bound to a string value; JSON content (objects, arrays) is shown read-only. */
export function textInput(value, onInput, { multiline = false, placeholder, rows } = {}) {
  const el = h(multiline ? "textarea" : "input", { placeholder, rows, spellcheck: multiline ? "true" : "false" });
  if (!multiline) el.type = "text";
  if (structured(value)) {
    el.value = JSON.stringify(value);
    el.disabled = true;
    el.title = "Structured content: edit it in the JSON view";
  } else {
    el.value = value ?? "";
    el.addEventListener("input", () => onInput(el.value));
  }
  return el;
}

export function structuredHint(value) {
  return structured(value) ? "Structured content: edit it in the JSON view." : undefined;
}

/** Rename a key of an object, keeping its place. */
export function renameKey(obj, from, to) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k === from ? to : k] = v;
  return out;
}

export function freshName(taken, base) {
  let n = 1;
  while (taken.includes(`${base}_${n}`)) n += 1;
  return `${base}_${n}`;
}

export function randomHex(bytes) {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export const FORMATS = { "image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp", "image/gif": "gif" };

export function note(text) {
  return h("p", { class: "json-note" }, text);
}

/** A small inline message under a field for what only the editor knows (a key used twice in one object). */
export function localError(box, message) {
  let el = box.querySelector(":scope > .local-error");
  if (!message) {
    if (el) el.remove();
    return;
  }
  if (!el) {
    el = h("p", { class: "field-error local-error", role: "alert" });
    box.append(el);
  }
  el.textContent = message;
}

export function optionsHead(title, addText, onAdd, columns) {
  const head = h("div", { class: "options-head" }, h("span", { class: "label" }, title),
    button(addText, onAdd, { class: "button ghost small" }));
  if (!columns) return head;
  return [head, h("div", { class: `option-row columns ${columns.kind}`, "aria-hidden": "true" },
    columns.names.map((name) => h("span", null, name)), h("span"))];
}

export function removeButton(what, onclick) {
  return button("Remove", onclick, { class: "button ghost small remove", "aria-label": `Remove ${what}` });
}

/** A list of objects edited row by row (choices, levels): ``row(item, j, rowLoc)`` draws one. */
export function listEditor(items, { listLoc, what, title, addText, add, columns, row }) {
  if (!Array.isArray(items)) return note(`${what} is not a list; edit it in the JSON view.`);
  const box = h("div", { class: "options", dataset: { loc: listLoc } });
  box.append(...[optionsHead(title, addText, add, items.length ? columns : null)].flat());
  items.forEach((item, j) => {
    box.append(isObject(item) ? row(item, j, locKey(listLoc, j))
      : note(`${what}[${j}] is not an object; edit it in the JSON view.`));
  });
  return box;
}
