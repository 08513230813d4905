"""Prompt format version 1, word for word, and the single-token label checks, on the real tokenizer."""

from __future__ import annotations

import copy

import pytest

from backend.errors import BackendRefusal
from backend.labels import LabelChecker, choice_labels
from backend.prompts import ChatPromptFormat, QuestionSpec, chat_message

# backend-reference.md 1.4: the rendered prompt SGLang and MAX produce for this question (112 tokens).
REFERENCE_PROMPT = """<|im_start|>system
You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
<|im_start|>user
I was charged twice for my subscription this month, please refund one of the payments.

Question: Which team should handle this ticket?
A: billing - invoices, charges, refunds, payment methods
B: technical - bugs, errors, outages, login problems
C: sales - pricing questions, new plans, upgrades
D: other
Answer with the letter of one option only.<|im_end|>
<|im_start|>assistant
"""

ROUTE_SPEC = QuestionSpec("team", "choice", "Which team should handle this ticket?", options=(
    ("billing", "invoices, charges, refunds, payment methods"),
    ("technical", "bugs, errors, outages, login problems"),
    ("sales", "pricing questions, new plans, upgrades"),
    ("other", None)))
TICKET = "I was charged twice for my subscription this month, please refund one of the payments."


def render(fmt: ChatPromptFormat, spec: QuestionSpec, input_text: str = TICKET, **kwargs):
    return fmt.plan(input_text, spec, kwargs=fmt.template_kwargs(kwargs.pop("chat_template_kwargs", None)),
                    temperature=None, **kwargs)


def test_choice_prompt_matches_the_reference_rendering_token_for_token(tokenizer, service):
    fmt = ChatPromptFormat(tokenizer, service.loaded.context_length)
    plan = render(fmt, ROUTE_SPEC)
    row = plan.rows[0]
    assert tokenizer.decode(list(row.prompt_ids)) == REFERENCE_PROMPT
    assert len(row.prompt_ids) == 112
    assert list(row.label_ids) == [49, 50, 51, 52]  # A..D


def test_yes_no_and_score_wording():
    yes_no = QuestionSpec("r", "yes_no", "The customer asks for a refund.", yes="a refund is requested", no=None)
    assert chat_message("in", yes_no, ("yes", "no")) == (
        "in\n\nIs the following true? The customer asks for a refund.\nyes: a refund is requested\n"
        "Answer with yes or no only.")
    bare = QuestionSpec("r", "yes_no", "", yes=None, no="not at all")
    assert chat_message("in", bare, ("yes", "no")) == "in\n\nIs the following true?\nno: not at all\nAnswer with yes or no only."
    score = QuestionSpec("u", "score", "How urgent?", levels=("low", '{"a":1}'))
    assert chat_message("in", score, ("0", "1")) == (
        'in\n\nQuestion: How urgent?\n0: low\n1: {"a":1}\nAnswer with the number of one level only.')
    untitled = QuestionSpec("c", "choice", "", options=(("x", None), ("y", "why")))
    assert chat_message("in", untitled, ("A", "B")) == "in\n\nA: x\nB: y - why\nAnswer with the letter of one option only."


def test_every_label_is_one_distinct_token_at_the_answer_position(tokenizer, service):
    fmt = ChatPromptFormat(tokenizer, service.loaded.context_length)
    letters = QuestionSpec("c", "choice", "q", options=tuple((f"o{i}", None) for i in range(26)))
    digits = QuestionSpec("s", "score", "q", levels=tuple(f"l{i}" for i in range(10)))
    yes_no = QuestionSpec("y", "yes_no", "q")
    assert list(render(fmt, letters).rows[0].label_ids) == list(range(49, 75))
    assert list(render(fmt, digits).rows[0].label_ids) == list(range(32, 42))
    assert list(render(fmt, yes_no).rows[0].label_ids) == [10407, 4607]


def test_label_check_uses_the_text_after_the_last_added_token(tokenizer):
    checker = LabelChecker(tokenizer)
    text = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert checker.answer_context(text, checker.encode(text)) == "assistant\n"


def with_template(tokenizer, template: str):
    clone = copy.copy(tokenizer)
    clone.chat_template = template
    return clone


def test_a_label_that_is_not_one_token_is_refused(tokenizer, service):
    # A generation prompt ending in a space: " A" is one token, so "A" is not a token of its own there.
    spaced = with_template(tokenizer, tokenizer.chat_template.replace("'<|im_start|>assistant\n'", "'<|im_start|>assistant\n '"))
    fmt = ChatPromptFormat(spaced, service.loaded.context_length)
    with pytest.raises(BackendRefusal, match="the answer label 'A' is not one distinct token after the chat prompt"):
        render(fmt, ROUTE_SPEC)


def test_two_letter_labels_beyond_26_options_are_checked_one_by_one(tokenizer, service):
    fmt = ChatPromptFormat(tokenizer, service.loaded.context_length)
    assert choice_labels(28, allow_two_letters=True)[:3] == ("AA", "AB", "AC")
    nine = QuestionSpec("c", "choice", "q", options=tuple((f"o{i}", None) for i in range(27)))
    # SmolLM2's vocabulary has AA..AI as single tokens but not AJ, the 10th two-letter label.
    with pytest.raises(BackendRefusal, match="the answer label 'AJ' is not one distinct token"):
        render(fmt, nine, allow_two_letters=True)
    with pytest.raises(BackendRefusal, match="at most 26 options"):
        render(fmt, nine)


def test_thinking_cannot_be_turned_on(tokenizer, service):
    fmt = ChatPromptFormat(tokenizer, service.loaded.context_length)
    with pytest.raises(BackendRefusal, match="sets 'enable_thinking' to True, but decisions need it false or unset"):
        fmt.template_kwargs({"enable_thinking": True})
    with pytest.raises(BackendRefusal, match="sets 'thinking'"):
        fmt.template_kwargs({"thinking": "yes"})
    assert fmt.template_kwargs({"enable_thinking": False}) == {"enable_thinking": False, "thinking": False}
    with pytest.raises(BackendRefusal, match="may not set 'chat_template'"):
        fmt.template_kwargs({"chat_template": "{{ 1 }}"})


def test_a_template_that_leaves_a_reasoning_block_open_is_refused(tokenizer, service):
    # The template opens <think> unless thinking is off; our kwargs turn it off, a stubborn template does not care.
    thinking = with_template(tokenizer, tokenizer.chat_template.replace(
        "'<|im_start|>assistant\n'", "'<|im_start|>assistant\n<think>\n'"))
    fmt = ChatPromptFormat(thinking, service.loaded.context_length)
    with pytest.raises(BackendRefusal, match="leaves a reasoning block open at the answer position"):
        render(fmt, ROUTE_SPEC)
    closed = with_template(tokenizer, tokenizer.chat_template.replace(
        "'<|im_start|>assistant\n'", "'<|im_start|>assistant\n' + ('<think>\n\n</think>\n' if not enable_thinking else '<think>\n')"))
    assert render(ChatPromptFormat(closed, service.loaded.context_length), ROUTE_SPEC).rows


def test_a_template_error_is_refused_with_its_message(tokenizer, service):
    broken = with_template(tokenizer, "{{ raise_exception('no user turns here') }}")
    with pytest.raises(BackendRefusal, match="the chat template failed: .*no user turns here"):
        render(ChatPromptFormat(broken, service.loaded.context_length), ROUTE_SPEC)


def test_a_prompt_longer_than_the_context_is_refused(tokenizer):
    fmt = ChatPromptFormat(tokenizer, 100)
    with pytest.raises(BackendRefusal, match=r"the prompt has 112 tokens, which does not fit the context length of 100"):
        render(fmt, ROUTE_SPEC)
