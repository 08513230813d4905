// Small DOM helpers: elements are built with h(), text is always set as text (never as HTML).

const SVG_NS = "http://www.w3.org/2000/svg";
let uid = 0;

/** A unique id for label/for and aria-describedby pairs. */
export function nextId(prefix = "f") {
  uid += 1;
  return `${prefix}-${uid}`;
}

function apply(el, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") el.setAttribute("class", value);
    else if (name === "text") el.textContent = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "value" || name === "checked" || name === "selected" || name === "disabled") el[name] = value;
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** h("button", {class: "button", onclick}, "Send") */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  apply(el, props);
  append(el, children);
  return el;
}

/** An SVG element with attributes. */
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== undefined && value !== null) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** A labelled control: <div class="field"><label>…</label>control<p class="hint">…</p></div>. */
export function field(labelText, control, { hint, loc, className } = {}) {
  const id = control.id || nextId();
  control.id = id;
  const box = h("div", { class: `field ${className || ""}`.trim(), dataset: loc !== undefined ? { loc } : undefined },
    h("label", { for: id }, labelText), control);
  if (hint) {
    const hintEl = h("p", { class: "hint", id: `${id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintEl.id);
    box.append(hintEl);
  }
  return box;
}

/** A select with [value, text] options. */
export function select(options, value, props = {}) {
  const el = h("select", props);
  for (const [optionValue, text] of options) {
    el.append(h("option", { value: optionValue, selected: optionValue === value }, text));
  }
  return el;
}

export function button(text, onclick, props = {}) {
  return h("button", { type: "button", class: "button", ...props, onclick }, text);
}

export function formatMoney(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return "–";
  const abs = Math.abs(value);
  if (abs === 0) return "$0";
  if (abs < 0.01) return `$${value.toPrecision(2)}`;
  return `$${value.toFixed(abs < 100 ? 4 : 2).replace(/\.?0+$/, "")}`;
}

export function formatPercent(p) {
  return `${(p * 100).toFixed(1)}%`;
}

export function formatNumber(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

export function formatTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString("en-GB", { dateStyle: "medium", timeStyle: "short" });
}

/** Copy text; falls back to selecting it when the clipboard is not available. */
export async function copyText(text, fallbackEl) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    if (fallbackEl) {
      const range = document.createRange();
      range.selectNodeContents(fallbackEl);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    return false;
  }
}
