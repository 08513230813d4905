"""A GGUF file's tensor table, read without its metadata's values.

``gguf.GGUFReader`` turns every metadata value into numpy views: ~150k of them for SmolLM2's 49k-token
vocabulary and merges, ~2-5 s of CPU each time a model is loaded. Serving needs only the architecture,
the alignment and the tensor table, so this walks past the other values (a string is its length and its
bytes, an array its element type and count) and reads the table: the same offsets and byte layouts as
``GGUFReader`` (its ``data`` of a quantised tensor: uint8, rows by bytes per row), in ~50 ms. Only
little-endian files (every GGUF llama.cpp writes on common hardware) are read: the blocks' fp16 scales of a
big-endian one would read as other numbers. A truncated or malformed file is a ``ValueError``.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
# GGUF value types: the fixed sizes of the scalars (struct formats), 8 a string, 9 an array
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    name: str
    kind: str  # the ggml type's name: "F32", "Q8_0", "Q4_1", ...
    dims: tuple[int, ...]  # GGUF order: the row length first
    offset: int  # of its data, from the start of the file
    n_bytes: int

    def byte_shape(self) -> tuple[int, ...]:
        """``GGUFReader``'s shape of its data as bytes: the dimensions outermost first, each row as bytes."""
        outer = tuple(reversed(self.dims[1:]))
        return (*outer, self.n_bytes // max(1, _product(outer)))


@dataclass(frozen=True)
class TensorTable:
    path: Path
    architecture: str | None  # general.architecture, when it is a string
    tensors: dict[str, TensorInfo]  # in the file's order

    @functools.cached_property
    def _mapped(self) -> Any:
        import numpy as np

        return np.memmap(self.path, dtype=np.uint8, mode="r")

    def data(self, tensor: TensorInfo) -> Any:
        """The tensor's bytes as a read-only numpy array of ``tensor.byte_shape()``: a view of the mapped file
        (the mapping lives as long as this table, the array or a view of it)."""
        return self._mapped[tensor.offset:tensor.offset + tensor.n_bytes].reshape(tensor.byte_shape())


def _product(values: tuple[int, ...]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


class _Cursor:
    def __init__(self, buffer: mmap.mmap):
        self.buffer, self.at = buffer, 0

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.buffer):
            raise ValueError(f"the GGUF ends inside its header (at byte {self.at})")
        (value,) = struct.unpack_from(fmt, self.buffer, self.at)
        self.at += size
        return value

    def string(self) -> bytes:
        length = self.take("<Q")
        if self.at + length > len(self.buffer):
            raise ValueError(f"the GGUF ends inside a string of its header (at byte {self.at})")
        self.at += length
        return self.buffer[self.at - length:self.at]

    def skip_strings(self, count: int) -> None:
        at, buffer, end = self.at, self.buffer, len(self.buffer)
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if at + 8 > end:
                raise ValueError(f"the GGUF ends inside its header (at byte {at})")
            at += 8 + unpack(buffer, at)[0]
        if at > end:
            raise ValueError("the GGUF ends inside its header")
        self.at = at

    def value(self, kind: int) -> Any:
        """A value of type ``kind``; the elements of an array are skipped (None)."""
        if kind in SCALARS:
            return self.take("<" + SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind != ARRAY:
            raise ValueError(f"unknown GGUF value type {kind} at byte {self.at}")
        element, count = self.take("<I"), self.take("<Q")
        if element in SCALARS:
            self.at += count * struct.calcsize(SCALARS[element])
            if self.at > len(self.buffer):
                raise ValueError("the GGUF ends inside an array of its header")
        elif element == STRING:
            self.skip_strings(count)
        else:
            for _ in range(count):
                self.value(element)
        return None


def read_tensor_table(path: str | Path) -> TensorTable:
    """The tensor table of the GGUF at ``path`` (and its architecture); ``ValueError`` when it is not a whole,
    little-endian GGUF of version 2 or 3 whose tensors lie inside the file."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    path = Path(path)
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size < 24 or f.read(4) != MAGIC:
            raise ValueError(f"{path.name} is not a GGUF file")
        buffer = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    with buffer:
        cursor = _Cursor(buffer)
        cursor.at = 4
        version = cursor.take("<I")
        if version not in VERSIONS:
            swapped = struct.unpack(">I", struct.pack("<I", version))[0]
            if swapped in VERSIONS:
                raise ValueError(f"{path.name} is a big-endian GGUF, which is not supported")
            raise ValueError(f"{path.name} is GGUF version {version}; versions {VERSIONS} are supported")
        n_tensors, n_values = cursor.take("<Q"), cursor.take("<Q")
        architecture, alignment = None, DEFAULT_ALIGNMENT
        for _ in range(n_values):
            key, kind = cursor.string(), cursor.take("<I")
            value = cursor.value(kind)
            if key == b"general.architecture" and kind == STRING:
                architecture = value.decode("utf-8")
            elif key == b"general.alignment":
                if kind != 4 or value == 0 or value & (value - 1):
                    raise ValueError("general.alignment is not a uint32 power of two")
                alignment = value
        infos = []
        for _ in range(n_tensors):
            name = cursor.string().decode("utf-8")
            dims = tuple(cursor.take("<Q") for _ in range(cursor.take("<I")))
            raw_type, offset = cursor.take("<I"), cursor.take("<Q")
            infos.append((name, dims, raw_type, offset))
        start = -(-cursor.at // alignment) * alignment
        size = len(buffer)
    tensors: dict[str, TensorInfo] = {}
    for name, dims, raw_type, offset in infos:
        try:
            kind = GGMLQuantizationType(raw_type)
        except ValueError:
            raise ValueError(f"tensor {name} has an unknown type {raw_type}") from None
        block, type_size = GGML_QUANT_SIZES[kind]
        if name in tensors:
            raise ValueError(f"tensor {name} appears twice")
        if dims and dims[0] % block:
            raise ValueError(f"tensor {name}: rows of {dims[0]} values are not whole blocks of {block}")
        tensor = TensorInfo(name, kind.name, dims, start + offset, _product(dims) * type_size // block)
        if tensor.offset + tensor.n_bytes > size:
            raise ValueError(f"tensor {name} lies past the end of the file")
        tensors[name] = tensor
    return TensorTable(path, architecture, tensors)
