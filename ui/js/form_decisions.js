// The OpenAI Decisions form: input text with images as input_image parts, and questions in order:
// predicate, choice with typed values (text, true, false) and descriptions, score levels lowest first.

import { button, field, h, select } from "./dom.js";
import {
  freshName, isObject, listEditor, locKey, note, readFile, removeButton, structuredHint, textInput,
} from "./form_parts.js";

const OPENAI_TYPES = [["predicate", "Predicate"], ["choice", "Choice"], ["score", "Score"]];
const CHOICE_VALUE_TYPES = [["text", "Text"], ["true", "true"], ["false", "false"]];
const DETAILS = [["auto", "auto"], ["low", "low"], ["high", "high"], ["original", "original"]];

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

export function decisions(el, body, changed, structural) {
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
  const kind = select(OPENAI_TYPES, nextKind.type, { "aria-label": "Type of the new question" });
  kind.addEventListener("change", () => { nextKind.type = kind.value; });
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

// The type picked for the next question outlives a re-render of the form (an image read, a model
// picked): the form is drawn anew from the body, and the picker would fall back to "choice".
const nextKind = { type: "choice" };

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
  return listEditor(question.choices, {
    listLoc: choicesLoc, what: "choices", title: "Choices", addText: "Add choice",
    add: () => {
      question.choices.push({ value: freshName(question.choices.map((c) => c && c.value), "option") });
      structural(locKey(choicesLoc, question.choices.length - 1));
    },
    columns: { kind: "typed", names: ["Type", "Value", "Description (optional)"] },
    row: (choice, j, rowLoc) => {
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
      return h("div", { class: "option-row typed", dataset: { loc: rowLoc } },
        field(`Choice ${j + 1} value type`, valueType, { loc: locKey(rowLoc, "type"), className: "compact" }),
        field(`Choice ${j + 1} value`, value, { loc: locKey(rowLoc, "value"), className: "compact" }),
        field(`Choice ${j + 1} description`, description, { loc: locKey(rowLoc, "description"), className: "compact" }),
        removeButton(`choice ${j + 1}`, () => {
          question.choices.splice(j, 1);
          structural(choicesLoc);
        }));
    },
  });
}

function openAiLevels(question, loc, changed, structural) {
  const levelsLoc = locKey(loc, "levels");
  return listEditor(question.levels, {
    listLoc: levelsLoc, what: "levels", title: "Levels, lowest first", addText: "Add level",
    add: () => {
      question.levels.push({ label: "" });
      structural(locKey(levelsLoc, question.levels.length - 1));
    },
    columns: { kind: "level", names: ["", "Label", "Description (optional)"] },
    row: (level, j, rowLoc) => {
      const label = textInput(level.label, (text) => {
        level.label = text;
        changed();
      }, { placeholder: j === 0 ? "the lowest level" : "" });
      const description = textInput(level.description, (text) => {
        if (text) level.description = text; else delete level.description;
        changed();
      }, { placeholder: "optional" });
      return h("div", { class: "option-row level", dataset: { loc: rowLoc } },
        h("span", { class: "level-index", "aria-hidden": "true" }, String(j)),
        field(`Level ${j} label`, label, { loc: locKey(rowLoc, "label"), className: "compact" }),
        field(`Level ${j} description`, description, { loc: locKey(rowLoc, "description"), className: "compact" }),
        removeButton(`level ${j}`, () => {
          question.levels.splice(j, 1);
          structural(levelsLoc);
        }));
    },
  });
}
