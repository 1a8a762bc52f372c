"""Unit tests of the course's helper package: the loader, the references, poisoning, comparisons."""

from __future__ import annotations

import numpy as np
import pytest

from labkit.testing import bench, contract, loader, poison, reference
from labkit.testing import cases as paged
from labkit.testing import checks as arrays


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


def test_a_bug_in_a_given_module_loads_the_solution_with_the_edited_module(tmp_path):
    lab_dir = _make_lab(tmp_path, "lab-01-a", "from _checks import LIMIT\n\ndef limit():\n    return LIMIT\n")
    (lab_dir / "_checks.py").write_text("LIMIT = 1\n")
    (lab_dir / "bugs").mkdir()
    (lab_dir / "bugs" / "wrong_limit.py").write_text('"""The limit is 2."""\n\nCAUGHT_BY = ["test_x"]\n'
                                                     'SOURCE = "_checks.py"\nEDIT = ("LIMIT = 1\\n", "LIMIT = 2\\n")\n')
    assert loader.load_impl(lab_dir, "bugs/wrong_limit").limit() == 2
    assert loader.load_impl(lab_dir, "solution").limit() == 1  # the edited module did not stay behind


def test_a_bug_in_shared_given_code_edits_it_for_that_load_only(tmp_path):
    """A bug whose edit is in labkit/block_table.py: the solution, through its lab's given module, calls
    the edited check; labkit's module, and every other load, keep the real one."""
    import sys

    import labkit.block_table

    lab_dir = _make_lab(tmp_path, "lab-01-a", "from _checks import check\n")
    (lab_dir / "_checks.py").write_text("from labkit.block_table import check_block_ids as check\n")
    (lab_dir / "bugs").mkdir()
    (lab_dir / "bugs" / "one_id_unchecked.py").write_text(
        '"""One block in use goes unchecked."""\n\nCAUGHT_BY = ["test_x"]\nSOURCE = "labkit/block_table.py"\n'
        'EDIT = ("    if len(ids) == 0:\\n", "    if len(ids) < 2:\\n")\n')
    real = sys.modules["labkit.block_table"]
    table = np.array([3])  # block 3 of a 3-block cache: one past the end
    loader.load_impl(lab_dir, "bugs/one_id_unchecked").check(table, 1, 4, 3)  # the edited check lets it through
    assert sys.modules["labkit.block_table"] is real is labkit.block_table
    for check in (real.check_block_ids, loader.load_impl(lab_dir, "solution").check):
        with pytest.raises(ValueError, match="block ids outside"):
            check(table, 1, 4, 3)


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


def test_padded_block_table_pads_with_the_null_block():
    table, num_blocks = paged.padded_block_table(np.random.default_rng(2), 9, block_size=4, pad_columns=2)
    assert table.dtype == np.int32 and len(table) == 3 + 2
    assert (table[3:] == paged.NULL_BLOCK).all()  # the padding points at block 0
    assert paged.NULL_BLOCK not in table[:3] and len(set(table[:3].tolist())) == 3  # distinct real blocks
    assert num_blocks == 1 + 3 + 3 and table[:3].max() < num_blocks


@pytest.mark.parametrize("kind", poison.POISON_KINDS)
def test_paged_copy_places_each_token_and_poisons_the_rest(kind):
    rng = np.random.default_rng(3)
    k, v = rng.standard_normal((6, 2, 3)), rng.standard_normal((6, 2, 3))
    table = np.array([4, 1])
    k_cache, v_cache = paged.paged_copy(k, v, table, num_blocks=5, block_size=4, poison=kind)
    assert k_cache.shape == (5, 4, 2, 3)
    for t in range(6):  # token t at [table[t // 4], t % 4]
        assert (k_cache[table[t // 4], t % 4] == k[t]).all() and (v_cache[table[t // 4], t % 4] == v[t]).all()
    valid = poison.valid_slot_mask(5, 4, table, 6)
    value = poison.poison_value(np.float64, kind)
    for cache in (k_cache, v_cache):
        unused = cache[~valid]
        assert unused.size == (5 * 4 - 6) * 6
        assert np.isnan(unused).all() if kind == "nan" else (unused == value).all()
    k16, _ = paged.paged_copy(k, v, table, 5, 4, dtype=np.float16)
    assert k16.dtype == np.float16 and (k16[4, 0] == k[0].astype(np.float16)).all()


def test_read_only_inputs_refuse_writes():
    q, k = paged.read_only(np.zeros(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="read-only"):
        q *= 2.0
    with pytest.raises(ValueError, match="read-only"):
        k[0] = 0.0
    assert paged.read_only(np.zeros(2)).flags.writeable is False


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


def test_dtype_checks_accept_numpy_scalar_types():
    arrays.assert_dtype(np.zeros(2), np.float64)
    arrays.assert_equal(np.arange(3), np.arange(3), dtype=np.int64)


def test_dtype_checks_take_numpy_scalar_types_in_assert_close():
    arrays.assert_close(np.zeros(2), np.zeros(2), atol=0, dtype=np.float64)
    arrays.assert_equal(np.zeros(2, dtype=bool), np.zeros(2, dtype=bool), dtype=np.bool_)
    with pytest.raises(AssertionError, match="dtype float32, expected float64"):
        arrays.assert_close(np.zeros(2, dtype=np.float32), np.zeros(2), atol=0, dtype=np.float64)


def test_assert_equal_names_first_mismatch():
    with pytest.raises(AssertionError, match=r"token 2 \(block 0\): got 9, expected 7"):
        arrays.assert_equal([5, 6, 9], [5, 6, 7], axes=("token",), what="slots", where=lambda i: "block 0")


def test_scattered_block_tables_pad_with_spare_blocks():
    tables, num_blocks = paged.scattered_block_tables(np.random.default_rng(0), [5, 0, 16], 4,
                                                      spare_blocks=2, pad_columns=1)
    assert num_blocks == 2 + 0 + 4 + 2 and tables.shape == (3, 5) and tables.dtype == np.int32
    own = [tables[0, :2], tables[2, :4]]
    used = np.concatenate(own)
    assert len(set(used.tolist())) == 6, "every block belongs to one sequence"
    spare = set(range(num_blocks)) - set(used.tolist())
    assert set(tables[0, 2:].tolist()) | set(tables[1].tolist()) | {int(tables[2, 4])} <= spare
    no_spare, _ = paged.scattered_block_tables(np.random.default_rng(0), [5, 16], 4)
    assert no_spare.shape == (2, 4) and (no_spare[0, 2:] == 0).all()


def test_decode_case_shapes_poison_and_truth():
    torch = pytest.importorskip("torch")
    case = paged.decode_case([5, 9], num_heads=4, num_kv_heads=2, head_dim=8, block_size=4,
                             dtype=torch.float16, seed=3, spare_blocks=1, pad_columns=1)
    assert case.q.shape == (2, 4, 8) and case.q.dtype == torch.float16
    assert case.k_cache.shape == (2 + 3 + 1, 4, 2, 8) and case.block_tables.shape == (2, 4)
    assert case.block_tables.dtype == torch.int32 and case.lens == [5, 9]
    again = paged.decode_case([5, 9], num_heads=4, num_kv_heads=2, head_dim=8, block_size=4,
                              dtype=torch.float16, seed=3, spare_blocks=1, pad_columns=1)
    assert torch.equal(case.v_cache, again.v_cache), "the same seed gives the same case"
    moved = case.to("meta")
    assert moved.k_cache.device.type == "meta" and moved.block_tables.dtype == torch.int32
    case.poison("nan")
    valid = poison.valid_slot_mask(6, 4, case.block_tables.numpy(), case.lens)
    assert valid.sum() == 14 and torch.isnan(case.k_cache[torch.from_numpy(~valid)]).all()
    q, k_cache, v_cache, table, seq_len = case.one(1)
    want = reference.paged_attention_f64(q, k_cache, v_cache, table.numpy(), seq_len)
    np.testing.assert_allclose(case.expected_f64()[1], want, atol=0)
    assert np.isfinite(case.expected_f64()).all(), "the truth reads no poisoned slot"


def test_dense_kv_and_sdpa_decode_match_the_float64_gather():
    torch = pytest.importorskip("torch")
    case = paged.decode_case([7, 7, 7], num_heads=6, num_kv_heads=2, head_dim=8, block_size=4,
                             dtype=torch.float32, seed=1, spare_blocks=2, pad_columns=2)
    k = paged.dense_kv(case.k_cache, case.block_tables, 7)
    v = paged.dense_kv(case.v_cache, case.block_tables, 7, contiguous=False)
    assert k.shape == (3, 2, 7, 8) and k.is_contiguous() and not v.is_contiguous()
    for b in range(3):
        gathered = reference.gather_f64(case.k_cache, case.block_tables[b].numpy(), 7)  # [7, kv_heads, dim]
        np.testing.assert_array_equal(k[b].numpy(), gathered.transpose(1, 0, 2))
    out = paged.sdpa_decode(case.q, k, v)
    assert out.shape == (3, 6, 8)
    np.testing.assert_allclose(out.double().numpy(), case.expected_f64(), atol=1e-5)  # fp32 SDPA vs float64


def test_decode_byte_and_flop_counts_by_hand():
    # Tutorial 03, section 11: batch 1 x 32,768 tokens, 32 query heads over 8 KV heads, D = 128, fp16, blocks of 16.
    assert bench.kv_bytes([32768], 8, 128, 2) == 134_217_728
    assert bench.decode_bytes([32768], 32, 8, 128, 2, 16) == 134_217_728 + 16_384 + 8_192
    assert bench.decode_flops([32768], 32, 128) == 536_870_912
    assert bench.decode_bytes([17, 0], 1, 1, 16, 4, 16) == 2 * 17 * 16 * 4 + 2 * 2 * 16 * 4 + 4 * 2
    assert bench.gb_per_s(3_000_000, 1000.0) == pytest.approx(3.0)


def test_dtype_names_agree_across_numpy_and_torch():
    for spelling in (np.int64, np.dtype("int64"), "int64"):
        assert arrays.dtype_name(spelling) == "int64"
    arrays.assert_dtype(np.zeros(2, dtype=np.int64), np.int64)
    with pytest.raises(AssertionError, match="dtype int32, expected int64"):
        arrays.assert_dtype(np.zeros(2, dtype=np.int32), np.int64)
    torch = pytest.importorskip("torch")
    assert arrays.dtype_name(torch.float16) == arrays.dtype_name(np.float16) == "float16"
    assert arrays.dtype_name(torch.bfloat16) == "bfloat16"


# --------------------------------------------------------------------------- labkit.testing.contract


@pytest.mark.parametrize("name", contract.CACHE_LAYOUTS)
def test_cache_layouts_keep_the_values_and_poison_their_surroundings(name):
    rng = np.random.default_rng(0)
    k, v = rng.standard_normal((5, 4, 2, 8)), rng.standard_normal((5, 4, 2, 8))
    k_view, v_view = contract.CACHE_LAYOUTS[name].apply(k, v)
    np.testing.assert_array_equal(k_view, k)
    np.testing.assert_array_equal(v_view, v)
    assert k_view.strides == v_view.strides and k_view.strides[-1] == k.itemsize
    if name != "contiguous":
        assert not contract.is_contiguous(k_view) and np.shares_memory(k_view, v_view.base)
        assert np.isnan(k_view.base).sum() == 0  # K and V fill their pool: no slot in it is left poisoned


def test_q_and_table_layouts_are_views_with_poison_beside_them():
    torch = pytest.importorskip("torch")
    q = torch.randn(3, 4, 8)
    view = contract.Q_LAYOUTS["q_slice_of_qkv"].apply(q, 2)
    assert torch.equal(view, q) and view.stride() == (8 * 8, 8, 1)
    whole = view.as_strided((3 * 8 * 8,), (1,))  # the qkv buffer the view lies in
    assert torch.isnan(whole).sum() == 3 * 4 * 8  # its K and V parts
    tables = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    wide = contract.TABLE_LAYOUTS["table_column_slice"].apply(tables, 99)
    tall = contract.TABLE_LAYOUTS["table_every_other_row"].apply(tables, 99)
    for view, row_stride in ((wide, 6), (tall, 6)):
        assert torch.equal(view, tables) and view.stride() == (row_stride, 1) and view.dtype == torch.int32
    assert wide.as_strided((12,), (1,))[3:6].tolist() == [99, 99, 99]
    assert tall.as_strided((12,), (1,))[3:6].tolist() == [99, 99, 99]


def test_boundary_lengths_by_name():
    assert contract.boundary_lengths(16) == {"0": 0, "1": 1, "block_size - 1": 15, "block_size": 16,
                                             "block_size + 1": 17}
    named = contract.boundary_lengths(16, segment=48, capacity=112)
    assert named["segment - 1"] == 47 and named["segment + 1"] == 49 and named["2 segments + 3"] == 99
    assert named["capacity (a full table)"] == 112 and max(named.values()) == 112
    assert contract.boundary_lengths(16, segment=16, capacity=20) == {
        "0": 0, "1": 1, "block_size - 1": 15, "block_size": 16, "block_size + 1": 17, "capacity (a full table)": 20}


def test_score_levels_place_the_extremes_against_the_segments():
    assert np.flatnonzero(contract.score_levels("one peak in the first segment", 100, 32)).tolist() == [16]
    peak = contract.score_levels("one peak in the last segment", 100, 32)
    assert np.flatnonzero(peak).tolist() == [98] and peak[98] == 100.0  # the middle of tokens 96..99
    cluster = contract.score_levels("mass clustered in one segment", 100, 32)
    assert np.flatnonzero(cluster).tolist() == list(range(64, 96))
    below = contract.score_levels("one segment far below", 40, 32)
    assert (below[:32] == -1000).all() and (below[32:] == 0).all()
    assert contract.score_levels("neighbours far apart", 3, 32, index=1).tolist() == [-1000.0] * 3
    with pytest.raises(ValueError, match="unknown score pattern"):
        contract.score_levels("spiky", 3, 32)


def test_steer_scores_puts_every_score_near_its_level():
    rng = np.random.default_rng(3)
    num_heads, num_kv_heads, head_dim, block_size = 4, 2, 32, 4
    tables = np.array([[3, 0, 5], [1, 4, 2]])
    seq_lens = [10, 7]
    q = rng.standard_normal((2, num_heads, head_dim))
    k_cache = rng.standard_normal((6, block_size, num_kv_heads, head_dim))
    levels = [np.linspace(-1000, 1000, 10), np.full(7, 50.0)]
    contract.steer_scores(q, k_cache, tables, seq_lens, levels, seed=1)
    for b, n in enumerate(seq_lens):
        keys = reference.gather_f64(k_cache, tables[b], n)  # [n, kv_heads, dim]
        for h in range(num_heads):
            scores = keys[:, h // 2] @ q[b, h] / np.sqrt(head_dim)
            assert np.abs(scores - levels[b]).max() < 20, (b, h, scores - levels[b])
