"""Lab 02-03, given: the dtypes' sizes, reading a model's ``config.json`` and the input checks.

Written once, here; ``starter.py`` and ``solution.py`` both import it. Each check turns bad input
into a ValueError that names the key or the argument.
"""

from __future__ import annotations

import numbers

# Bytes per element of the dtypes a KV cache may have. vLLM stores its fp8 caches as one byte per
# element whatever the fp8 flavour; "auto" means the model's own dtype.
DTYPE_BYTES = {
    "float32": 4, "float": 4,
    "float16": 2, "half": 2,
    "bfloat16": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}


def _config_int(config, key, default=None) -> int:
    """``config[key]`` as a positive int; ``default`` when the key is absent or None."""
    value = config.get(key) if isinstance(config, dict) else None
    if value is None:
        if default is None:
            what = "is missing" if not isinstance(config, dict) or key not in config else "is None"
            raise ValueError(f"config[{key!r}] {what}: the model's config.json must give it")
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config[{key!r}] must be a positive integer, got {value!r}")
    return value


def _check_bytes(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer number of bytes, got {value!r}")
    return value


def _check_utilization(value) -> float:
    """A share of the card, as a real number (an int, a float, a numpy float of any width; never a
    bool), handed back as a Python float. A string or None would fail inside the caller's comparison
    with a TypeError; a numpy float32 or float16 kept as it came would multiply the card's bytes in its
    own precision (float32 is a thousand bytes off on an 80 GiB card, float16 overflows to infinity).
    The range, (0, 1], is the caller's to check, and NaN lies in no range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"gpu_memory_utilization must be a number in (0, 1], got {value!r}")
    return float(value)


def _check_block_size(block_size) -> int:
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    return block_size


def _model_dtype(config) -> str:
    """The model's dtype name: ``config.json`` calls it ``torch_dtype`` (``dtype`` in transformers 5)."""
    if not isinstance(config, dict):  # cache_dtype_bytes reads nothing else of it
        raise ValueError(f"config must be a dict of the model's config.json, got {type(config).__name__}")
    name = config.get("dtype") or config.get("torch_dtype")
    if name is None:
        raise ValueError("cache_dtype='auto' needs the model's dtype: config['torch_dtype'] (or 'dtype') is missing")
    return str(name).removeprefix("torch.")


def _dtype_bytes(name: str) -> int:
    if name not in DTYPE_BYTES:
        raise ValueError(f"cache_dtype {name!r} is not one of {sorted(DTYPE_BYTES)} (or 'auto')")
    return DTYPE_BYTES[name]
