"""Next-token label log-probabilities for many prompts, with each shared prefix computed once.

For a group of prompts sharing a token prefix (the chat template head and the input), the prefix runs
once with a KV cache; every prompt's remaining tokens then run in one right-padded batch over that
cache, with explicit positions. The rows share the prefix's keys and values as broadcast views: no
per-row copy is made or kept, so a batch holds one layer's keys and values for its rows at a time
(``SharedPrefixLayer``), within ``max_batch_tokens``. Right padding needs no attention mask: a real
token only attends to earlier positions, which are all real. The final hidden state is gathered at
each row's last real token and only those rows go through the LM head; ``log_softmax`` runs in fp32
over the full vocabulary. Nothing here is asynchronous: ``backend.engine`` runs it on its worker thread.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers.cache_utils import DynamicLayer  # transformers >= 4.54 (4.56 required): a cache of layers

PAD_ID = 0  # any id: with right padding no real token ever attends to a pad


@dataclass(frozen=True)
class ScoreRow:
    prompt_ids: tuple[int, ...]
    label_ids: tuple[int, ...]


@dataclass(frozen=True)
class ScoreOutput:
    label_logprobs: list[list[float]]  # per row, per label: full-vocabulary log-probability
    cached_tokens: int  # prompt tokens served from a shared prefix instead of recomputed


def common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Longest common token prefix, leaving every prompt at least one token of its own."""
    if len(prompts) < 2:
        return 0
    shortest = min(len(p) for p in prompts)
    first = prompts[0]
    n = 0
    while n < shortest - 1 and all(p[n] == first[n] for p in prompts):
        n += 1
    return n


class Scorer:
    """Batched, prefix-sharing scoring over one loaded causal LM."""

    def __init__(self, model, device: str, *, max_batch_tokens: int | None = None):
        self.model = model
        self.device = device
        self.decoder = model.get_decoder()
        self.lm_head = model.get_output_embeddings()
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        # transformers >= 5.2x names the KV cache argument ``cache``; older releases ``past_key_values``.
        params = inspect.signature(self.decoder.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        # Rows x (prefix + widest suffix) per forward: bounds the keys and values one layer attends to at once.
        self.max_batch_tokens = max_batch_tokens or (131072 if device.startswith("cuda") else 16384)

    # -- public --------------------------------------------------------------------------------

    @torch.inference_mode()
    def score_jobs(self, jobs: Sequence[Sequence[ScoreRow]]) -> list[ScoreOutput]:
        """Score several requests' rows together: requests with the same prefix share one pass."""
        groups: dict[tuple[int, ...], list[tuple[int, int]]] = {}
        for j, rows in enumerate(jobs):
            if not rows:
                continue
            p = common_prefix_length([r.prompt_ids for r in rows])
            prefix = tuple(rows[0].prompt_ids[:p]) if p else ()
            groups.setdefault(prefix, []).extend((j, i) for i in range(len(rows)))
        results: list[list[list[float]]] = [[[] for _ in rows] for rows in jobs]
        for prefix, members in groups.items():
            logprobs = self._score_group(prefix, [jobs[j][i] for j, i in members])
            for (j, i), lp in zip(members, logprobs):
                results[j][i] = lp
        # Each request reports the prefix tokens its rows reused: all rows but the one that computed them.
        return [ScoreOutput(results[j], common_prefix_length([r.prompt_ids for r in rows]) * (len(rows) - 1))
                for j, rows in enumerate(jobs)]

    def score(self, rows: Sequence[ScoreRow]) -> ScoreOutput:
        return self.score_jobs([rows])[0]

    @torch.inference_mode()
    def reference_logprobs(self, prompt_ids: Sequence[int]) -> torch.Tensor:
        """The plain way: one full forward with logits at every position; fp32 log_softmax at the last."""
        ids = torch.tensor([list(prompt_ids)], device=self.device)
        logits = self.model(input_ids=ids, use_cache=False, logits_to_keep=0).logits
        return torch.log_softmax(logits[0, -1].float(), dim=-1)

    # -- internals -----------------------------------------------------------------------------

    def _score_group(self, prefix: tuple[int, ...], rows: list[ScoreRow]) -> list[list[float]]:
        cache = self._prefix_cache(prefix) if prefix else None
        p = len(prefix)
        out: list[list[float]] = []
        for chunk in self._chunks(rows, p):
            suffixes = [r.prompt_ids[p:] for r in chunk]
            last = self._last_hidden(suffixes, p, cache)
            logprobs = self._label_logprobs(last)
            for row, lp in zip(chunk, logprobs):
                out.append(lp[list(row.label_ids)].tolist())
        return out

    def _chunks(self, rows: list[ScoreRow], prefix_len: int) -> list[list[ScoreRow]]:
        """Consecutive rows per forward, keeping rows x (prefix + longest suffix) within the token budget."""
        chunks: list[list[ScoreRow]] = []
        current: list[ScoreRow] = []
        widest = 0
        for row in rows:
            width = max(widest, len(row.prompt_ids) - prefix_len)
            if current and (len(current) + 1) * (prefix_len + width) > self.max_batch_tokens:
                chunks.append(current)
                current, width = [], len(row.prompt_ids) - prefix_len
            current.append(row)
            widest = width
        if current:
            chunks.append(current)
        return chunks

    def _prefix_cache(self, prefix: tuple[int, ...]):
        ids = torch.tensor([list(prefix)], device=self.device)
        out = self.decoder(input_ids=ids, use_cache=True)
        cache = getattr(out, "cache", None)
        return cache if cache is not None else out.past_key_values

    def _last_hidden(self, suffixes: Sequence[Sequence[int]], prefix_len: int, cache) -> torch.Tensor:
        """Hidden state at each suffix's last real token, one right-padded forward for all."""
        width = max(len(s) for s in suffixes)
        ids = torch.full((len(suffixes), width), PAD_ID, dtype=torch.long)
        for i, s in enumerate(suffixes):
            ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        ids = ids.to(self.device)
        positions = torch.arange(prefix_len, prefix_len + width, device=self.device)
        kwargs = {"use_cache": cache is not None}
        if cache is not None:
            kwargs[self.cache_arg] = shared_prefix_cache(cache, len(suffixes))
        hidden = self.decoder(input_ids=ids, position_ids=positions.unsqueeze(0).expand(len(suffixes), -1),
                              **kwargs).last_hidden_state
        last = torch.tensor([len(s) - 1 for s in suffixes], device=self.device)
        return hidden[torch.arange(len(suffixes), device=self.device), last]

    def _label_logprobs(self, last_hidden: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(last_hidden).float()
        if self.softcap:
            logits = torch.tanh(logits / self.softcap) * self.softcap
        return torch.log_softmax(logits, dim=-1).cpu()


class SharedPrefixLayer(DynamicLayer):
    """One layer of a prefix cache read by every row of a batch: the prefix's keys and values are broadcast
    views (batch 1 expanded, never copied) and ``update`` stores nothing, so the concatenation a layer
    attends to lives only while that layer runs, and the prefix cache is left as it was."""

    def __init__(self, prefix: DynamicLayer, rows: int):
        super().__init__()
        assert prefix.keys is not None and prefix.values is not None
        self.keys = prefix.keys.expand(rows, -1, -1, -1)
        self.values = prefix.values.expand(rows, -1, -1, -1)
        self.device = prefix.keys.device
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        assert self.keys is not None and self.values is not None
        return torch.cat([self.keys, key_states], dim=-2), torch.cat([self.values, value_states], dim=-2)


def shared_prefix_cache(cache, rows: int):
    """The prefix cache as ``rows`` rows see it: shared views where its layers are plain dynamic ones, else
    (older transformers, sliding-window or other special layers) a per-row copy as before."""
    layers = getattr(cache, "layers", None)
    if layers and all(type(layer) is DynamicLayer for layer in layers):
        shared = copy.copy(cache)  # the cache's settings, with layers of its own
        shared.layers = [SharedPrefixLayer(layer, rows) for layer in layers]
        return shared
    batch_cache = copy.deepcopy(cache)
    batch_cache.batch_repeat_interleave(rows)
    return batch_cache
