// The playground's form editors, one per wire. Each edits the request body object in place (the
// JSON editor shows the same object), so form and JSON stay in step both ways. The form knows the
// shapes of the wires, not their rules: the server checks every request (see playground.js).

import { clear, h } from "./dom.js";
import { decisions } from "./form_decisions.js";
import { isObject, note } from "./form_parts.js";
import { systemOne } from "./form_systemone.js";

export { locKey } from "./form_parts.js";

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
