"""Prompt formats: version 1 (the chat template, SGLang's and MAX's wording) and version 2 (decider).

A format turns the input and one question into scoring rows: prompt token ids plus the token id
of every answer label, checked to be single distinct tokens. Version 1 gives one row per question.
Version 2 (a checkpoint with ``decider_config.json``) gives one row per question, or one yes/no row
per level for a score question read with isolated levels.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.errors import BackendRefusal
from backend.labels import DECIDER_LETTERS, DIGITS, YES_NO, LabelChecker, choice_labels
from backend.scoring import ScoreRow

THINKING_TOGGLES = ("enable_thinking", "thinking")
REASONING_MARKERS = (("<think>", "</think>"), ("<thinking>", "</thinking>"))
# apply_chat_template's own parameters: chat_template_kwargs are template variables and may not set these.
RESERVED_TEMPLATE_ARGS = frozenset({"conversation", "chat_template", "tools", "documents", "add_generation_prompt",
                                    "continue_final_message", "tokenize", "padding", "truncation", "max_length",
                                    "return_tensors", "return_dict", "return_assistant_tokens_mask",
                                    "tokenizer_kwargs", "processor_kwargs"})


@dataclass(frozen=True)
class QuestionSpec:
    """One question in the backend's terms; all text already rendered (JSON as compact JSON)."""

    id: str
    kind: str  # choice | score | yes_no
    text: str  # may be blank on the System One route
    options: tuple[tuple[str, str | None], ...] = ()  # choice: (name, description)
    levels: tuple[str, ...] = ()  # score
    yes: str | None = None
    no: str | None = None

    @property
    def answer_names(self) -> tuple[str, ...]:
        if self.kind == "choice":
            return tuple(name for name, _ in self.options)
        if self.kind == "score":
            return tuple(str(i) for i in range(len(self.levels)))
        return YES_NO


@dataclass(frozen=True)
class QuestionPlan:
    spec: QuestionSpec
    rows: tuple[ScoreRow, ...]
    temperature: float
    isolated_levels: bool = False  # one yes/no row per level (version 2 score): P(level) from each row's "yes"
    # Row label index of each answer name, when the row's labels come in another order (v2 yes/no: no, yes).
    answer_order: tuple[int, ...] | None = None


def refuse_thinking(requested: dict) -> None:
    """Decisions are read with thinking off, whatever the format: turning it on is refused."""
    for toggle in THINKING_TOGGLES:
        if toggle in requested and requested[toggle] not in (False, None):
            raise BackendRefusal(
                f"chat_template_kwargs sets '{toggle}' to {requested[toggle]!r}, but decisions need it false or unset")


def _described(description: str | None) -> bool:
    return description is not None and description.strip() != ""


def chat_message(input_text: str, spec: QuestionSpec, labels: tuple[str, ...]) -> str:
    """Version 1 user message, word for word as SGLang renders it."""
    lines: list[str] = []
    if spec.kind == "yes_no":
        lines.append(f"Is the following true? {spec.text}" if spec.text.strip() else "Is the following true?")
        if _described(spec.yes):
            lines.append(f"yes: {spec.yes}")
        if _described(spec.no):
            lines.append(f"no: {spec.no}")
        lines.append("Answer with yes or no only.")
    else:
        if spec.text.strip():
            lines.append(f"Question: {spec.text}")
        if spec.kind == "choice":
            for label, (name, description) in zip(labels, spec.options):
                lines.append(f"{label}: {name} - {description}" if _described(description) else f"{label}: {name}")
            lines.append("Answer with the letter of one option only.")
        else:
            for label, level in zip(labels, spec.levels):
                lines.append(f"{label}: {level}")
            lines.append("Answer with the number of one level only.")
    return f"{input_text}\n\n" + "\n".join(lines)


class ChatPromptFormat:
    """Version 1: one user message per question, the tokenizer's chat template, thinking off."""

    version = 1

    def __init__(self, tokenizer, context_length: int):
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.labels = LabelChecker(tokenizer)

    def default_temperature(self, kind: str) -> float:
        return 1.0

    def template_kwargs(self, requested: dict | None) -> dict:
        requested = dict(requested or {})
        for name in sorted(RESERVED_TEMPLATE_ARGS & set(requested)):
            raise BackendRefusal(f"chat_template_kwargs may not set '{name}', which is not a template variable")
        refuse_thinking(requested)
        return {**{t: False for t in THINKING_TOGGLES}, **{k: v for k, v in requested.items() if v is not None}}

    def labels_for(self, spec: QuestionSpec, allow_two_letters: bool) -> tuple[str, ...]:
        if spec.kind == "choice":
            return choice_labels(len(spec.options), allow_two_letters=allow_two_letters)
        if spec.kind == "score":
            if len(spec.levels) > len(DIGITS):
                raise BackendRefusal(f"a score takes at most {len(DIGITS)} levels, and this one has {len(spec.levels)}")
            return DIGITS[: len(spec.levels)]
        return YES_NO

    def plan(self, input_text: str, spec: QuestionSpec, *, kwargs: dict, temperature: float | None,
             allow_two_letters: bool = False) -> QuestionPlan:
        if not getattr(self.tokenizer, "chat_template", None):  # /v1/score still serves such a model
            raise BackendRefusal("decisions require a chat template, and this model's tokenizer has none; "
                                 "/v1/score still scores token ids")
        labels = self.labels_for(spec, allow_two_letters)
        content = chat_message(input_text, spec, labels)
        try:
            text = self.tokenizer.apply_chat_template([{"role": "user", "content": content}],
                                                      add_generation_prompt=True, tokenize=False, **kwargs)
        except Exception as err:  # noqa: BLE001 - any template failure is the request's refusal
            raise BackendRefusal(f"the chat template failed: {err}") from None
        self._check_reasoning(text, content)
        ids = self.labels.encode(text)
        if len(ids) >= self.context_length:
            raise BackendRefusal(f"the prompt has {len(ids)} tokens, which does not fit the context length "
                                 f"of {self.context_length} tokens")
        if len(labels[0]) > 1 and labels[0] not in YES_NO and self.labels.answer_context(text, ids) == text:
            raise BackendRefusal("more than 26 options need a chat template with an added token right before the "
                                 "answer position, and this one has none, so a choice is limited to 26 options")
        label_ids = self.labels.label_ids(text, ids, labels)
        return QuestionPlan(spec, (ScoreRow(tuple(ids), tuple(label_ids)),),
                            temperature if temperature is not None else 1.0)

    @staticmethod
    def _check_reasoning(text: str, content: str) -> None:
        at = text.rfind(content)
        generation = text[at + len(content):] if at >= 0 else text
        for start, end in REASONING_MARKERS:
            if generation.rfind(start) > generation.rfind(end):
                raise BackendRefusal("the chat template leaves a reasoning block open at the answer position, "
                                     "so this model is not supported with these chat_template_kwargs")


_LEVEL_NUMBER = re.compile(r"^\s*\d+\s*[:.)\-]\s*")


class DeciderPromptFormat:
    """Version 2 (seed 002): plain text, state first and question last, letters A..J."""

    version = 2
    type_names = {"choice": "choice", "yes_no": "noul", "score": "score"}

    def __init__(self, tokenizer, config: dict, context_length: int):
        layout = config.get("layout", "plain")
        if layout != "plain":
            raise BackendRefusal(f"decider_config.json layout '{layout}' is not supported, only 'plain'")
        self.tokenizer = tokenizer
        self.config = config
        self.context_length = context_length
        self.max_state_tokens = int(config.get("max_state_tokens", 32768))
        self.isolated_levels = bool(config.get("isolated_levels", True))
        self.labels = LabelChecker(tokenizer)
        self._state_cache: tuple[str, list[int]] | None = None

    def default_temperature(self, kind: str) -> float:
        by_type = self.config.get("temperature_by_type") or {}
        return float(by_type.get(self.type_names[kind], self.config.get("temperature", 1.0)))

    def template_kwargs(self, requested: dict | None) -> dict:
        requested = dict(requested or {})
        refuse_thinking(requested)  # as MAX: thinking may not be turned on, though the plain layout has no template
        return requested

    def state_ids(self, input_text: str) -> list[int]:
        cached = self._state_cache  # one read: another request may replace it meanwhile
        if cached is not None and cached[0] == input_text:
            return cached[1]
        ids = self.labels.encode(f"Context:\n{input_text}")
        if len(ids) > self.max_state_tokens:
            raise BackendRefusal(f"the input has {len(ids)} tokens, more than this decider model's "
                                 f"max_state_tokens of {self.max_state_tokens}")
        self._state_cache = (input_text, ids)
        return ids

    def _row(self, state: list[int], question: str, options: list[str]) -> ScoreRow:
        if len(options) > len(DECIDER_LETTERS):
            raise BackendRefusal(f"the decider format reads at most {len(DECIDER_LETTERS)} options or levels, "
                                 f"and this question has {len(options)}")
        letters = DECIDER_LETTERS[: len(options)]
        head = f"\n\nQuestion: {question}\nOptions:" if question.strip() else "\n\nOptions:"
        text = head + "".join(f"\n({L}) {o}" for L, o in zip(letters, options)) + "\nAnswer: ("
        row_ids = self.labels.encode(text)
        ids = state + row_ids
        if len(ids) >= self.context_length:
            raise BackendRefusal(f"the prompt has {len(ids)} tokens, which does not fit the context length "
                                 f"of {self.context_length} tokens")
        label_ids = self.labels.label_ids(text, row_ids, letters)
        return ScoreRow(tuple(ids), tuple(label_ids))

    def plan(self, input_text: str, spec: QuestionSpec, *, kwargs: dict, temperature: float | None,
             allow_two_letters: bool = False) -> QuestionPlan:
        state = self.state_ids(input_text)
        temp = temperature if temperature is not None else self.default_temperature(spec.kind)
        if spec.kind == "choice":
            options = [f"{n} - {d}" if _described(d) else n for n, d in spec.options]
            return QuestionPlan(spec, (self._row(state, spec.text, options),), temp)
        if spec.kind == "yes_no":
            options = [f"no - {spec.no}" if _described(spec.no) else "no",
                       f"yes - {spec.yes}" if _described(spec.yes) else "yes"]
            return QuestionPlan(spec, (self._row(state, spec.text, options),), temp, answer_order=(1, 0))
        if not self.isolated_levels:
            return QuestionPlan(spec, (self._row(state, spec.text, list(spec.levels)),), temp)
        if len(spec.levels) > len(DECIDER_LETTERS):
            raise BackendRefusal(f"the decider format reads at most {len(DECIDER_LETTERS)} options or levels, "
                                 f"and this question has {len(spec.levels)}")
        rows = tuple(
            self._row(state, f"{spec.text}\nProposed answer: {_LEVEL_NUMBER.sub('', level)}\n"
                             "Does the proposed answer fit?", ["no", "yes"])
            for level in spec.levels)
        return QuestionPlan(spec, rows, temp, isolated_levels=True)
