"""labkit: what the labs share, in one folder per audience.

- ``labkit.testing``: what a lab's tests, demos and benchmarks use (loading the implementation
  under test, float64 references, checks, poison, case builders, the cases an API's contract
  names, the Triton switch, benchmark helpers). Its everyday names are re-exported here: ``labkit.assert_close(...)``.
- ``labkit.course``: the course itself: the registry of labs, hints, the bug galleries.
- ``labkit.cli``: the ``labs`` command.
- ``labkit.grader``: ``labs grade``, which runs the instructor's tests on students' work.
"""

from labkit.testing import bench, cases, contract, triton_env
from labkit.testing.checks import (
    assert_close,
    assert_dtype,
    assert_equal,
    assert_refused,
    assert_value,
    max_abs_diff,
    require,
)
from labkit.testing.loader import impl_name, load_impl, load_reference, load_sibling
from labkit.testing.poison import POISON_KINDS, poison_unused_slots, poison_value, uninitialized_memory_is_nan
from labkit.testing.reference import attention_f64, gather_f64, paged_attention_f64, softmax_f64, to_f64

__all__ = [
    "POISON_KINDS",
    "assert_close",
    "assert_dtype",
    "assert_equal",
    "assert_refused",
    "assert_value",
    "attention_f64",
    "bench",
    "cases",
    "contract",
    "gather_f64",
    "impl_name",
    "load_impl",
    "load_reference",
    "load_sibling",
    "max_abs_diff",
    "paged_attention_f64",
    "poison_unused_slots",
    "poison_value",
    "require",
    "softmax_f64",
    "to_f64",
    "triton_env",
    "uninitialized_memory_is_nan",
]
