// The System One form: state (text or JSON), an image as an asset, and questions by id: noul with
// its true/false criteria, choice labels with descriptions, score levels lowest first, box.

import { button, field, h, select } from "./dom.js";
import {
  FORMATS, freshName, isObject, locKey, localError, note, optionsHead, randomHex, readFile,
  removeButton, renameKey, structured, structuredHint, textInput,
} from "./form_parts.js";

const S1_TYPES = [["noul", "Yes / no (noul)"], ["choice", "Choice"], ["score", "Score"], ["box", "Box"]];

export function systemOne(el, body, changed, structural) {
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
  const kind = select(S1_TYPES, nextKind.type, { "aria-label": "Type of the new question" });
  kind.addEventListener("change", () => { nextKind.type = kind.value; });
  el.append(h("div", { class: "add-question" }, kind, button("Add question", () => {
    const id = freshName(Object.keys(body.questions), "question");
    body.questions[id] = newS1Question(kind.value);
    structural(locKey("questions", id));
  }, { class: "button small" })));
}

// The type picked for the next question outlives a re-render of the form (an image read, a model
// picked): the form is drawn anew from the body, and the picker would fall back to "choice".
const nextKind = { type: "choice" };

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
