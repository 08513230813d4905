"""The GGUF's quantised weight matrices kept as they are in memory, dequantised per forward.

A Q8_0 block is 32 int8 values and an fp16 scale ``d``: ``w = q * d``. A Q4_1 block is 32 four-bit values,
an fp16 scale ``d`` and minimum ``m``: ``w = q * d + m`` (the low nibbles of its 16 bytes are values 0-15,
the high nibbles 16-31). Dequantising here takes the same steps in fp32 as the ``gguf`` package (which the
conversion to the cached fp32 file uses), so the weights are bit for bit those of that file.

``QuantizedLinear`` holds its matrix's blocks (row-major: each row its ``in_features / 32`` blocks) and
dequantises the whole matrix once per call, freed when the call returns: one layer's matrix at a time, on top
of the ~95 MiB of blocks, instead of 513 MiB of fp32 weights. ``QuantizedEmbedding`` dequantises only the
rows of the tokens it looks up; tied to a ``QuantizedLinear`` LM head, both read the same blocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

BLOCK = 32
KINDS = ("Q8_0", "Q4_1")
# llama.cpp's names of a llama model's matrices -> the transformers module holding them
LLAMA_MODULES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}


class QuantizedWeight(nn.Module):
    """A (rows, columns) matrix as GGUF blocks: ``scale`` (rows, blocks) fp16, ``minimum`` likewise (Q4_1 only)
    and ``values`` (rows, blocks, 32): int8 for Q8_0, uint8 0-15 for Q4_1 (its nibbles unpacked once at load,
    one byte a value: half the dequantisation's work for 53 MiB more than packed)."""

    scale: torch.Tensor
    minimum: torch.Tensor | None
    values: torch.Tensor

    def __init__(self, kind: str, raw: np.ndarray, columns: int):
        super().__init__()
        if kind not in KINDS or columns % BLOCK:
            raise ValueError(f"unsupported block layout {kind} for {columns} columns")
        rows = raw.shape[0]
        # numpy, one pass per array: torch's elementwise ops on these uint8 arrays took ~10x the CPU
        # (its intra-op threads spin-waiting on cores that other processes hold)
        blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(rows, columns // BLOCK, -1)
        halves = blocks.view(np.float16)  # each block's leading fp16 fields: d (and m for Q4_1)
        self.kind, self.shape = kind, (rows, columns)
        self.register_buffer("scale", torch.from_numpy(np.array(halves[..., 0], order="C")))
        if kind == "Q4_1":
            packed = blocks[..., 4:]
            values = np.empty((rows, columns // BLOCK, BLOCK), dtype=np.uint8)
            np.bitwise_and(packed, 15, out=values[..., :BLOCK // 2])  # low nibbles first
            np.right_shift(packed, 4, out=values[..., BLOCK // 2:])
            self.register_buffer("minimum", torch.from_numpy(np.array(halves[..., 1], order="C")))
            self.register_buffer("values", torch.from_numpy(values))
        else:
            self.register_buffer("minimum", None)
            self.register_buffer("values", torch.from_numpy(np.array(blocks[..., 2:], order="C").view(np.int8)))

    def dequantize(self, rows: torch.Tensor | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The fp32 matrix (or only ``rows``, indices of any shape: then shaped ``rows.shape + (columns,)``),
        cast to ``dtype`` at the end. The gguf package's steps: ``q * d`` (Q8_0), ``q * d + m`` (Q4_1)."""
        scale, minimum, values = self.scale, self.minimum, self.values
        if rows is not None:
            scale, values = scale[rows], values[rows]
            minimum = minimum[rows] if minimum is not None else None
        out = values.float().mul_(scale.float().unsqueeze(-1))
        if minimum is not None:
            out.add_(minimum.float().unsqueeze(-1))
        out = out.flatten(-2)
        return out if dtype == torch.float32 else out.to(dtype)


class QuantizedLinear(nn.Module):
    """``nn.Linear`` without a bias over a ``QuantizedWeight``, dequantised for each call."""

    def __init__(self, weight: QuantizedWeight):
        super().__init__()
        self.qweight = weight
        self.out_features, self.in_features = weight.shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.qweight.dequantize(dtype=x.dtype))


class QuantizedEmbedding(nn.Module):
    """``nn.Embedding`` over a ``QuantizedWeight``: only the looked-up rows are dequantised."""

    def __init__(self, weight: QuantizedWeight, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.qweight = weight
        self.num_embeddings, self.embedding_dim = weight.shape
        self.dtype = dtype

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.qweight.dequantize(ids, dtype=self.dtype)


def _unpermute_rows(raw: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's reordering of a query / key matrix's rows (transformers' ``_reverse_permute_weights``,
    which the conversion applies to the dequantised matrix; rows are whole blocks, so it applies to them)."""
    rows = raw.shape[0]
    return raw.reshape(heads, rows // heads // 2, 2, -1).swapaxes(2, 1).reshape(raw.shape)


def quantize_from_gguf(model: Any, gguf_path: str | Path, dtype: torch.dtype = torch.float32) -> int:
    """Replace the Linear layers and the (tied) embedding of a llama-architecture ``model``, loaded from the
    conversion of ``gguf_path``, by their GGUF blocks where these are Q8_0 or Q4_1; the others stay as loaded.
    Returns how many matrices are held quantised (0 for another architecture)."""
    from backend.gguf_table import read_tensor_table

    table = read_tensor_table(gguf_path)  # the tensor table only: ~0.1 s, where gguf's reader took 2-5 s
    if table.architecture != "llama":
        return 0
    config = model.config
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    tensors = {name: t for name, t in table.tensors.items() if t.kind in KINDS}
    done = 0
    for name, tensor in tensors.items():
        parts = name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in LLAMA_MODULES:
            continue
        path = f"model.layers.{parts[1]}.{LLAMA_MODULES[parts[2]]}"
        linear = model.get_submodule(path)
        data = table.data(tensor)
        raw = data if parts[2] not in heads else _unpermute_rows(data, heads[parts[2]])
        if not isinstance(linear, nn.Linear) or linear.bias is not None:
            continue
        weight = QuantizedWeight(tensor.kind, raw, linear.in_features)
        if weight.shape != tuple(linear.weight.shape):
            raise ValueError(f"{name}: {weight.shape} blocks for a {tuple(linear.weight.shape)} matrix")
        model.set_submodule(path, QuantizedLinear(weight))
        done += 1
    embedding = tensors.get("token_embd.weight")
    tied = "output.weight" not in table.tensors and getattr(config, "tie_word_embeddings", False)
    if embedding is not None and tied:
        embeddings = model.get_input_embeddings()
        weight = QuantizedWeight(embedding.kind, table.data(embedding), embeddings.embedding_dim)
        model.set_input_embeddings(QuantizedEmbedding(weight, dtype))
        model.set_output_embeddings(QuantizedLinear(weight))
        done += 1
    return done
