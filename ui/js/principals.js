// What the keys page and the teams page share: a list with actions (edit, block, unblock, delete),
// a create form, an edit dialog, and a confirm dialog. The server checks every field; its sentence
// is shown at the field it names (error.param).

import { request } from "./api.js";
import { button, clear, copyText, field, formatMoney, h, select } from "./dom.js";

const PERIODS = [["", "No period (lifetime)"], ["1d", "Daily"], ["7d", "Weekly"], ["30d", "Every 30 days"], ["1mo", "Monthly"]];

/** The limit fields keys and teams share. */
export function limitFields(models) {
  return [
    { name: "models", label: "Models", type: "models", options: models, hint: "None ticked: every model." },
    { name: "max_budget", label: "Budget (USD)", type: "number", step: "any", hint: "Empty: no budget." },
    { name: "budget_duration", label: "Budget period", type: "select", options: PERIODS },
    { name: "rpm_limit", label: "Requests per minute", type: "number", step: "1" },
    { name: "tpm_limit", label: "Tokens per minute", type: "number", step: "1" },
    { name: "max_parallel_requests", label: "Requests at once", type: "number", step: "1" },
  ];
}

function control(spec, value) {
  if (spec.type === "models") {
    const box = h("fieldset", { class: "checks-box" }, h("legend", null, spec.label));
    const checks = h("div", { class: "checks" });
    const chosen = new Set(value || []);
    const names = [...new Set([...(spec.options || []), ...chosen])];
    if (!names.length) checks.append(h("span", { class: "muted small" }, "No models configured."));
    for (const name of names) {
      checks.append(h("label", { class: "check" }, h("input", { type: "checkbox", value: name, checked: chosen.has(name),
        name: spec.name }), name));
    }
    box.append(checks);
    if (spec.hint) box.append(h("p", { class: "hint" }, spec.hint));
    const wrap = h("div", { class: "field wide-field", dataset: { loc: spec.name } }, box);
    wrap.read = () => [...checks.querySelectorAll("input:checked")].map((c) => c.value);
    return wrap;
  }
  let input;
  if (spec.type === "select") {
    const unlisted = value !== null && value !== undefined && !spec.options.some(([v]) => v === value);
    const options = unlisted ? [...spec.options, [value, value]] : spec.options;
    input = select(options, value ?? "", { name: spec.name });
  } else {
    input = h("input", { type: spec.type === "number" ? "number" : "text", name: spec.name, step: spec.step,
      inputmode: spec.type === "number" ? "decimal" : undefined, placeholder: spec.placeholder, autocomplete: "off" });
    input.value = value === null || value === undefined ? "" : String(value);
  }
  const box = field(spec.label, input, { loc: spec.name, hint: spec.hint });
  box.read = () => {
    const raw = input.value.trim();
    if (raw === "") return null;
    return spec.type === "number" ? Number(raw) : raw;
  };
  return box;
}

/** A form over ``specs``: {el, read(all)} where read(false) leaves out empty fields (create). */
export function fieldsForm(specs, values = {}) {
  const boxes = specs.map((spec) => [spec, control(spec, values[spec.name])]);
  const el = h("div", { class: "grid wide" }, boxes.map(([, box]) => box));
  return {
    el,
    read(all) {
      const out = {};
      for (const [spec, box] of boxes) {
        const value = box.read();
        if (spec.type === "models") {
          if (all || value.length) out[spec.name] = value;
        } else if (all || value !== null) {
          out[spec.name] = value;
        }
      }
      return out;
    },
  };
}

/** Show the server's error: at its field when it names one, else in ``general``. */
export function showError(container, general, err) {
  for (const el of container.querySelectorAll(".server-error")) el.remove();
  for (const el of container.querySelectorAll(".invalid")) el.classList.remove("invalid");
  general.textContent = "";
  if (!err) return;
  const name = err.param ? String(err.param).split(/[.[]/)[0] : null;
  const target = name ? container.querySelector(`[data-loc="${CSS.escape(name)}"]`) : null;
  if (target) {
    target.classList.add("invalid");
    target.append(h("p", { class: "field-error server-error", role: "alert" }, err.message));
    const input = target.querySelector("input, select");
    if (input) input.focus();
  } else {
    general.textContent = err.message;
  }
}

/** A modal dialog holding a form; resolves when it closes. */
export function dialog(title, content, { submitText = "Save", danger = false, onSubmit }) {
  const error = h("p", { class: "form-error", role: "alert" });
  const submit = h("button", { type: "submit", class: `button ${danger ? "danger" : "primary"}` }, submitText);
  const close = button("Cancel", () => box.close(), { class: "button ghost" });
  const form = h("form", { method: "dialog" }, h("h2", null, title), content, error, h("div", { class: "buttons" }, submit, close));
  const box = h("dialog", { "aria-label": title }, form);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    try {
      await onSubmit();
      box.close();
    } catch (err) {
      showError(form, error, err);
    } finally {
      submit.disabled = false;
    }
  });
  box.addEventListener("close", () => box.remove());
  document.body.append(box);
  box.showModal();
  return box;
}

export function confirmDialog(title, text, submitText, onConfirm) {
  return dialog(title, h("p", null, text), { submitText, danger: true, onSubmit: onConfirm });
}

export function statusPill(record) {
  if (record.blocked) return h("span", { class: "pill off" }, "Blocked");
  if (record.expires && new Date(record.expires) < new Date()) return h("span", { class: "pill warn" }, "Expired");
  return h("span", { class: "pill" }, "Active");
}

export function budgetText(record) {
  if (record.max_budget === null || record.max_budget === undefined) return "No budget";
  const period = record.budget_duration ? ` / ${record.budget_duration}` : "";
  return `${formatMoney(record.max_budget)}${period}`;
}

export function limitsText(record) {
  const parts = [];
  if (record.rpm_limit !== null && record.rpm_limit !== undefined) parts.push(`${record.rpm_limit} rpm`);
  if (record.tpm_limit !== null && record.tpm_limit !== undefined) parts.push(`${record.tpm_limit} tpm`);
  if (record.max_parallel_requests !== null && record.max_parallel_requests !== undefined) parts.push(`${record.max_parallel_requests} at once`);
  return parts.length ? parts.join(" · ") : "No limits";
}

export const modelsText = (record) => (record.models && record.models.length ? record.models.join(", ") : "All models");

/** The model groups this gateway serves (for the models checkboxes). */
export async function modelNames() {
  try {
    const listing = await request("GET", "/v1/models");
    return (listing.data || []).map((m) => m.id);
  } catch {
    return [];
  }
}

/** A table of ``rows`` with ``columns`` [{title, cell(row), num}] and an actions cell. */
export function table(columns, rows, actions, emptyText) {
  if (!rows.length) return h("p", { class: "empty" }, emptyText);
  const head = h("tr", null, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.title)),
    actions ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")) : null);
  const body = rows.map((row) => h("tr", null,
    columns.map((c) => h("td", { class: c.num ? "num" : null, dataset: { label: c.title } }, c.cell(row))),
    actions ? h("td", { dataset: { label: "Actions" } }, h("div", { class: "actions" }, actions(row))) : null));
  return h("div", { class: "table-wrap stack" }, h("table", null, h("thead", null, head), h("tbody", null, body)));
}


/** A new key in ``host``, shown this once, with a copy button. */
export function shownOnce(host, toast, key, label, title, advice) {
  const code = h("code", { class: "new-key" }, key);
  const copy = button("Copy key", async () => {
    const copied = await copyText(key, code);
    toast(copied ? "Key copied." : "Key selected: press Ctrl+C to copy.");
  }, { class: "button primary small" });
  clear(host).append(h("section", { class: "secret", "aria-label": label }, h("h2", null, title),
    h("p", null, `This is the only time the key is shown: the gateway keeps only its hash. ${advice}`),
    h("div", { class: "secret-value" }, code, copy),
    button("Done, I have saved it", () => clear(host), { class: "button ghost small" })));
  copy.focus();
}

/** What each key or team spent, all time, from the spend log's daily roll-ups (the key's id -> USD). */
async function spendBy(group) {
  if (!group) return null;
  const today = new Date().toISOString().slice(0, 10);
  const rows = await request("GET", "/global/spend/report", { query: { group_by: group, start_date: "2000-01-01", end_date: today } })
    .catch(() => null); // refused or failing: the list shows each row's own spend
  if (!rows) return null;
  return new Map(rows.map((r) => [group === "key" ? r.api_key : r.team_id, r.spend]));
}

/**
 * A keys-or-teams page: ``cfg`` = {noun, title, intro, specs(record|null), create(payload) -> made,
 * created(made), load(page) -> {rows, page, pages}, columns, name(row), ref(row) (the body naming the
 * row), paths {update, block, unblock, delete}, deleteBody(row), deleteWarning, deleted(answer) -> text,
 * spendGroup ("key" or "team") and spendKey(row) (its id in the spend report), top (elements above the
 * create form)}. A row's spend is what the spend log holds for it (with spendGroup null: the row's own
 * spend, for a caller that may not read the spend report).
 * What the caller may do (roles.js): canCreate (the create form), canWrite(row) (edit, block, delete),
 * readOnly (no actions column at all), moreActions(row, reload) (buttons of the page's own); a path left
 * out of ``paths`` (block) has no button.
 */
export async function principalsPage(root, toast, cfg) {
  const listHost = h("div", { class: "list-host" });
  const pager = h("div", { class: "pager" });
  const Noun = cfg.noun[0].toUpperCase() + cfg.noun.slice(1);
  let page = 1;

  const canCreate = cfg.canCreate !== false;
  const canWrite = cfg.canWrite || (() => true);
  let createForm = fieldsForm(cfg.specs(null));
  const createError = h("p", { class: "form-error", role: "alert" });
  const createButton = h("button", { type: "submit", class: "button primary" }, `Create ${cfg.noun}`);
  const formEl = h("form", { class: "create-form", "aria-label": `New ${cfg.noun}` }, createForm.el, createError,
    h("div", { class: "buttons" }, createButton));
  const create = h("details", { class: "create" }, h("summary", { class: "button primary" }, `New ${cfg.noun}`), formEl);
  formEl.addEventListener("submit", async (event) => {
    event.preventDefault();
    createButton.disabled = true;
    try {
      const made = await cfg.create(createForm.read(false));
      showError(formEl, createError, null);
      create.open = false;
      const fresh = fieldsForm(cfg.specs(null));
      createForm.el.replaceWith(fresh.el);
      createForm = fresh;
      cfg.created(made);
      await load();
    } catch (err) {
      showError(formEl, createError, err);
    } finally {
      createButton.disabled = false;
    }
  });

  async function act(path, row, done) {
    try {
      await request("POST", path, { body: cfg.ref(row) });
      await load();
      toast(`${Noun} ${done}.`);
    } catch (err) {
      toast(err.message, "bad");
    }
  }

  function actions(row) {
    const name = cfg.name(row);
    const more = cfg.moreActions ? cfg.moreActions(row, load) : [];
    if (!canWrite(row)) return more;
    return [
      ...more,
      button("Edit", () => {
        const form = fieldsForm(cfg.specs(row), row);
        dialog(`Edit ${name}`, form.el, {
          onSubmit: async () => {
            await request("POST", cfg.paths.update, { body: { ...cfg.ref(row), ...form.read(true) } });
            await load();
            toast(`${Noun} saved.`);
          },
        });
      }, { class: "button small", "aria-label": `Edit ${name}` }),
      !cfg.paths.block ? null : row.blocked
        ? button("Unblock", () => act(cfg.paths.unblock, row, "unblocked"), { class: "button small", "aria-label": `Unblock ${name}` })
        : button("Block", () => act(cfg.paths.block, row, "blocked"), { class: "button small", "aria-label": `Block ${name}` }),
      button("Delete", () => confirmDialog(`Delete ${name}?`, cfg.deleteWarning, `Delete ${cfg.noun}`, async () => {
        const answer = await request("POST", cfg.paths.delete, { body: cfg.deleteBody(row) });
        await load();
        toast(cfg.deleted(answer));
      }), { class: "button small danger", "aria-label": `Delete ${name}` }),
    ];
  }

  // A toast says an action is done only once the list shows it: each action awaits its reload. Loads
  // can overlap (an action while the first load is out); only the newest one draws the list.
  let loads = 0;
  async function load() {
    const mine = ++loads;
    try {
      const [listing, spent] = await Promise.all([cfg.load(page), spendBy(cfg.spendGroup)]);
      if (mine !== loads) return;
      if (spent) for (const row of listing.rows) row.spend = spent.get(cfg.spendKey(row)) ?? 0;
      const empty = canCreate ? `No ${cfg.noun}s yet. Make one with “New ${cfg.noun}”.` : `No ${cfg.noun}s to show.`;
      clear(listHost).append(table(cfg.columns, listing.rows, cfg.readOnly ? null : actions, empty));
      clear(pager);
      if (listing.pages > 1) {
        pager.append(button("Previous", () => { page -= 1; load(); }, { class: "button small", disabled: page <= 1 }),
          `Page ${listing.page} of ${listing.pages}`,
          button("Next", () => { page += 1; load(); }, { class: "button small", disabled: page >= listing.pages }));
      }
    } catch (err) {
      if (mine === loads) clear(listHost).append(h("div", { class: "error-box", role: "alert" }, err.message));
    }
  }

  root.append(h("div", { class: "page-head" }, h("div", null, h("h1", null, cfg.title), h("p", null, cfg.intro))),
    ...(cfg.top || []), ...(canCreate ? [create] : []), h("section", { class: "card", "aria-label": cfg.title }, listHost, pager));
  await load();
}
