"""From questions to answers: plan the prompts, score every row in one engine call, read the answers.

Rendering and tokenizing (up to ~1 s for 64 questions over a long input) run on one planning thread
and forward passes on the engine's worker, so neither blocks the event loop. Probabilities are
``softmax((lp - max) / T)`` over a question's labels; ``label_mass`` is the untempered
full-vocabulary mass of the labels (``fsum(exp(lp))``). A version-2 score question read with
isolated levels takes each level's ``yes`` probability as its fit, normalised over the levels, and
the smallest row mass as its label mass. Non-finite scores are a 500, never a made-up number.
"""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from backend.engine import ScoringEngine
from backend.errors import BackendRefusal
from backend.loading import LoadedModel, ModelLoadError
from backend.prompts import ChatPromptFormat, DeciderPromptFormat, QuestionPlan, QuestionSpec
from translators.confidence import normalise


@dataclass(frozen=True)
class QuestionAnswer:
    spec: QuestionSpec
    probabilities: tuple[float, ...]  # aligned with spec.answer_names
    label_mass: float
    prompt_token_ids: tuple[int, ...] | None  # single-row questions only
    label_token_ids: tuple[int, ...] | None

    @property
    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.spec.answer_names, self.probabilities))

    @property
    def choice(self) -> str:
        best = max(range(len(self.probabilities)), key=lambda i: (self.probabilities[i], -i))
        return self.spec.answer_names[best]

    @property
    def score(self) -> float:
        return math.fsum(i * p for i, p in enumerate(self.probabilities))


@dataclass(frozen=True)
class DecisionUsage:
    prompt_tokens: int
    cached_tokens: int


def label_probabilities(logprobs: Sequence[float], temperature: float) -> list[float]:
    top = max(logprobs)
    weights = [math.exp((lp - top) / temperature) for lp in logprobs]
    total = math.fsum(weights)
    return [w / total for w in weights]


def label_mass(logprobs: Sequence[float]) -> float:
    return math.fsum(math.exp(lp) for lp in logprobs)


def question_name(spec: QuestionSpec, position: int) -> str:
    return spec.id if spec.id.strip() else str(position)


class Decider:
    """One served model: its prompt format and its scoring engine."""

    def __init__(self, loaded: LoadedModel, engine: ScoringEngine):
        self.loaded = loaded
        self.engine = engine
        self.format: DeciderPromptFormat | ChatPromptFormat
        if loaded.decider_config is not None:
            try:
                self.format = DeciderPromptFormat(loaded.tokenizer, loaded.decider_config, loaded.context_length)
            except BackendRefusal as err:  # a checkpoint this server cannot serve: a start-up error
                raise ModelLoadError(f"{loaded.source or loaded.name}: {err.message}") from None
        else:
            self.format = ChatPromptFormat(loaded.tokenizer, loaded.context_length)
        # One thread: tokenizers are not guaranteed safe to share between threads.
        self._planner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decisions-prompts")

    @property
    def version(self) -> int:
        return self.format.version

    @property
    def model_name(self) -> str:
        return self.loaded.name

    def plan(self, input_text: str, specs: Sequence[QuestionSpec], *, temperature: float | None = None,
             chat_template_kwargs: dict | None = None, allow_two_letters: bool = False) -> list[QuestionPlan]:
        kwargs = self.format.template_kwargs(chat_template_kwargs)
        plans = []
        for position, spec in enumerate(specs):
            try:
                plans.append(self.format.plan(input_text, spec, kwargs=kwargs, temperature=temperature,
                                              allow_two_letters=allow_two_letters))
            except BackendRefusal as err:
                raise err.for_question(question_name(spec, position)) from None
        return plans

    async def prepare(self, input_text: str, specs: Sequence[QuestionSpec], **options) -> list[QuestionPlan]:
        """``plan`` on the planning thread, off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(
            self._planner, functools.partial(self.plan, input_text, specs, **options))

    def close(self) -> None:
        self._planner.shutdown(wait=False)

    async def answer(self, plans: Sequence[QuestionPlan]) -> tuple[list[QuestionAnswer], DecisionUsage]:
        rows = [row for plan in plans for row in plan.rows]
        output = await self.engine.score(rows)
        answers, at = [], 0
        for position, plan in enumerate(plans):
            logprobs = output.label_logprobs[at: at + len(plan.rows)]
            at += len(plan.rows)
            if not all(math.isfinite(lp) for row in logprobs for lp in row):
                raise BackendRefusal(f"question '{question_name(plan.spec, position)}': the model gave "
                                     "non-finite label scores", status=500)
            answers.append(_read(plan, logprobs))
        usage = DecisionUsage(prompt_tokens=sum(len(r.prompt_ids) for r in rows), cached_tokens=output.cached_tokens)
        return answers, usage


def _read(plan: QuestionPlan, logprobs: list[list[float]]) -> QuestionAnswer:
    if plan.isolated_levels:
        fits = [label_probabilities(row, plan.temperature)[1] for row in logprobs]  # rows are (no, yes)
        probabilities = normalise(fits)
        mass = min(label_mass(row) for row in logprobs)
        return QuestionAnswer(plan.spec, tuple(probabilities), mass, None, None)
    row_lp = logprobs[0]
    probabilities = label_probabilities(row_lp, plan.temperature)
    if plan.answer_order is not None:
        probabilities = [probabilities[i] for i in plan.answer_order]
    row = plan.rows[0]
    label_ids = row.label_ids if plan.answer_order is None else tuple(row.label_ids[i] for i in plan.answer_order)
    return QuestionAnswer(plan.spec, tuple(probabilities), label_mass(row_lp), row.prompt_ids, label_ids)
