"""Lab 02-03, your work: the KV memory budget, or how many blocks a GPU gets.

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
sizes are integers, in bytes. Implement the functions in order (README "Steps", steps
1-6), then run ``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-03-kv-memory-budget``.
"""

from __future__ import annotations

import _config
from _config import (  # noqa: F401
    _check_block_size,
    _check_bytes,
    _check_utilization,
    _config_int,
    _dtype_bytes,
    _model_dtype,
)

# Given in _config.py (read it, do not edit it); each raises a ValueError that names what is wrong:
#   DTYPE_BYTES                              bytes per element of each cache dtype name ("fp8": 1, ...)
#   _config_int(config, key, default=None)   config[key] as a positive int; default when absent or None
#   _model_dtype(config)                     the model's dtype name (torch_dtype, or dtype in transformers 5)
#   _dtype_bytes(name)                       DTYPE_BYTES[name]
#   _check_bytes(name, value)                a non-negative int of bytes
#   _check_utilization(value)                a real number (numpy floats too) as a Python float, for you to
#                                            check against (0, 1] and to compute with
#   _check_block_size(block_size)            a positive int
DTYPE_BYTES = _config.DTYPE_BYTES


# ----------------------------------------------------------------------------- steps 1-3: one token, one block


def cache_dtype_bytes(config, cache_dtype="auto"):
    """Bytes per element of the KV cache: ``cache_dtype``'s, or the model's own dtype (``config``'s
    ``torch_dtype``, or ``dtype`` in transformers 5) when it is ``"auto"``.

    ``DTYPE_BYTES`` has the sizes; ``_model_dtype`` and ``_dtype_bytes`` raise the ValueErrors.
    """
    raise NotImplementedError(
        "cache_dtype_bytes: not implemented yet (README step 1: 'auto' means the model's dtype, then DTYPE_BYTES)"
    )


def kv_bytes_per_token(config, cache_dtype="auto"):
    """Bytes of KV cache one token takes in the whole model: a K and a V vector for every KV head of
    every layer.

    From ``config``: ``num_hidden_layers``; ``num_key_value_heads`` (absent: as many as
    ``num_attention_heads``, which it must divide); ``head_dim`` (absent or None:
    ``hidden_size // num_attention_heads``). Leave ``config`` unchanged; ValueError naming the key
    for a missing or bad one (``_config_int`` does that).
    """
    raise NotImplementedError(
        "kv_bytes_per_token: not implemented yet (README step 2: 2 * layers * KV heads * head_dim * dtype bytes)"
    )


def page_size_bytes(config, block_size, cache_dtype="auto"):
    """Bytes of one block of ``block_size`` tokens in one layer, K and V (vLLM's page size).
    ValueError naming ``block_size`` when it is not a positive integer."""
    raise NotImplementedError(
        "page_size_bytes: not implemented yet (README step 3: 2 * block_size * KV heads * head_dim * dtype bytes)"
    )


# ----------------------------------------------------------------------------- step 4: the budget


def available_kv_memory(total_memory, free_memory, gpu_memory_utilization, weights_memory, peak_activation,
                        non_torch_memory=0):
    """Bytes left for the KV cache, the way vLLM's worker computes them (an int; may be negative).

    The engine may use ``gpu_memory_utilization`` (in (0, 1]) of the card's ``total_memory``, rounded
    up to a whole byte (``math.ceil``, as vLLM's ``request_memory``); from that come the weights, the
    profiling forward's peak activation and what grew outside torch. ValueError naming
    ``gpu_memory_utilization`` when it is not a number (``_check_utilization``, which takes any real
    number, numpy floats of every width included, and returns it as a Python float), is outside
    (0, 1] or asks for more than ``free_memory`` (the memory free when the engine started).
    """
    raise NotImplementedError(
        "available_kv_memory: not implemented yet (README step 4: ceil(total * utilization) - weights - peak "
        "activation - non-torch, after checking the free memory covers the request)"
    )


# ----------------------------------------------------------------------------- steps 5-6: blocks and concurrency


def num_gpu_blocks(available_memory, config, block_size, cache_dtype="auto"):
    """Whole blocks that fit in ``available_memory`` bytes, a block holding ``block_size`` tokens in
    every layer; 0, never negative, when there is not enough memory for one."""
    raise NotImplementedError(
        "num_gpu_blocks: not implemented yet (README step 5: available // page_size // num_layers, at least 0)"
    )


def max_concurrency(num_blocks, block_size, max_model_len):
    """How many requests of ``max_model_len`` tokens ``num_blocks`` blocks hold at once, as a float.
    A request takes whole blocks."""
    raise NotImplementedError(
        "max_concurrency: not implemented yet (README step 6: num_blocks / ceil(max_model_len / block_size))"
    )
