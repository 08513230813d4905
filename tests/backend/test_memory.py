"""The backend's memory: the weight matrices held as the GGUF's blocks (dequantised to the converted file's exact
fp32 values), no per-row copies of a shared prefix's keys and values,
the conversion's leftovers kept out of the serving process, freed memory handed back when the queue empties.
Deterministic checks of structure (storages, views, which process converts), never of RSS or time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import filecmp
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch import nn

from backend import engine as engine_module
from backend import loading, scoring
from backend.engine import ScoringEngine
from backend.quantized import QuantizedEmbedding, QuantizedLinear
from backend.scoring import Scorer
from tests.backend.test_engine import QUESTIONS, rows_for


class RecordingDecoder:
    """The decoder, keeping the cache each forward was given (to look at what it holds afterwards)."""

    def __init__(self, decoder, cache_arg: str):
        self.decoder, self.cache_arg, self.caches = decoder, cache_arg, []
        self.forward = decoder.forward  # Scorer reads the signature

    def __call__(self, **kwargs):
        if self.cache_arg in kwargs:
            self.caches.append(kwargs[self.cache_arg])
        return self.decoder(**kwargs)


def test_a_batch_reads_the_prefix_cache_through_views_and_stores_no_per_row_copy(decider, service):
    rows = rows_for(decider, QUESTIONS)
    scorer = Scorer(service.loaded.model, service.loaded.device)
    recorder = RecordingDecoder(scorer.decoder, scorer.cache_arg)
    scorer.decoder = recorder
    prefix_cache = scorer._prefix_cache(tuple(rows[0].prompt_ids[:40]))
    prefix_keys = [layer.keys for layer in prefix_cache.layers]
    p = prefix_keys[0].shape[-2]
    assert p == 40
    suffixes = [r.prompt_ids[p:] for r in rows]
    scorer._last_hidden(suffixes, p, prefix_cache)

    (batch_cache,) = recorder.caches
    for layer, keys in zip(batch_cache.layers, prefix_keys, strict=True):
        # after the forward the batch's cache still holds only the prefix, broadcast over the rows: no copy
        assert layer.keys.shape[0] == len(rows) and layer.keys.shape[-2] == p
        assert layer.keys.stride(0) == 0 and layer.keys.data_ptr() == keys.data_ptr()
        assert layer.values.stride(0) == 0
    # and the prefix cache itself is left as it was, for the next chunk
    assert [layer.keys.shape for layer in prefix_cache.layers] == [k.shape for k in prefix_keys]
    assert all(k.shape[0] == 1 for k in prefix_keys)


def per_row_copies(cache, rows: int):
    """What a batch read before: the prefix cache deep-copied and repeated once per row."""
    batch_cache = copy.deepcopy(cache)
    batch_cache.batch_repeat_interleave(rows)
    return batch_cache


def test_sharing_the_prefix_gives_the_same_scores_as_per_row_copies(decider, service, monkeypatch):
    rows = rows_for(decider, QUESTIONS)
    shared = service.scorer.score(rows).label_logprobs
    shared_one_row = Scorer(service.loaded.model, service.loaded.device, max_batch_tokens=1).score(rows)
    monkeypatch.setattr(scoring, "shared_prefix_cache", per_row_copies)
    copied = service.scorer.score(rows).label_logprobs
    assert shared == copied  # the same keys and values in the same layout: the same floats
    # Chunked one token at a time the sums run in another order: the same probabilities within 1e-5, the
    # invariant every backend test holds (the log-probabilities of unlikely labels differ by 2e-5 at times)
    for a, b in zip(shared_one_row.label_logprobs, copied, strict=True):
        assert [math.exp(x) for x in a] == pytest.approx([math.exp(x) for x in b], abs=1e-5)


def test_the_served_matrices_are_held_as_gguf_blocks_the_embedding_and_lm_head_as_one(service):
    model = service.loaded.model
    assert not [name for name, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Embedding))]
    linears = [m for m in model.modules() if isinstance(m, QuantizedLinear)]
    assert len(linears) == 7 * model.config.num_hidden_layers + 1  # every projection, and the LM head
    embedding, head = model.get_input_embeddings(), model.get_output_embeddings()
    assert isinstance(embedding, QuantizedEmbedding) and head.qweight is embedding.qweight  # tied: one copy
    blocks = {id(m.qweight): m.qweight for m in model.modules() if isinstance(m, (QuantizedLinear,
                                                                                    QuantizedEmbedding))}
    for weight in blocks.values():
        assert weight.kind in ("Q8_0", "Q4_1") and weight.values.element_size() == 1
        assert weight.scale.dtype == torch.float16
    # what stays a parameter is small (norms): nothing of the size of a matrix is held in fp32
    assert max(p.numel() for p in model.parameters()) == model.config.hidden_size
    assert service.loaded.extras["quantized_matrices"] == len(blocks)


def test_the_dequantized_matrices_equal_the_converted_fp32_weights_exactly(service):
    model = service.loaded.model
    converted = load_file(Path(service.loaded.source) / "model.safetensors")
    seen = 0
    for name, module in model.named_modules():
        if isinstance(module, (QuantizedLinear, QuantizedEmbedding)):
            key = "model.embed_tokens.weight" if module is model.get_output_embeddings() else f"{name}.weight"
            assert torch.equal(module.qweight.dequantize(), converted[key]), name
            seen += 1
    assert seen == 7 * model.config.num_hidden_layers + 2
    ids = torch.tensor([[0, 17, 49151], [5, 5, 300]])
    assert torch.equal(model.get_input_embeddings()(ids), converted["model.embed_tokens.weight"][ids])


def test_the_other_parameters_are_read_in_place_from_the_mapped_file(service):
    model = service.loaded.model
    params = list(model.parameters())
    storages = {p.untyped_storage().data_ptr() for p in params}
    assert len(storages) == len(params)  # no parameter shares, or duplicates, another's storage
    weights = str(Path(service.loaded.source) / "model.safetensors")
    mapped = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == weights:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            mapped.append((start, end))
    assert mapped, "the weights file is not mapped"
    assert all(any(a <= p.data_ptr() < b for a, b in mapped) for p in params)  # read in place, not copied


def test_a_gguf_is_converted_once_in_a_child_process_to_the_same_weights(service, tmp_path, monkeypatch):
    monkeypatch.setenv("DECISIONS_GATEWAY_CACHE", str(tmp_path))

    def in_this_process(*args):
        raise AssertionError("the GGUF was converted in the serving process")

    monkeypatch.setattr(loading, "_convert_gguf", in_this_process)
    children, convert_in_child = [], loading._convert_in_child
    monkeypatch.setattr(loading, "_convert_in_child", lambda *a: children.append(a) or convert_in_child(*a))
    # Two loaders at once (as the workers of --workers 2 start): one converts, the other waits for its folder
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        folders = list(pool.map(lambda _: loading.converted_folder(loading.bundled_gguf()), range(2)))
    assert len(children) == 1 and folders[0] == folders[1]
    folder = folders[0]
    assert folder.parent == tmp_path / "models" and (folder / "config.json").is_file()

    served = Path(service.loaded.source) / "model.safetensors"
    assert filecmp.cmp(folder / "model.safetensors", served, shallow=False)  # byte for byte (no sha256 of 1 GB)
    assert not [p for p in tmp_path.joinpath("models").iterdir() if p.name.startswith(".convert-")]


async def test_the_engine_hands_freed_memory_back_when_its_queue_empties(decider, service, monkeypatch):
    trims = []
    monkeypatch.setattr(engine_module, "release_free_memory", lambda: trims.append(1) or True)
    engine = ScoringEngine(service.scorer)
    try:
        await engine.score(rows_for(decider, QUESTIONS[:1]))
        await until(lambda: trims)  # the worker trims after posting the result
        assert trims == [1]
        await asyncio.gather(*(engine.score(rows_for(decider, [q])) for q in QUESTIONS))
        await until(lambda: len(trims) >= 2)
        assert len(trims) <= engine.passes  # at most one per pass: only when nothing waits
    finally:
        engine.close()


async def until(condition, timeout_s: float = 30.0) -> None:
    """Wait for the engine's thread to get there, on the event loop, with a deadline (never a fixed sleep)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "the engine never got there"
        await asyncio.sleep(0.005)


def test_releasing_free_memory_is_safe_to_call_at_any_time():
    from backend.memory import release_free_memory

    assert release_free_memory() in (True, False)  # glibc: whether pages went back; elsewhere a no-op
