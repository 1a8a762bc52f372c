"""labkit: what the labs share.

- ``registry``: the labs, in study order.
- ``loader``: ``LAB_IMPL`` -> the module under test.
- ``reference``: float64 brute-force attention, the tests' truth.
- ``arrays``: poisoning unused cache slots, comparisons that say where arrays differ.
- ``triton_env``: Triton on a GPU, or through its interpreter on a CPU.
"""

from labkit.arrays import assert_close, assert_equal, max_abs_diff, poison_unused_slots
from labkit.loader import impl_name, load_impl, load_sibling
from labkit.reference import attention_f64, gather_f64, paged_attention_f64, to_f64

__all__ = [
    "assert_close",
    "assert_equal",
    "attention_f64",
    "gather_f64",
    "impl_name",
    "load_impl",
    "load_sibling",
    "max_abs_diff",
    "paged_attention_f64",
    "poison_unused_slots",
    "to_f64",
]
