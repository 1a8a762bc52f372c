"""Unit tests of the course's helper package: the loader, the references, poisoning, comparisons."""

from __future__ import annotations

import numpy as np
import pytest

from labkit.testing import cases as paged
from labkit.testing import checks as arrays
from labkit.testing import loader, poison, reference


def _make_lab(root, name, body):
    lab_dir = root / "phase-99-x" / "labs" / name
    lab_dir.mkdir(parents=True)
    (lab_dir / "test_lab.py").write_text("")
    (lab_dir / "solution.py").write_text(body)
    return lab_dir


def test_each_lab_gets_its_own_module(tmp_path):
    a = _make_lab(tmp_path, "lab-01-a", "WHO = 'a'\n")
    b = _make_lab(tmp_path, "lab-02-b", "WHO = 'b'\n")
    assert loader.load_impl(a, "solution").WHO == "a"
    assert loader.load_impl(b, "solution").WHO == "b"
    assert loader.load_impl(a, "solution") is loader.load_impl(a, "solution")


def test_lab_local_imports_do_not_leak_between_labs(tmp_path):
    a = _make_lab(tmp_path, "lab-01-a", "from helper import VALUE\n")
    b = _make_lab(tmp_path, "lab-02-b", "from helper import VALUE\n")
    (a / "helper.py").write_text("VALUE = 1\n")
    (b / "helper.py").write_text("VALUE = 2\n")
    assert loader.load_impl(a, "solution").VALUE == 1
    assert loader.load_impl(b, "solution").VALUE == 2


def test_unknown_impl_lists_what_the_folder_has(tmp_path):
    lab_dir = _make_lab(tmp_path, "lab-01-a", "")
    (lab_dir / "starter.py").write_text("")
    (lab_dir / "bugs").mkdir()
    (lab_dir / "bugs" / "off_by_one.py").write_text("")
    with pytest.raises(loader.ImplNotFoundError) as err:
        loader.impl_path(lab_dir, "nope")
    assert "bugs/off_by_one, solution, starter" in str(err.value)
    assert loader.impl_path(lab_dir, "bugs/off_by_one").name == "off_by_one.py"


@pytest.mark.parametrize("impl", ["../lab-02-b/solution", "test_lab", "/etc/passwd"])
def test_impl_must_be_a_module_inside_the_lab(tmp_path, impl):
    lab_dir = _make_lab(tmp_path, "lab-01-a", "")
    _make_lab(tmp_path, "lab-02-b", "")
    with pytest.raises(loader.ImplNotFoundError):
        loader.impl_path(lab_dir, impl)


def test_attention_f64_by_hand():
    # Two keys with scores 0 and ln(3) * sqrt(d)/sqrt(d): weights 1/4 and 3/4.
    d = 4
    q = np.zeros(d)
    q[0] = np.log(3.0) * np.sqrt(d)
    k = np.array([[0.0, 0, 0, 0], [1.0, 0, 0, 0]])
    v = np.array([[4.0, 0, 0, 0], [0.0, 8, 0, 0]])
    np.testing.assert_allclose(reference.attention_f64(q, k, v), [1.0, 6.0, 0, 0], atol=1e-12)


def test_attention_f64_gqa_and_zero_keys():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((4, 8)), rng.standard_normal((5, 2, 8)), rng.standard_normal((5, 2, 8))
    out = reference.attention_f64(q, k, v)
    for h in range(4):  # heads 0,1 read KV head 0; heads 2,3 read KV head 1
        np.testing.assert_allclose(out[h], reference.attention_f64(q[h], k[:, h // 2], v[:, h // 2]), atol=1e-12)
    assert not np.isnan(reference.attention_f64(q, k[:0], v[:0])).any()


def test_attention_f64_survives_logits_past_exp_range():
    q = np.array([1000.0, 0.0])
    k = np.array([[1.0, 0.0], [2.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(reference.attention_f64(q, k, v, scale=1.0), [0.0, 1.0], atol=1e-12)


def test_poison_hits_exactly_the_unused_slots():
    tables, num_blocks = paged.random_block_tables(np.random.default_rng(1), [5, 16], block_size=4)
    cache = np.zeros((num_blocks, 4, 1))
    poison.poison_unused_slots(cache, tables, [5, 16])
    valid = poison.valid_slot_mask(num_blocks, 4, tables, [5, 16])
    assert valid.sum() == 5 + 16
    assert (cache[valid] == 0).all() and (cache[~valid] == 1e6).all()


def test_assert_close_says_where():
    expected = np.zeros((4, 8))
    actual = expected.copy()
    actual[2, 5] = 0.5
    with pytest.raises(AssertionError, match=r"head 2, dim 5.*\n.*got 0\.5.*\n.*heads that differ: 2"):
        arrays.assert_close(actual, expected, atol=1e-6, axes=("head", "dim"))
    actual[1, 1] = np.nan
    with pytest.raises(AssertionError, match="non-finite"):
        arrays.assert_close(actual, expected, atol=1e-6, axes=("head", "dim"))
    arrays.assert_close(expected + 1e-9, expected, atol=1e-6)


def test_dtype_checks_take_numpy_scalar_types():
    arrays.assert_close(np.zeros(2), np.zeros(2), atol=0, dtype=np.float64)
    arrays.assert_equal(np.zeros(2, dtype=bool), np.zeros(2, dtype=bool), dtype=np.bool_)
    with pytest.raises(AssertionError, match="dtype float32, expected float64"):
        arrays.assert_close(np.zeros(2, dtype=np.float32), np.zeros(2), atol=0, dtype=np.float64)


def test_assert_equal_names_first_mismatch():
    with pytest.raises(AssertionError, match=r"token 2 \(block 0\): got 9, expected 7"):
        arrays.assert_equal([5, 6, 9], [5, 6, 7], axes=("token",), what="slots", where=lambda i: "block 0")
