"""labkit.integers, the integer check that the labs' given code shares: every integer type numpy has
is taken, and handed back as the same value in a Python int; bools, floats and everything else are
refused with a message that names the argument."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from labkit import integers
from labkit.integers import as_int

NUMPY_INTEGERS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)


@pytest.mark.parametrize("kind", NUMPY_INTEGERS, ids=lambda kind: kind.__name__)
def test_numpy_integers_of_every_width_come_back_as_python_ints(kind):
    expected = int(np.iinfo(kind).max)  # the widest value the type holds, as Python counts it
    got = as_int(kind(expected), "n")
    assert type(got) is int and got == expected


def test_a_python_int_comes_back_as_itself():
    big = 2**70  # past every numpy width
    assert as_int(big, "n") == big and type(as_int(7, "n")) is int
    assert as_int(-3, "n") == -3


def test_the_result_cannot_wrap_around_like_a_narrow_numpy_type():
    """The reason for handing back a Python int: arithmetic on an int8 wraps silently."""
    assert as_int(np.int8(120), "n") + 10 == 130


@pytest.mark.parametrize("value", [True, False, np.True_, 16.0, np.float32(16), np.float64(2), 1.5, Fraction(4, 1),
                                   "16", None, np.array([3]), np.array(3), [3], complex(3, 0)],
                         ids=repr)
def test_anything_but_an_integer_is_refused_naming_the_argument(value):
    with pytest.raises(ValueError, match=r"^paged_decode: num_splits must be an int, got "):
        as_int(value, "paged_decode: num_splits")


def test_the_lower_bound_is_checked_and_named():
    assert as_int(np.int32(0), "seq_len", low=0) == 0
    with pytest.raises(ValueError, match=r"^seq_len must be an int >= 0, got -1$"):
        as_int(-1, "seq_len", low=0)
    with pytest.raises(ValueError, match=r"^num_splits must be an int >= 1, got np.int64\(0\)$"):
        as_int(np.int64(0), "num_splits", low=1)
    with pytest.raises(ValueError, match=r"^num_splits must be an int >= 1, got True$"):
        as_int(True, "num_splits", low=1)  # a bool is refused as a bool, not compared as a 1


def test_importing_it_imports_no_numpy():
    """Lab 02-01 runs with the standard library alone: the check knows numpy's integers without importing numpy."""
    # The module alone, as the grading sandbox stages it (labkit's own __init__ imports numpy).
    code = ("import runpy, sys; runpy.run_path(sys.argv[1]); "
            "assert 'numpy' not in sys.modules, 'numpy imported'")
    subprocess.run([sys.executable, "-c", code, str(Path(integers.__file__))], check=True)


def test_an_optional_count_takes_none_and_says_so_when_refused():
    assert as_int(None, "num_splits", low=1, none_ok=True) is None
    assert as_int(np.int64(3), "num_splits", low=1, none_ok=True) == 3
    with pytest.raises(ValueError, match=r"^paged_decode: num_splits must be None or an int >= 1, got 0$"):
        as_int(0, "paged_decode: num_splits", low=1, none_ok=True)
    with pytest.raises(ValueError, match=r"^num_splits must be an int >= 1, got None$"):
        as_int(None, "num_splits", low=1)  # None is a count only where the caller says so

