"""Answer labels and the check that each is one distinct token at the answer position.

The check (SGLang's ``_encode_labels``): encode ``text + label``; it must give exactly the ids of
``text`` plus one new id, and that id must not repeat an earlier label's. As SGLang does, ``text`` is
only the part of the prompt after its last added token when that part re-encodes to the same
trailing ids, so the check does not grow with the input and its result can be cached.
"""

from __future__ import annotations

import string
from functools import lru_cache

from backend.errors import BackendRefusal

LETTERS = tuple(string.ascii_uppercase)  # A..Z
DIGITS = tuple(str(i) for i in range(10))  # 0..9
YES_NO = ("yes", "no")
DECIDER_LETTERS = tuple(string.ascii_uppercase[:10])  # A..J


def choice_labels(count: int, *, allow_two_letters: bool = False) -> tuple[str, ...]:
    """A..Z; beyond 26 options (System One route only) AA, AB, ... for every option."""
    if count <= len(LETTERS):
        return LETTERS[:count]
    if not allow_two_letters:
        raise BackendRefusal(f"a choice takes at most {len(LETTERS)} options here, and this one has {count}")
    two = tuple(a + b for a in LETTERS for b in LETTERS)
    if count > len(two):
        raise BackendRefusal(f"a choice takes at most {len(two)} options, and this one has {count}")
    return two[:count]


def label_error(label: str) -> BackendRefusal:
    return BackendRefusal(
        f"the answer label '{label}' is not one distinct token after the chat prompt for this tokenizer, "
        "so this model is not supported")


class LabelChecker:
    """Label token ids for a rendered prompt, checked; results cached per answer-position context."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        added = [t for t in tokenizer.get_added_vocab()] if hasattr(tokenizer, "get_added_vocab") else []
        self.added_tokens = sorted(added, key=len, reverse=True)
        self._cached = lru_cache(maxsize=4096)(self._check_text)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def answer_context(self, prompt_text: str, prompt_ids: list[int]) -> str:
        """The text after the last added token, when it re-encodes to the prompt's trailing ids."""
        cut = -1
        for token in self.added_tokens:
            at = prompt_text.rfind(token)
            if at >= 0:
                cut = max(cut, at + len(token))
        if cut < 0:
            return prompt_text
        tail = prompt_text[cut:]
        tail_ids = self.encode(tail)
        if tail_ids and prompt_ids[-len(tail_ids):] == tail_ids:
            return tail
        return prompt_text

    def label_ids(self, prompt_text: str, prompt_ids: list[int], labels: tuple[str, ...]) -> list[int]:
        context = self.answer_context(prompt_text, prompt_ids)
        return list(self._cached(context, labels))

    def _check_text(self, text: str, labels: tuple[str, ...]) -> tuple[int, ...]:
        base = self.encode(text)
        ids: list[int] = []
        for label in labels:
            extended = self.encode(text + label)
            if len(extended) != len(base) + 1 or extended[: len(base)] != base or extended[-1] in ids:
                raise label_error(label)
            ids.append(extended[-1])
        return tuple(ids)
