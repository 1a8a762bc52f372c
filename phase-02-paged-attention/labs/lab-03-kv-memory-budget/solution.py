"""Lab 02-03, reference solution: the KV memory budget, or how many blocks a GPU gets.

The arithmetic vLLM (v0.22.1) does once at start-up, before it serves anything:

1. what one token costs: K and V, in every layer, for every KV head (``kv_bytes_per_token``), and
   what one block costs in one layer (``page_size_bytes``, vLLM's ``AttentionSpec.page_size_bytes``);
2. how much memory is left for the cache: the requested share of the card
   (``total * gpu_memory_utilization``) minus what is not KV cache: the weights, the peak activation
   of a profiling run (a forward pass and a sampling step), and memory taken outside torch (``available_kv_memory``, the
   worker's ``determine_available_memory``);
3. how many whole blocks fit (``num_gpu_blocks``, ``get_num_blocks`` of ``kv_cache_utils.py``) and
   how many requests of the longest length that makes (``max_concurrency``).

A model's shape comes as a dict with the keys of its Hugging Face ``config.json``. All memory
sizes are integers, in bytes.
"""

from __future__ import annotations

import math

import _config
from _config import _check_block_size, _check_bytes, _check_utilization, _config_int, _dtype_bytes, _model_dtype

# Given in _config.py: the bytes per element of each cache dtype ("auto": the model's own), reading
# config.json (_config_int, _model_dtype, _dtype_bytes) and the input checks.
DTYPE_BYTES = _config.DTYPE_BYTES


# ----------------------------------------------------------------------------- steps 1-2: one token, one block


def _kv_shape(config) -> tuple[int, int, int]:
    """(num_layers, num_kv_heads, head_dim) of a model config."""
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict of the model's config.json, got {type(config).__name__}")
    num_layers = _config_int(config, "num_hidden_layers")
    num_heads = _config_int(config, "num_attention_heads")
    # No num_key_value_heads: every query head has its own KV head (multi-head attention, OPT, GPT-2).
    num_kv_heads = _config_int(config, "num_key_value_heads", default=num_heads)
    if num_heads % num_kv_heads:
        raise ValueError(f"config['num_key_value_heads'] ({num_kv_heads}) must divide "
                         f"config['num_attention_heads'] ({num_heads})")
    # An explicit head_dim wins: some models (Gemma, Qwen3) do not use hidden_size // num_heads.
    head_dim = config.get("head_dim")
    if head_dim is None:
        hidden_size = _config_int(config, "hidden_size")
        if hidden_size % num_heads:
            raise ValueError(f"config['hidden_size'] ({hidden_size}) is not a multiple of "
                             f"config['num_attention_heads'] ({num_heads}): give config['head_dim']")
        head_dim = hidden_size // num_heads
    else:
        head_dim = _config_int(config, "head_dim")
    return num_layers, num_kv_heads, head_dim


def cache_dtype_bytes(config, cache_dtype="auto"):
    """Bytes per element of the KV cache: ``cache_dtype``'s, or the model's when it is ``"auto"``."""
    return _dtype_bytes(_model_dtype(config) if cache_dtype == "auto" else cache_dtype)


def kv_bytes_per_token(config, cache_dtype="auto"):
    """Bytes of KV cache one token takes in the whole model: a K and a V vector per KV head, per layer."""
    num_layers, num_kv_heads, head_dim = _kv_shape(config)
    return 2 * num_layers * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)


def page_size_bytes(config, block_size, cache_dtype="auto"):
    """Bytes of one block of ``block_size`` tokens in one layer (K and V): vLLM's page size."""
    block_size = _check_block_size(block_size)
    _, num_kv_heads, head_dim = _kv_shape(config)
    return 2 * block_size * num_kv_heads * head_dim * cache_dtype_bytes(config, cache_dtype)


# ----------------------------------------------------------------------------- step 3: the budget


def available_kv_memory(total_memory, free_memory, gpu_memory_utilization, weights_memory, peak_activation,
                        non_torch_memory=0):
    """Bytes left for the KV cache, the way vLLM's worker computes them (may be negative).

    The engine may use ``gpu_memory_utilization`` of the card's *total* memory. Out of that come the
    weights, the peak activation of the profiling run, and what grew outside torch (CUDA
    context, communication buffers). What other processes hold is not subtracted: it must fit in the
    rest of the card, which is why a utilization the free memory cannot cover is refused.
    """
    total_memory, free_memory = _check_bytes("total_memory", total_memory), _check_bytes("free_memory", free_memory)
    weights_memory = _check_bytes("weights_memory", weights_memory)
    peak_activation = _check_bytes("peak_activation", peak_activation)
    non_torch_memory = _check_bytes("non_torch_memory", non_torch_memory)
    gpu_memory_utilization = _check_utilization(gpu_memory_utilization)
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}")
    if free_memory > total_memory:
        raise ValueError(f"free_memory ({free_memory}) cannot exceed total_memory ({total_memory})")
    requested = math.ceil(total_memory * gpu_memory_utilization)  # whole bytes, rounded up as vLLM does
    if free_memory < requested:
        raise ValueError(f"gpu_memory_utilization {gpu_memory_utilization} asks for {requested} bytes, but only "
                         f"{free_memory} are free: lower it or free the GPU")
    return requested - (weights_memory + peak_activation + non_torch_memory)


# ----------------------------------------------------------------------------- step 4: blocks and concurrency


def num_gpu_blocks(available_memory, config, block_size, cache_dtype="auto"):
    """Whole blocks that fit in ``available_memory`` bytes, a block holding ``block_size`` tokens in
    every layer; never negative."""
    if isinstance(available_memory, bool) or not isinstance(available_memory, int):
        raise ValueError(f"available_memory must be an integer number of bytes, got {available_memory!r}")
    num_layers = _kv_shape(config)[0]
    # Each layer gets its own tensor of num_blocks pages: the memory is split by layer, then by page.
    return max(available_memory // page_size_bytes(config, block_size, cache_dtype) // num_layers, 0)


def max_concurrency(num_blocks, block_size, max_model_len):
    """How many requests of ``max_model_len`` tokens the blocks hold at once (a float, as vLLM logs it).

    A request takes whole blocks: ``ceil(max_model_len / block_size)`` of them."""
    block_size = _check_block_size(block_size)
    if isinstance(num_blocks, bool) or not isinstance(num_blocks, int) or num_blocks < 0:
        raise ValueError(f"num_blocks must be a non-negative integer, got {num_blocks!r}")
    if isinstance(max_model_len, bool) or not isinstance(max_model_len, int) or max_model_len < 1:
        raise ValueError(f"max_model_len must be a positive integer, got {max_model_len!r}")
    blocks_per_request = -(-max_model_len // block_size)
    return num_blocks / blocks_per_request
