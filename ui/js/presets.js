// Presets: four everyday uses, each written once and built for both wires.

const PRESETS = [
  {
    id: "triage",
    title: "Triage a bug report",
    input: "After updating to 4.2 the app crashes every time I tap Save on a draft that has photos. Steps: open a " +
      "draft, attach two photos, tap Save. The screen freezes, then the app closes. It worked fine in 4.1.",
    questions: [
      { id: "area", kind: "choice", instructions: "Which part of the product does the report concern?",
        options: [["editor", "Writing and editing drafts"], ["media", "Photos, video and attachments"],
          ["sync", "Saving and syncing"], ["account", "Sign-in, plans and billing"]] },
      { id: "has_repro_steps", kind: "yes_no", instructions: "Does the report give steps to reproduce the problem?",
        yes: "The reporter lists what they did, in order", no: "There are no steps, or they are too vague to follow" },
      { id: "severity", kind: "score", instructions: "How severe is the problem for the user?",
        levels: ["Cosmetic", "Minor", "Major", "Critical", "Blocker"] },
    ],
  },
  {
    id: "support",
    title: "Route a support ticket",
    input: "Hi, I was charged twice for my March invoice (order 4471) and I need one of the payments refunded " +
      "before the end of the week, or my account goes overdrawn.",
    questions: [
      { id: "team", kind: "choice", instructions: "Which team should handle this ticket?",
        options: [["billing", "Invoices, payments and refunds"], ["technical", "Bugs and outages"],
          ["sales", "Plans, quotes and upgrades"], ["account", "Access and account settings"]] },
      { id: "urgent", kind: "yes_no", instructions: "Does the customer need an answer within a day?" },
      { id: "sentiment", kind: "score", instructions: "How does the customer feel?",
        levels: ["Very unhappy", "Unhappy", "Neutral", "Happy"] },
    ],
  },
  {
    id: "moderate",
    title: "Moderate a comment",
    input: "This is the dumbest take I have read all week. Did you even finish school? Nobody should listen to you.",
    questions: [
      { id: "allowed", kind: "yes_no", instructions: "May this comment stay up under a policy of respectful debate?",
        yes: "It disagrees without attacking anyone", no: "It insults, harasses or threatens someone" },
      { id: "category", kind: "choice", instructions: "What kind of comment is it?",
        options: [["fine", "Ordinary discussion"], ["insult", "Insults a person"], ["harassment", "Targets someone repeatedly"],
          ["spam", "Advertising or links"], ["hate", "Attacks a group"]] },
      { id: "toxicity", kind: "score", instructions: "How toxic is the comment?",
        levels: ["Not toxic", "Slightly toxic", "Toxic", "Very toxic"] },
    ],
  },
  {
    id: "lead",
    title: "Score a sales lead",
    input: "We're a 200-person logistics company replacing our route planning tool this quarter. Budget is approved " +
      "and I'd like a demo for our operations team next week.",
    questions: [
      { id: "fit", kind: "score", instructions: "How well does this lead fit our ideal customer (mid-size logistics firms)?",
        levels: ["Poor", "Fair", "Good", "Excellent"] },
      { id: "stage", kind: "choice", instructions: "Where is the lead in their buying journey?",
        options: [["researching", "Learning about options"], ["evaluating", "Comparing vendors"], ["ready", "Ready to buy"]] },
      { id: "has_budget", kind: "yes_no", instructions: "Does the lead say they have a budget?" },
    ],
  },
];

export const presetList = PRESETS.map(({ id, title }) => ({ id, title }));

function systemOneQuestion(q) {
  if (q.kind === "yes_no") {
    const out = { type: "noul", instructions: q.instructions };
    if (q.yes || q.no) out.criteria = { true: q.yes, false: q.no };
    return out;
  }
  if (q.kind === "choice") {
    return { type: "choice", instructions: q.instructions, criteria: Object.fromEntries(q.options) };
  }
  return { type: "score", instructions: q.instructions, criteria: q.levels };
}

function decisionsQuestion(q) {
  if (q.kind === "yes_no") {
    const extra = [q.yes && `Answer true when: ${q.yes}.`, q.no && `Answer false when: ${q.no}.`].filter(Boolean);
    return { type: "predicate", name: q.id, instructions: [q.instructions, ...extra].join(" ") };
  }
  if (q.kind === "choice") {
    return { type: "choice", name: q.id, instructions: q.instructions,
      choices: q.options.map(([value, description]) => ({ value, description })) };
  }
  return { type: "score", name: q.id, instructions: q.instructions, levels: q.levels.map((label) => ({ label })) };
}

/** The preset's request body on ``wire`` ("systemone" or "decisions") for ``model``. */
export function presetBody(id, wire, model) {
  const preset = PRESETS.find((p) => p.id === id) || PRESETS[0];
  if (wire === "systemone") {
    return { model, state: preset.input,
      questions: Object.fromEntries(preset.questions.map((q) => [q.id, systemOneQuestion(q)])) };
  }
  return { model, input: preset.input, questions: preset.questions.map(decisionsQuestion) };
}

export function emptyBody(wire, model) {
  if (wire === "systemone") return { model, state: "", questions: { question_1: { type: "noul", instructions: "" } } };
  return { model, input: "", questions: [{ type: "predicate", name: "question_1", instructions: "" }] };
}
