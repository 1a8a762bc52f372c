"""Lab 02-03, your work: the KV memory budget, or how many blocks a GPU gets.

The arithmetic vLLM (v0.10.1) does once at start-up, before it serves anything:

1. what one token costs: K and V, in every layer, for every KV head (``kv_bytes_per_token``), and
   what one block costs in one layer (``page_size_bytes``, vLLM's ``AttentionSpec.page_size_bytes``);
2. how much memory is left for the cache: the requested share of the card
   (``total * gpu_memory_utilization``) minus what is not KV cache: the weights, the peak activation
   of a profiling forward pass, and memory taken outside torch (``available_kv_memory``, the
   worker's ``determine_available_memory``);
3. how many whole blocks fit (``num_gpu_blocks``, ``get_num_blocks`` of ``kv_cache_utils.py``) and
   how many requests of the longest length that makes (``max_concurrency``).

A model's shape comes as a dict with the keys of its Hugging Face ``config.json``. All memory
sizes are integers, in bytes. Implement the functions in order (README "What to implement", steps
1-6), then run ``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-03-kv-memory-budget``.
"""

from __future__ import annotations

# Bytes per element of the dtypes a KV cache may have. vLLM stores its fp8 caches as one byte per
# element whatever the fp8 flavour; "auto" means the model's own dtype.
DTYPE_BYTES = {
    "float32": 4, "float": 4,
    "float16": 2, "half": 2,
    "bfloat16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}


# ----------------------------------------------------------------------------- given: input checks
# Call these from your functions: bad input becomes a ValueError that names what is wrong.


def _config_int(config, key, default=None) -> int:
    """``config[key]`` as a positive int; ``default`` when the key is absent or None."""
    value = config.get(key) if isinstance(config, dict) else None
    if value is None:
        if default is None:
            raise ValueError(f"config[{key!r}] is missing: the model's config.json must give it")
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config[{key!r}] must be a positive integer, got {value!r}")
    return value


def _check_bytes(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer number of bytes, got {value!r}")
    return value


def _check_block_size(block_size) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return block_size


def _model_dtype(config) -> str:
    """The model's dtype name: ``config.json`` calls it ``torch_dtype`` (``dtype`` in transformers 5)."""
    name = config.get("dtype") or config.get("torch_dtype")
    if name is None:
        raise ValueError("cache_dtype='auto' needs the model's dtype: config['torch_dtype'] (or 'dtype') is missing")
    return str(name).removeprefix("torch.")


def _dtype_bytes(name: str) -> int:
    if name not in DTYPE_BYTES:
        raise ValueError(f"cache_dtype {name!r} is not one of {sorted(DTYPE_BYTES)} (or 'auto')")
    return DTYPE_BYTES[name]


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
    down to a whole byte; from that come the weights, the profiling forward's peak activation and
    what grew outside torch. ValueError naming ``gpu_memory_utilization`` when it is outside (0, 1]
    or asks for more than ``free_memory`` (the memory free when the engine started).
    """
    raise NotImplementedError(
        "available_kv_memory: not implemented yet (README step 4: int(total * utilization) - weights - peak "
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
