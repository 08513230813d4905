// The playground's form editors, one per wire. Each edits the request body object in place (the
// JSON editor shows the same object), so form and JSON stay in step both ways. The form knows the
// shapes of the wires, not their rules: the server checks every request (see playground.js).

import { button, clear, field, h, select } from "./dom.js";

const S1_TYPES = [["noul", "Yes / no (noul)"], ["choice", "Choice"], ["score", "Score"], ["box", "Box"]];
const OPENAI_TYPES = [["predicate", "Predicate"], ["choice", "Choice"], ["score", "Score"]];
const CHOICE_VALUE_TYPES = [["text", "Text"], ["true", "true"], ["false", "false"]];
const DETAILS = [["auto", "auto"], ["low", "low"], ["high", "high"], ["original", "original"]];

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const structured = (v) => v !== undefined && v !== null && typeof v !== "string";

/** Join a location's parts the way data-loc attributes spell them: questions.0.choices.1.value */
export const locKey = (...parts) => parts.join(".");

/** A text input or textarea bound to a string value; JSON content (objects, arrays) is shown read-only. */
function textInput(value, onInput, { multiline = false, placeholder, rows } = {}) {
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

function structuredHint(value) {
  return structured(value) ? "Structured content: edit it in the JSON view." : undefined;
}

/** Rename a key of an object, keeping its place. */
function renameKey(obj, from, to) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) out[k === from ? to : k] = v;
  return out;
}

function freshName(taken, base) {
  let n = 1;
  while (taken.includes(`${base}_${n}`)) n += 1;
  return `${base}_${n}`;
}

function randomHex(bytes) {
  const data = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(data, (b) => b.toString(16).padStart(2, "0")).join("");
}

function readFile(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

const FORMATS = { "image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp", "image/gif": "gif" };

function note(text) {
  return h("p", { class: "json-note" }, text);
}

/** A small inline message under a field for what only the editor knows (a key used twice in one object). */
function localError(box, message) {
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

function optionsHead(title, addText, onAdd, columns) {
  const head = h("div", { class: "options-head" }, h("span", { class: "label" }, title),
    button(addText, onAdd, { class: "button ghost small" }));
  if (!columns) return head;
  return [head, h("div", { class: `option-row columns ${columns.kind}`, "aria-hidden": "true" },
    columns.names.map((name) => h("span", null, name)), h("span"))];
}

function removeButton(what, onclick) {
  return button("Remove", onclick, { class: "button ghost small remove", "aria-label": `Remove ${what}` });
}

/**
 * The form of one wire over ``getBody()``. ``changed()`` after any edit (the JSON view, validation
 * and code snippets follow). Returns {el, render, focus(loc)}.
 */
export function createForm(wire, getBody, changed) {
  const el = h("div", { class: "form" });
  let focusAfter = null;

  const structural = (loc) => {
    focusAfter = loc;
    render();
    changed();
  };

  function render() {
    clear(el);
    const body = getBody();
    if (!isObject(body)) {
      el.append(note("The request is not a JSON object; edit it in the JSON view."));
      return;
    }
    if (wire === "systemone") systemOne(el, body, changed, structural);
    else decisions(el, body, changed, structural);
    if (focusAfter !== null) {
      const target = el.querySelector(`[data-loc="${CSS.escape(focusAfter)}"] input, [data-loc="${CSS.escape(focusAfter)}"] textarea`);
      if (target) target.focus();
      focusAfter = null;
    }
  }

  return { el, render };
}

// ---- System One ----------------------------------------------------------------------------------

function systemOne(el, body, changed, structural) {
  const stateIsJson = structured(body.state);
  const state = h("textarea", { rows: 5, spellcheck: "true", class: stateIsJson ? "code" : "" });
  state.value = stateIsJson ? JSON.stringify(body.state, null, 2) : body.state ?? "";
  if (stateIsJson) state.style.minHeight = "8rem";
  const stateBox = field("State: what the questions are about", state, {
    loc: "state", hint: stateIsJson ? "JSON (an object or an array)." : "Text, or switch to JSON below." });
  const asJson = h("input", { type: "checkbox", checked: stateIsJson });
  const asJsonLabel = h("label", { class: "check" }, asJson, "State is JSON");
  state.addEventListener("input", () => {
    if (!asJson.checked) {
      body.state = state.value;
      changed();
      return;
    }
    try {
      body.state = JSON.parse(state.value);
      localError(stateBox, "");
      changed();
    } catch (err) {
      localError(stateBox, `Not JSON yet: ${err.message}`);
    }
  });
  asJson.addEventListener("change", () => {
    if (asJson.checked) {
      try { body.state = JSON.parse(state.value); } catch { body.state = { text: state.value }; }
    } else {
      body.state = stateIsJson ? JSON.stringify(body.state) : state.value;
    }
    structural("state");
  });
  el.append(stateBox, asJsonLabel, systemOneAssets(body, changed, structural));

  const list = h("div", { class: "questions", dataset: { loc: "questions" } });
  el.append(h("h3", { class: "section-title" }, "Questions"), list);
  if (!isObject(body.questions)) {
    list.append(note("questions is not an object of id → question; edit it in the JSON view."));
    return;
  }
  for (const [id, question] of Object.entries(body.questions)) {
    list.append(systemOneQuestion(body, id, question, changed, structural));
  }
  const kind = select(S1_TYPES, "choice", { "aria-label": "Type of the new question" });
  el.append(h("div", { class: "add-question" }, kind, button("Add question", () => {
    const id = freshName(Object.keys(body.questions), "question");
    body.questions[id] = newS1Question(kind.value);
    structural(locKey("questions", id));
  }, { class: "button small" })));
}

function newS1Question(type) {
  if (type === "noul") return { type, instructions: "", criteria: { true: "", false: "" } };
  if (type === "choice") return { type, instructions: "", criteria: { option_1: null, option_2: null } };
  if (type === "score") return { type, instructions: "", criteria: ["Low", "Medium", "High"] };
  return { type, instructions: "" };
}

function retypeS1(question, type) {
  const next = newS1Question(type);
  next.instructions = question.instructions ?? "";
  if (type === "score" && isObject(question.criteria)) next.criteria = Object.keys(question.criteria);
  if (type === "choice" && Array.isArray(question.criteria)) {
    next.criteria = Object.fromEntries(question.criteria.map((c, i) => [typeof c === "string" && c ? c : `option_${i + 1}`, null]));
  }
  return next;
}

function systemOneQuestion(body, id, question, changed, structural) {
  const loc = locKey("questions", id);
  const box = h("div", { class: "question", dataset: { loc } });
  if (!isObject(question)) {
    box.append(note(`Question "${id}" is not an object; edit it in the JSON view.`));
    return box;
  }
  let currentId = id;
  const idInput = textInput(id, (value) => {
    if (value !== currentId && Object.hasOwn(body.questions, value)) {
      localError(idBox, `Another question already has the id "${value}".`);
      return;
    }
    localError(idBox, "");
    body.questions = renameKey(body.questions, currentId, value);
    currentId = value;
    changed();
  });
  const idBox = field("Question id", idInput, { loc: locKey(loc, "id") });
  const type = select(S1_TYPES.some(([t]) => t === question.type) ? S1_TYPES : [...S1_TYPES, [String(question.type), String(question.type)]],
    question.type);
  type.addEventListener("change", () => {
    body.questions[currentId] = retypeS1(question, type.value);
    structural(locKey("questions", currentId));
  });
  box.append(h("div", { class: "question-head" }, idBox, field("Type", type, { loc: locKey(loc, "type") }),
    removeButton(`question ${id}`, () => {
      delete body.questions[currentId];
      structural("questions");
    })));
  const instructions = textInput(question.instructions, (value) => {
    const q = body.questions[currentId];
    if (value) q.instructions = value; else delete q.instructions;
    changed();
  }, { multiline: true, rows: 2 });
  box.append(field("Instructions", instructions, { loc: locKey(loc, "instructions"), hint: structuredHint(question.instructions) }));
  const q = () => body.questions[currentId];
  if (question.type === "noul") box.append(noulCriteria(q, loc, changed));
  else if (question.type === "choice") box.append(s1Choices(q, loc, changed, structural));
  else if (question.type === "score") box.append(s1Levels(q, loc, changed, structural));
  return box;
}

function noulCriteria(q, loc, changed) {
  const criteria = q().criteria;
  const wrap = h("div", { class: "row", dataset: { loc: locKey(loc, "criteria") } });
  if (criteria !== undefined && !isObject(criteria)) return note("criteria is not an object; edit it in the JSON view.");
  for (const [key, labelText] of [["true", "Yes means"], ["false", "No means"]]) {
    const value = criteria ? criteria[key] : undefined;
    const input = textInput(value, (text) => {
      const question = q();
      question.criteria = isObject(question.criteria) ? question.criteria : {};
      if (text) question.criteria[key] = text; else delete question.criteria[key];
      if (!Object.keys(question.criteria).length) delete question.criteria;
      changed();
    }, { placeholder: key === "true" ? "e.g. the report describes a defect" : "e.g. a feature request" });
    wrap.append(field(labelText, input, { loc: locKey(loc, "criteria", key), hint: structuredHint(value) }));
  }
  return wrap;
}

function s1Choices(q, loc, changed, structural) {
  const criteria = q().criteria;
  const criteriaLoc = locKey(loc, "criteria");
  const box = h("div", { class: "options", dataset: { loc: criteriaLoc } });
  if (!isObject(criteria)) return note("criteria is not an object of label → description; edit it in the JSON view.");
  box.append(...[optionsHead("Choices", "Add choice", () => {
    const label = freshName(Object.keys(q().criteria), "option");
    q().criteria[label] = null;
    structural(locKey(criteriaLoc, label));
  }, Object.keys(criteria).length ? { kind: "", names: ["Label", "Description (optional)"] } : null)].flat());
  Object.keys(criteria).forEach((label, n) => {
    let current = label;
    const labelInput = textInput(label, (value) => {
      const question = q();
      if (value !== current && Object.hasOwn(question.criteria, value)) {
        localError(labelBox, `"${value}" is already a choice.`);
        return;
      }
      localError(labelBox, "");
      question.criteria = renameKey(question.criteria, current, value);
      current = value;
      changed();
    });
    const labelBox = field(`Choice ${n + 1} label`, labelInput, { loc: locKey(criteriaLoc, label), className: "compact" });
    const description = textInput(criteria[label], (value) => {
      q().criteria[current] = value ? value : null;
      changed();
    }, { placeholder: "optional" });
    box.append(h("div", { class: "option-row" }, labelBox,
      field(`Choice ${n + 1} description`, description, { loc: locKey(criteriaLoc, label, "description"), className: "compact" }),
      removeButton(`choice ${label}`, () => {
        delete q().criteria[current];
        structural(criteriaLoc);
      })));
  });
  return box;
}

function s1Levels(q, loc, changed, structural) {
  const criteria = q().criteria;
  const criteriaLoc = locKey(loc, "criteria");
  const box = h("div", { class: "options", dataset: { loc: criteriaLoc } });
  if (!Array.isArray(criteria)) return note("criteria is not a list of levels; edit it in the JSON view.");
  box.append(optionsHead("Levels, lowest first", "Add level", () => {
    q().criteria.push("");
    structural(locKey(criteriaLoc, q().criteria.length - 1));
  }));
  criteria.forEach((level, i) => {
    const input = textInput(level, (value) => {
      q().criteria[i] = value;
      changed();
    }, { placeholder: i === 0 ? "the lowest level" : "" });
    box.append(h("div", { class: "option-row level bare" }, h("span", { class: "level-index", "aria-hidden": "true" }, String(i)),
      field(`Level ${i}`, input, { loc: locKey(criteriaLoc, i), hint: structuredHint(level), className: "compact" }),
      removeButton(`level ${i}`, () => {
        q().criteria.splice(i, 1);
        structural(criteriaLoc);
      })));
  });
  return box;
}

function systemOneAssets(body, changed, structural) {
  const box = h("div", { class: "field", dataset: { loc: "assets" } });
  const input = h("input", { type: "file", accept: "image/png,image/jpeg,image/webp,image/gif" });
  box.append(field("Image (sent as an asset; its reference goes into the state)", input));
  const items = h("div", { class: "image-box" });
  if (isObject(body.assets)) {
    for (const [ref, asset] of Object.entries(body.assets)) {
      const src = isObject(asset) && asset.data_base64 ? `data:image/${asset.format || "png"};base64,${asset.data_base64}` : null;
      items.append(h("div", { class: "image-item", dataset: { loc: locKey("assets", ref) } },
        src ? h("img", { class: "thumb", src, alt: `Asset ${ref}` }) : null,
        h("code", null, ref),
        removeButton(`image ${ref}`, () => {
          delete body.assets[ref];
          if (!Object.keys(body.assets).length) delete body.assets;
          if (typeof body.state === "string") body.state = body.state.replaceAll(ref, "").trim();
          structural("assets");
        })));
    }
  }
  box.append(items);
  input.addEventListener("change", async () => {
    const file = input.files && input.files[0];
    if (!file) return;
    const url = await readFile(file);
    const ref = `<image:${randomHex(16)}>`;
    const format = FORMATS[file.type] || (file.name.split(".").pop() || "png").toLowerCase();
    body.assets = isObject(body.assets) ? body.assets : {};
    body.assets[ref] = { type: "image", format, data_base64: url.slice(url.indexOf(",") + 1) };
    if (typeof body.state === "string") body.state = body.state ? `${body.state}\n${ref}` : ref;
    else if (isObject(body.state)) body.state.image = ref;
    else body.state = ref;
    structural("assets");
  });
  return box;
}

// ---- OpenAI Decisions ----------------------------------------------------------------------------

/** The user message the form edits: {text part, image parts}, or null when the input has another shape. */
function editableInput(input) {
  if (typeof input === "string" || input === undefined) return { text: input ?? "", images: [] };
  if (!Array.isArray(input) || input.length !== 1 || !isObject(input[0]) || input[0].role !== "user") return null;
  const content = input[0].content;
  if (typeof content === "string") return { text: content, images: [] };
  if (!Array.isArray(content)) return null;
  const texts = content.filter((p) => isObject(p) && p.type === "input_text");
  const images = content.filter((p) => isObject(p) && p.type === "input_image");
  if (texts.length > 1 || texts.length + images.length !== content.length) return null;
  return { text: texts.length ? texts[0].text : "", images };
}

function writeInput(body, text, images) {
  if (!images.length) {
    body.input = text;
    return;
  }
  body.input = [{ role: "user", content: [{ type: "input_text", text }, ...images] }];
}

function decisions(el, body, changed, structural) {
  const editable = editableInput(body.input);
  if (!editable) {
    el.append(note("input holds messages the form does not edit (several messages, roles or JSON parts); edit it in the JSON view."));
  } else {
    const input = textInput(editable.text, (value) => {
      const now = editableInput(body.input);
      writeInput(body, value, now ? now.images : []);
      changed();
    }, { multiline: true, rows: 5 });
    el.append(field("Input: what the questions are about", input, { loc: "input" }), openAiImages(body, editable, structural));
  }
  const list = h("div", { class: "questions", dataset: { loc: "questions" } });
  el.append(h("h3", { class: "section-title" }, "Questions"), list);
  if (!Array.isArray(body.questions)) {
    list.append(note("questions is not a list; edit it in the JSON view."));
    return;
  }
  body.questions.forEach((question, i) => list.append(openAiQuestion(body, i, question, changed, structural)));
  const kind = select(OPENAI_TYPES, "choice", { "aria-label": "Type of the new question" });
  el.append(h("div", { class: "add-question" }, kind, button("Add question", () => {
    body.questions.push(newOpenAiQuestion(kind.value, freshName(body.questions.map((q) => q && q.name), "question")));
    structural(locKey("questions", body.questions.length - 1));
  }, { class: "button small" })));

  const safety = textInput(body.safety_identifier, (value) => {
    if (value) body.safety_identifier = value; else delete body.safety_identifier;
    changed();
  }, { placeholder: "optional: an opaque id of your end user" });
  el.append(h("details", { class: "more" }, h("summary", null, "More options"),
    field("safety_identifier", safety, { loc: "safety_identifier" })));
}

function newOpenAiQuestion(type, name) {
  if (type === "choice") return { type, name, instructions: "", choices: [{ value: "option_1" }, { value: "option_2" }] };
  if (type === "score") return { type, name, instructions: "", levels: [{ label: "Low" }, { label: "Medium" }, { label: "High" }] };
  return { type, name, instructions: "" };
}

function retypeOpenAi(question, type) {
  const next = newOpenAiQuestion(type, question.name);
  if (question.name === undefined) delete next.name;
  next.instructions = question.instructions ?? "";
  if (type === "score" && Array.isArray(question.choices)) next.levels = question.choices.map((c) => ({ label: String(c.value) }));
  if (type === "choice" && Array.isArray(question.levels)) next.choices = question.levels.map((l) => ({ value: String(l.label) }));
  return next;
}

function openAiImages(body, editable, structural) {
  const box = h("div", { class: "field", dataset: { loc: "images" } });
  const file = h("input", { type: "file", accept: "image/png,image/jpeg,image/webp,image/gif" });
  const url = h("input", { type: "url", placeholder: "https://… or data:image/…", spellcheck: "false" });
  const add = (imageUrl) => {
    const now = editableInput(body.input) || editable;
    writeInput(body, now.text, [...now.images, { type: "input_image", image_url: imageUrl, detail: "auto" }]);
    structural("images");
  };
  box.append(h("div", { class: "row" },
    field("Image file", file),
    field("or an image URL", url),
    button("Add image", () => { if (url.value.trim()) add(url.value.trim()); }, { class: "button small" })));
  file.addEventListener("change", async () => {
    if (file.files && file.files[0]) add(await readFile(file.files[0]));
  });
  const items = h("div", { class: "image-box" });
  editable.images.forEach((image, j) => {
    const partLoc = locKey("input", 0, "content", j + 1);
    const detail = select(DETAILS, image.detail || "auto", { "aria-label": `Detail of image ${j + 1}` });
    detail.addEventListener("change", () => {
      image.detail = detail.value;
      structural(partLoc);
    });
    const shown = typeof image.image_url === "string" && /^(data:image\/|https?:)/.test(image.image_url);
    items.append(h("div", { class: "image-item", dataset: { loc: partLoc } },
      shown && image.image_url.startsWith("data:") ? h("img", { class: "thumb", src: image.image_url, alt: `Image ${j + 1}` }) : null,
      h("code", null, shown && !image.image_url.startsWith("data:") ? image.image_url : `image ${j + 1}`),
      detail,
      removeButton(`image ${j + 1}`, () => {
        const now = editableInput(body.input) || editable;
        writeInput(body, now.text, now.images.filter((_, k) => k !== j));
        structural("images");
      })));
  });
  box.append(items);
  return box;
}

function openAiQuestion(body, i, question, changed, structural) {
  const loc = locKey("questions", i);
  const box = h("div", { class: "question", dataset: { loc } });
  if (!isObject(question)) {
    box.append(note(`Question ${i} is not an object; edit it in the JSON view.`));
    return box;
  }
  const name = textInput(question.name, (value) => {
    if (value) question.name = value; else delete question.name;
    changed();
  }, { placeholder: "optional" });
  const known = OPENAI_TYPES.some(([t]) => t === question.type);
  const type = select(known ? OPENAI_TYPES : [...OPENAI_TYPES, [String(question.type), String(question.type)]], question.type);
  type.addEventListener("change", () => {
    body.questions[i] = retypeOpenAi(question, type.value);
    structural(loc);
  });
  box.append(h("div", { class: "question-head" }, field("Name", name, { loc: locKey(loc, "name") }),
    field("Type", type, { loc: locKey(loc, "type") }),
    removeButton(`question ${i + 1}`, () => {
      body.questions.splice(i, 1);
      structural("questions");
    })));
  const instructions = textInput(question.instructions, (value) => {
    question.instructions = value;
    changed();
  }, { multiline: true, rows: 2 });
  box.append(field("Instructions", instructions, { loc: locKey(loc, "instructions"), hint: structuredHint(question.instructions) }));
  if (question.type === "choice") box.append(openAiChoices(question, loc, changed, structural));
  else if (question.type === "score") box.append(openAiLevels(question, loc, changed, structural));
  return box;
}

function openAiChoices(question, loc, changed, structural) {
  const choicesLoc = locKey(loc, "choices");
  const box = h("div", { class: "options", dataset: { loc: choicesLoc } });
  if (!Array.isArray(question.choices)) return note("choices is not a list; edit it in the JSON view.");
  box.append(...[optionsHead("Choices", "Add choice", () => {
    question.choices.push({ value: freshName(question.choices.map((c) => c && c.value), "option") });
    structural(locKey(choicesLoc, question.choices.length - 1));
  }, question.choices.length ? { kind: "typed", names: ["Type", "Value", "Description (optional)"] } : null)].flat());
  question.choices.forEach((choice, j) => {
    const rowLoc = locKey(choicesLoc, j);
    if (!isObject(choice)) {
      box.append(note(`choices[${j}] is not an object; edit it in the JSON view.`));
      return;
    }
    const kind = typeof choice.value === "boolean" ? String(choice.value) : "text";
    const valueType = select(CHOICE_VALUE_TYPES, kind);
    const value = textInput(typeof choice.value === "boolean" ? "" : choice.value, (text) => {
      choice.value = text;
      changed();
    }, { placeholder: kind === "text" ? "" : "(a boolean)" });
    if (kind !== "text") value.disabled = true;
    valueType.addEventListener("change", () => {
      choice.value = valueType.value === "text" ? "" : valueType.value === "true";
      structural(locKey(rowLoc, "value"));
    });
    const description = textInput(choice.description, (text) => {
      if (text) choice.description = text; else delete choice.description;
      changed();
    }, { placeholder: "optional" });
    box.append(h("div", { class: "option-row typed", dataset: { loc: rowLoc } },
      field(`Choice ${j + 1} value type`, valueType, { loc: locKey(rowLoc, "type"), className: "compact" }),
      field(`Choice ${j + 1} value`, value, { loc: locKey(rowLoc, "value"), className: "compact" }),
      field(`Choice ${j + 1} description`, description, { loc: locKey(rowLoc, "description"), className: "compact" }),
      removeButton(`choice ${j + 1}`, () => {
        question.choices.splice(j, 1);
        structural(choicesLoc);
      })));
  });
  return box;
}

function openAiLevels(question, loc, changed, structural) {
  const levelsLoc = locKey(loc, "levels");
  const box = h("div", { class: "options", dataset: { loc: levelsLoc } });
  if (!Array.isArray(question.levels)) return note("levels is not a list; edit it in the JSON view.");
  box.append(...[optionsHead("Levels, lowest first", "Add level", () => {
    question.levels.push({ label: "" });
    structural(locKey(levelsLoc, question.levels.length - 1));
  }, question.levels.length ? { kind: "level", names: ["", "Label", "Description (optional)"] } : null)].flat());
  question.levels.forEach((level, j) => {
    const rowLoc = locKey(levelsLoc, j);
    if (!isObject(level)) {
      box.append(note(`levels[${j}] is not an object; edit it in the JSON view.`));
      return;
    }
    const label = textInput(level.label, (text) => {
      level.label = text;
      changed();
    }, { placeholder: j === 0 ? "the lowest level" : "" });
    const description = textInput(level.description, (text) => {
      if (text) level.description = text; else delete level.description;
      changed();
    }, { placeholder: "optional" });
    box.append(h("div", { class: "option-row level", dataset: { loc: rowLoc } },
      h("span", { class: "level-index", "aria-hidden": "true" }, String(j)),
      field(`Level ${j} label`, label, { loc: locKey(rowLoc, "label"), className: "compact" }),
      field(`Level ${j} description`, description, { loc: locKey(rowLoc, "description"), className: "compact" }),
      removeButton(`level ${j}`, () => {
        question.levels.splice(j, 1);
        structural(levelsLoc);
      })));
  });
  return box;
}
