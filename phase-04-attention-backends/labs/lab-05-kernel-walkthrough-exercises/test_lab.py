"""Lab 04-05: the exercises of the paged-attention kernel walkthrough.

Exercises 1-2 are numpy and integer arithmetic: their tests run with numpy alone.
Exercise 3's tests take torch and triton from the ``torch`` fixture, which skips
them (with the install command) when those are missing; through Triton's
interpreter they run on a CPU. The CUDA test needs a GPU, nvcc and ninja.

Every expected value is computed here, by brute force or by hand, never by
another function of the implementation under test, and before the call; numpy
inputs are handed over read-only, torch inputs are checked unchanged afterwards.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import labkit
from labkit import assert_close, assert_equal, assert_value, contract, triton_env
from labkit.testing import seam
from labkit.testing.cases import random_block_tables

DEFAULT_SMEM = 49_152  # 48 KiB
H100_OPTIN_SMEM = 232_448  # 227 KiB

# ---------------------------------------------------------------------------
# Exercise 1: block-table arithmetic
# ---------------------------------------------------------------------------


def brute_blocks(seq_len: int, block_size: int) -> int:
    """Count the distinct logical blocks that the tokens fall in."""
    return len({t // block_size for t in range(seq_len)})


def brute_slots(table, seq_len: int, block_size: int, width: int) -> list[int]:
    """Slot of each token, one token at a time; -1 for the padding up to ``width``."""
    out = []
    for t in range(width):
        if t < seq_len:
            physical = int(table[t // block_size])
            out.append(physical * block_size + t % block_size)
        else:
            out.append(-1)
    return out


def read_only(*arrays):
    """numpy copies the function under test cannot write into (a write raises ValueError)."""
    out = []
    for a in arrays:
        a = np.array(a)
        a.flags.writeable = False
        out.append(a)
    return out


def test_blocks_per_seq_is_the_ceiling(lab):
    """ceil(seq_len / block_size) per sequence, 0 for an empty one, as int64.

    Catches: floor division (140 tokens in blocks of 16 -> 8, dropping 12 tokens: ``floor_blocks``),
    and ``seq_len // block_size + 1`` (one block too many at exact multiples and at 0)."""
    seq_lens = [0, 1, 15, 16, 17, 60, 140, 160]
    for block_size in (1, 3, 16, 32):
        expected = np.array([brute_blocks(n, block_size) for n in seq_lens])
        (lens,) = read_only(np.array(seq_lens, dtype=np.int32))
        got = lab.blocks_per_seq(lens, block_size)
        assert_equal(got, expected, axes=("sequence",), what=f"blocks_per_seq, block_size={block_size}",
                     dtype=np.int64)


@pytest.mark.parametrize("pad_columns", [0, 2], ids=["tight", "padded"])
@pytest.mark.parametrize("block_size", [1, 3, 16, 32])
def test_slot_mapping_matches_brute_force(lab, block_size, pad_columns):
    """The slot of every token of every sequence through scattered block tables; -1 past
    seq_len; int64. Tables exactly as wide as the longest sequence needs, or with two more
    padding columns; int32 ids, handed over read-only.

    Catches: skipping the table (slot = t, the logical position: ``logical_slot``), the wrong
    stride (``block * max_blocks``), offset and block swapped, padding filled with 0 (a real
    slot: ``pad_slot_zero``), a width check that wants one block too many (refuses a tight
    table at an exact multiple: ``table_check_one_block_too_many``), a table written in place
    (``table_clamped_in_place``)."""
    rng = np.random.default_rng(block_size)
    seq_lens = np.array([0, 1, block_size, block_size + 1, 5 * block_size - 1, 37, 6 * block_size, 2])
    tables, _ = random_block_tables(rng, seq_lens, block_size, pad=0)
    tables = np.concatenate([tables, np.zeros((len(seq_lens), pad_columns), dtype=tables.dtype)], axis=1)
    width = int(seq_lens.max())
    expected = np.array([brute_slots(tables[s], n, block_size, width) for s, n in enumerate(seq_lens)])
    tables, seq_lens = read_only(tables, seq_lens)
    got = lab.slot_mapping(tables, seq_lens, block_size)
    assert_equal(got, expected, axes=("sequence", "token"), what=f"slot_mapping, block_size={block_size}",
                 dtype=np.int64)


def test_slot_mapping_of_block_ids_past_2_31_slots(lab):
    """A cache of more than 2**31 slots: block 2**27 of blocks of 32 tokens starts at slot
    2**32. int32 block ids times the block size overflow int32, so the slots must be computed
    in int64. Catches ``slots_in_int32`` (the slots wrap around to small numbers)."""
    big = 2**27
    expected = np.array([[big * 32 + t for t in range(32)] + [5 * 32]], dtype=np.int64)
    tables, lens = read_only(np.array([[big, 5]], dtype=np.int32), np.array([33]))
    got = lab.slot_mapping(tables, lens, 32)
    assert_equal(got, expected, axes=("sequence", "token"), what="slot_mapping, block 2**27", dtype=np.int64)


def test_slot_mapping_pads_with_minus_one(lab):
    """Positions at or past seq_len hold -1 exactly: slot 0 belongs to a real token.

    Catches: padding with 0, which would route a padding write into block 0."""
    tables, lens = read_only([[4, 0], [1, 0]], [3, 0])
    got = np.asarray(lab.slot_mapping(tables, lens, 4))
    assert_value(got.shape, (2, 3), what="slot_mapping(tables, seq_lens [3, 0], 4).shape: [num_seqs, max(seq_lens)]")
    assert_equal(got, np.array([[16, 17, 18], [-1, -1, -1]]), axes=("sequence", "token"), what="slot_mapping")


def test_slot_mapping_checks_the_blocks_a_sequence_uses(lab):
    """A negative id among the entries a sequence needs is refused, the last of them and -1 included;
    a negative id in the padding past them is any value (the slots are the brute force's); an empty
    batch is a [0, 0] array.

    Catches: the ids checked over one entry too few (the last block a sequence needs unchecked) or
    one too many (valid padding refused), -1 let through, an empty batch given a column."""
    tables, lens = np.array([[3, 5, -1], [4, 2, 6]]), np.array([5, 9])  # blocks of 4: 2 and 3 needed
    expected = np.array([brute_slots(tables[s], n, 4, 9) for s, n in enumerate(lens)])
    got = lab.slot_mapping(*read_only(tables, lens), 4)
    assert_equal(got, expected, axes=("sequence", "token"), what="slot_mapping with -1 as the padding of sequence 0",
                 dtype=np.int64)
    bad = tables.copy()
    bad[1, 2] = -1  # the last of the 3 blocks sequence 1 needs
    with pytest.raises(ValueError, match="sequence 1"):
        lab.slot_mapping(*read_only(bad, lens), 4)
        pytest.fail("slot_mapping with -1 as the last block sequence 1 needs: no ValueError naming sequence 1")
    empty = np.asarray(lab.slot_mapping(*read_only(np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.int64)), 4))
    assert_value(empty.shape, (0, 0), what="slot_mapping of no sequences: the shape [0, max(seq_lens) = 0]")


# The source's exercise lists blocks [5, 2, 7, 1] for 140 tokens and [3, 6] for 60 tokens in
# blocks of 16: 140 tokens need ceil(140/16) = 9 blocks and 60 need 4. The consistent version:
SOURCE_TABLES = np.array([[5, 2, 7, 1, 9, 11, 4, 8, 13, 0],
                          [3, 6, 10, 12, 0, 0, 0, 0, 0, 0]])
SOURCE_LENS = np.array([140, 60])


def test_slot_mapping_of_the_corrected_source_example(lab):
    """Hand-checked slots of the corrected example: 9 blocks for 140 tokens, 4 for 60.

    Catches the same bugs as the brute-force test, on figures the README works out by hand."""
    tables, lens = read_only(SOURCE_TABLES, SOURCE_LENS)
    assert_equal(lab.blocks_per_seq(lens, 16), np.array([9, 4]), axes=("sequence",), what="blocks_per_seq")
    slots = np.asarray(lab.slot_mapping(tables, lens, 16))
    assert_value(slots.shape, (2, 140), what="slot_mapping of the corrected example: the shape [num_seqs, max_len]")
    # token 0 -> block 5; token 17 -> logical 1 = physical 2, offset 1; token 139 -> logical 8 = physical 13, offset 11
    checks = {(0, 0): 80, (0, 17): 33, (0, 64): 144, (0, 139): 219, (1, 0): 48, (1, 59): 203, (1, 60): -1}
    for (s, t), slot in checks.items():
        assert_value(int(slots[s, t]), slot,
                     what=f"slot_mapping of the corrected example, sequence {s}, token {t} (README's table)")


def test_slot_mapping_rejects_the_source_tables(lab):
    """The source's own table (4 blocks for 140 tokens) is refused with a message, not read past.

    Catches: silently gathering garbage (or padding) for the tokens that have no block."""
    bad = np.array([[5, 2, 7, 1, 0, 0, 0, 0], [3, 6, 0, 0, 0, 0, 0, 0]])
    with pytest.raises(ValueError, match="needs 9 blocks"):
        lab.slot_mapping(bad, SOURCE_LENS, 16)


def test_slot_mapping_rejects_bad_input(lab):
    """Clear ValueErrors that name the argument: a negative seq_len, block_size 0, tables and
    lengths of different batch sizes, lengths in 2-D or as floats (each alone is refused), a
    block_size of 16.0 or True (equal to an integer, but not one: ``sizes_checked_by_value``)."""
    with pytest.raises(ValueError, match="seq_lens"):
        lab.slot_mapping(np.zeros((1, 2), dtype=int), np.array([-1]), 16)
    with pytest.raises(ValueError, match="block_size"):
        lab.slot_mapping(np.zeros((1, 2), dtype=int), np.array([4]), 0)
    with pytest.raises(ValueError, match="block_tables"):
        lab.slot_mapping(np.zeros((2, 2), dtype=int), np.array([4]), 16)
    for lens in ([[1, 2]], [1.5, 2.0]):
        with pytest.raises(ValueError, match="seq_lens"):
            lab.blocks_per_seq(np.array(lens), 16)
            pytest.fail(f"blocks_per_seq({lens}, 16): no ValueError naming seq_lens (a 1-D array of integers)")
    # 16.0 == 16 passes a check by value, then gives float block counts, and float indices to numpy.
    for block_size in (16.0, True):
        for what, args in (("blocks_per_seq", (np.array([17]),)),
                           ("slot_mapping", (np.array([[1, 2]]), np.array([17])))):
            with pytest.raises(ValueError, match="block_size"):
                getattr(lab, what)(*args, block_size)
                pytest.fail(f"{what} with block_size={block_size!r}: no ValueError naming block_size (an integer "
                            "by type)")


def brute_warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition):
    """Deal the sequence's blocks out: to partitions by their first token, then round-robin to warps."""
    owned = [b for b in range(brute_blocks(seq_len, block_size))
             if partition_size == 0 or (b * block_size) // partition_size == partition]
    return [b for i, b in enumerate(owned) if i % num_warps == warp]


WARP_CASES = [  # seq_len, block_size, num_warps, partition_size
    (140, 16, 4, 0), (2048, 16, 4, 512), (2000, 16, 4, 512), (1, 16, 4, 512), (0, 16, 4, 0),
    (77, 8, 4, 64), (300, 32, 2, 96), (1000, 16, 8, 512), (33, 1, 4, 8), (513, 16, 4, 512),
]


@pytest.mark.parametrize("case", WARP_CASES, ids=lambda c: "len{}-bs{}-w{}-p{}".format(*c))
def test_warp_blocks_match_a_brute_force_deal(lab, case):
    """The logical blocks each warp visits, in order, in every partition (and past the last).

    Catches: stride 1 instead of NUM_WARPS, contiguous chunks per warp, a partition's first
    block computed in tokens (``partition * partition_size``), blocks past the sequence's end."""
    seq_len, block_size, num_warps, partition_size = case
    num_partitions = max(1, -(-seq_len // partition_size)) if partition_size else 1
    for partition in range(num_partitions + (1 if partition_size else 0)):  # one past the end owns nothing
        for warp in range(num_warps):
            got = np.asarray(lab.warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition))
            expected = np.array(brute_warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition))
            assert_equal(got, expected.astype(np.int64), axes=("visit",), dtype=np.int64,
                         what=f"warp_blocks(seq_len={seq_len}, warp={warp}, partition={partition})")


@pytest.mark.parametrize("case", WARP_CASES, ids=lambda c: "len{}-bs{}-w{}-p{}".format(*c))
def test_warp_tokens_cover_every_token_exactly_once(lab, case):
    """Over all warps and partitions, every token < seq_len is scored once, and nothing else.

    Catches: the masked tail of the last block listed as work, overlapping or missing
    partitions, a warp that skips its first block."""
    seq_len, block_size, num_warps, partition_size = case
    num_partitions = max(1, -(-seq_len // partition_size)) if partition_size else 1
    seen = []
    for partition in range(num_partitions):
        for warp in range(num_warps):
            tokens = np.asarray(lab.warp_tokens(seq_len, block_size, num_warps, warp, partition_size, partition))
            blocks = brute_warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition)
            expected = [t for b in blocks for t in range(b * block_size, min((b + 1) * block_size, seq_len))]
            assert_equal(tokens, np.array(expected, dtype=np.int64), axes=("visit",), dtype=np.int64,
                         what=f"warp_tokens(warp={warp}, partition={partition})")
            seen += tokens.tolist()
    if sorted(seen) != list(range(seq_len)):
        missing, twice = sorted(set(range(seq_len)) - set(seen)), sorted({t for t in seen if seen.count(t) > 1})
        raise AssertionError(f"the warps' tokens together should be 0..{seq_len - 1}, each once: missing {missing}, "
                             f"seen twice {twice}")


def test_warp_zero_of_the_source_example(lab):
    """Hand-checked: warp 0 of 4 over 140 tokens in blocks of 16 visits blocks 0, 4, 8,
    tokens 0-15, 64-79 and 128-139 (block 8 holds only 12 valid tokens)."""
    assert_equal(np.asarray(lab.warp_blocks(140, 16, 4, 0)), np.array([0, 4, 8]), what="warp_blocks")
    expected = [*range(0, 16), *range(64, 80), *range(128, 140)]
    assert_equal(np.asarray(lab.warp_tokens(140, 16, 4, 0)), np.array(expected), what="warp_tokens")


def test_warp_blocks_reject_bad_input(lab):
    """ValueErrors naming the argument: a partition that is not whole blocks, a warp out of
    range (-1 included), a partition index without partitioning or below 0, block_size 0, a
    fractional num_warps, a negative seq_len, a partition size of -1 (a multiple of block_size 1);
    a seq_len of 100.5 (whose last "token" would be 100), a warp of 1.5, a partition of 0.5, a
    partition size of 32.0 (a float multiple of block_size).

    Catches: a bound of -1 where 0 is the first valid value, a check dropped, arguments checked by
    their range only (``warp_blocks_takes_fractions``)."""
    with pytest.raises(ValueError, match="partition_size"):
        lab.warp_blocks(100, 16, 4, 0, partition_size=100)
    with pytest.raises(ValueError, match="warp"):
        lab.warp_blocks(100, 16, 4, 4)
    with pytest.raises(ValueError, match="partition"):
        lab.warp_blocks(100, 16, 4, 0, partition_size=0, partition=1)
    for call, word in [(lambda: lab.warp_blocks(100, 0, 4, 0), "block_size"),
                       (lambda: lab.warp_blocks(100, 16, 2.5, 0), "num_warps"),
                       (lambda: lab.warp_blocks(100, 16, 4, -1), "warp"),
                       (lambda: lab.warp_blocks(-1, 16, 4, 0), "seq_len"),
                       (lambda: lab.warp_blocks(100, 1, 4, 0, partition_size=-1), "partition_size"),
                       (lambda: lab.warp_blocks(100, 16, 4, 0, partition_size=32, partition=-1), "partition"),
                       (lambda: lab.warp_tokens(100.5, 16, 4, 2), "seq_len"),
                       (lambda: lab.warp_blocks(100, 16, 4, 1.5), "warp"),
                       (lambda: lab.warp_blocks(100, 16, 4, 0, partition_size=32, partition=0.5), "partition"),
                       (lambda: lab.warp_blocks(100, 16, 4, 0, partition_size=32.0, partition=1), "partition_size")]:
        with pytest.raises(ValueError, match=word):
            call()
            pytest.fail(f"warp_blocks with a bad {word}: no ValueError naming it")


@pytest.mark.parametrize("int_type", [np.int64, np.int32], ids=["int64", "int32"])
def test_numpy_integers_are_integers(lab, int_type):
    """Sizes, counts and indices may be numpy integers (a seq_len read out of a numpy array of lengths,
    a block size from a config array): they are integers, as the docstrings ask, so the block-table
    and budget functions take them and give the same answers as for Python ints (the brute force's,
    integers).

    Catches: an integer check written ``isinstance(value, int)`` (``numpy_integers_refused``): a numpy
    integer is no Python int, so every such call raises a ValueError that calls the caller's
    integer "not an integer"."""
    n = int_type
    seq_len, block_size, num_warps, partition_size = 2000, 16, 4, 512
    for partition in range(4):
        for warp in range(num_warps):
            call = (f"warp_blocks(np.{n.__name__}({seq_len}), np.{n.__name__}({block_size}), "
                    f"np.{n.__name__}({num_warps}), warp=np.{n.__name__}({warp}), "
                    f"partition_size=np.{n.__name__}({partition_size}), partition=np.{n.__name__}({partition}))")
            blocks = brute_warp_blocks(seq_len, block_size, num_warps, warp, partition_size, partition)
            tokens = [t for b in blocks for t in range(b * block_size, min((b + 1) * block_size, seq_len))]
            args = (n(seq_len), n(block_size), n(num_warps), n(warp), n(partition_size), n(partition))
            try:
                got_blocks, got_tokens = lab.warp_blocks(*args), lab.warp_tokens(*args)
            except ValueError as err:
                raise AssertionError(f"{call} raised ValueError: {err} (numpy integers are integers: "
                                     "numbers.Integral, not int)") from None
            assert_equal(np.asarray(got_blocks), np.array(blocks, dtype=np.int64), axes=("visit",), dtype=np.int64,
                         what=call)
            assert_equal(np.asarray(got_tokens), np.array(tokens, dtype=np.int64), axes=("visit",), dtype=np.int64,
                         what=call.replace("warp_blocks", "warp_tokens"))
    tables, lens = read_only(SOURCE_TABLES, SOURCE_LENS)
    expected = np.array([brute_slots(SOURCE_TABLES[s], int(m), 16, 140) for s, m in enumerate(SOURCE_LENS)])
    try:
        got_blocks, got_slots = lab.blocks_per_seq(lens, n(16)), lab.slot_mapping(tables, lens, n(16))
    except ValueError as err:
        raise AssertionError(f"blocks_per_seq / slot_mapping with block_size=np.{n.__name__}(16) raised ValueError: "
                             f"{err} (numpy integers are integers: numbers.Integral, not int)") from None
    assert_equal(got_blocks, np.array([9, 4]), axes=("sequence",), dtype=np.int64,
                 what=f"blocks_per_seq(lens, np.{n.__name__}(16))")
    assert_equal(got_slots, expected, axes=("sequence", "token"), dtype=np.int64,
                 what=f"slot_mapping(tables, lens, np.{n.__name__}(16))")
    # Exercise 2 (its brute forces are defined below): the same byte counts, integers still.
    calls = {
        "shared_memory_budget(128, 512, 128, 2)": (lambda: budget_dict(lab.shared_memory_budget(
            n(128), n(512), n(128), n(2))), expected_budget(128, 512, 128, 2)),
        "largest_partition_size(128, 16, 49152, 128, 2)": (lambda: lab.largest_partition_size(
            n(128), n(16), n(DEFAULT_SMEM), n(128), n(2)), brute_largest_partition(128, 16, DEFAULT_SMEM, 128, 2)),
        "reduce_shared_memory_bytes(32769, 512, 128)": (lambda: lab.reduce_shared_memory_bytes(
            n(32769), n(512), n(128)), 552),
    }
    for what, (call, want) in calls.items():
        what = f"{what}, each argument a np.{n.__name__}"
        try:
            got = call()
        except ValueError as err:
            raise AssertionError(f"{what} raised ValueError: {err} (numpy integers are integers: "
                                 "numbers.Integral, not int)") from None
        assert_value(got, want, what=what)
        labkit.require(not isinstance(got, (bool, float)), f"{what}: {got!r}, expected an integer byte count")


# ---------------------------------------------------------------------------
# Exercise 2: the shared-memory budget
# ---------------------------------------------------------------------------


def expected_budget(head_size, partition_size, num_threads, itemsize):
    """vLLM v2 launcher, written out: dynamic max(P * 4, (W / 2) * D * 4); static D * itemsize + 2 W * 4."""
    warps = num_threads // 32
    logits, outputs = partition_size * 4, (warps // 2) * head_size * 4
    query, reduction = head_size * itemsize, 2 * warps * 4
    return dict(logits_bytes=logits, outputs_bytes=outputs, dynamic_bytes=max(logits, outputs),
                query_bytes=query, reduction_bytes=reduction, static_bytes=query + reduction,
                total_bytes=max(logits, outputs) + query + reduction)


def budget_dict(budget):
    return {name: int(getattr(budget, name)) for name in expected_budget(64, 16, 128, 2)}


@pytest.mark.parametrize("int_type", [np.int64, np.int32], ids=["int64", "int32"])
def test_byte_counts_are_python_ints_for_numpy_arguments(lab, int_type):
    """Exercise 2's byte counts are Python ints, as the docstrings say, when the sizes come in as numpy
    integers too: the same values as the Python-int brute force's, of type int. A numpy integer is
    the wrong type, and its arithmetic wraps past its width: a partition of 2**29 + 512 tokens holds
    more than 2**31 bytes of logits, negative in int32.

    Catches: counts computed from the arguments as they came in rather than from the Python ints the
    given checks hand back (``byte_counts_in_numpy_integers``): np.int64 counts for numpy callers,
    and int32 products that wrap around."""
    n = int_type
    big = 2**29 + 512  # 4 * big logit bytes: past int32's 2**31 - 1
    longest = 2**31 - 1  # the longest max_seq_len an int32 holds: 2 * longest * 4 bytes do not fit one
    # The brute forces' answers, in Python ints, before any call.
    want_budget = expected_budget(128, big, 128, 2)
    want_partition = brute_largest_partition(128, 16, DEFAULT_SMEM, 128, 2)
    want_reduce = 2 * longest * 4 + 2 * (128 // 32) * 4  # one partition a token: 2 fp32 each, + red_smem
    what = f"each argument a np.{n.__name__}"
    budget = lab.shared_memory_budget(n(128), n(big), n(128), n(2))
    for name, want in want_budget.items():
        got = getattr(budget, name)
        labkit.require(type(got) is int and got == want,
                       f"shared_memory_budget(128, {big}, 128, 2), {what}: {name} is {got!r} "
                       f"({type(got).__name__}), expected the int {want}")
    calls = {f"largest_partition_size(128, 16, {DEFAULT_SMEM}, 128, 2)":
             (lambda: lab.largest_partition_size(n(128), n(16), n(DEFAULT_SMEM), n(128), n(2)), want_partition),
             f"reduce_shared_memory_bytes({longest}, 1, 128)":
             (lambda: lab.reduce_shared_memory_bytes(n(longest), n(1), n(128)), want_reduce)}
    for call_text, (call, want) in calls.items():
        got = call()
        labkit.require(type(got) is int and got == want,
                       f"{call_text}, {what}: got {got!r} ({type(got).__name__}), expected the int {want}")


def test_budget_of_the_source_configuration(lab):
    """HEAD_SIZE 128, PARTITION_SIZE 512, NUM_THREADS 128, fp16 query: the README's hand-checked figures.

    Catches: the logits counted in fp16, the query in fp32, one reduction array instead of two."""
    got = budget_dict(lab.shared_memory_budget(128, 512, 128, 2))
    assert_value(got, dict(logits_bytes=2048, outputs_bytes=1024, dynamic_bytes=2048, query_bytes=256,
                           reduction_bytes=32, static_bytes=288, total_bytes=2336),
                        what="shared_memory_budget(128, 512, 128, 2), field by field (README's figures)")


@pytest.mark.parametrize("num_threads", [32, 64, 96, 128, 256, 512])
def test_budget_follows_the_launcher(lab, num_threads):
    """Every field, for the head sizes vLLM compiles, several partitions and query dtypes.

    Catches: dynamic = logits + outputs (the buffer is reused, not doubled), outputs over all
    NUM_WARPS warps instead of half, half of an odd number of warps not rounded down (3 warps stage
    1 output, as C++'s NUM_WARPS / 2 does), the output staging dropped (it dominates for small
    partitions).
    The query is 2 bytes (fp16, bf16) or 4 (fp32) an element: never fp8, even over an fp8 cache."""
    for head_size in (32, 64, 80, 96, 112, 120, 128, 192, 256):
        for partition_size in (16, 64, 256, 512, 1024):
            for itemsize in (2, 4):
                got = budget_dict(lab.shared_memory_budget(head_size, partition_size, num_threads, itemsize))
                want = expected_budget(head_size, partition_size, num_threads, itemsize)
                assert_value(got, want, what=f"shared_memory_budget({head_size}, {partition_size}, {num_threads}, "
                                                f"{itemsize}), field by field")


def test_smem_fits_is_inclusive(lab):
    """A block that needs exactly the limit fits; one byte more does not.

    Catches: ``<`` for ``<=``, comparing only the dynamic part."""
    budget = lab.shared_memory_budget(128, 512, 128, 2)  # 2336 bytes
    assert_value(lab.smem_fits(budget, 2336), True, what="smem_fits(2,336-byte budget, 2336): exactly the limit fits")
    assert_value(lab.smem_fits(budget, 2335), False, what="smem_fits(2,336-byte budget, 2335): one byte over")
    assert_value(lab.smem_fits(budget), True, what="smem_fits(2,336-byte budget): the default limit is 48 KiB")
    big = lab.shared_memory_budget(128, 12224, 128, 2)  # 48,896 + 288 = 49,184
    assert_value(lab.smem_fits(big), False, what="smem_fits(49,184-byte budget): over the default 49,152")
    assert_value(lab.smem_fits(big, H100_OPTIN_SMEM), True, what="smem_fits(49,184-byte budget, an H100's 227 KiB)")


def test_defaults_are_the_launchers(lab):
    """Without the optional arguments: 128 threads, an fp16 query (2 bytes), a limit of 48 KiB, as
    the signatures and vLLM's launcher say; a budget of exactly 49,152 bytes fits that default. The
    two limits the module names are 48 KiB and 227 KiB.

    Catches: a default changed (another thread count, an fp32 query, a limit of 47 KiB)."""
    assert_value(budget_dict(lab.shared_memory_budget(128, 512)), expected_budget(128, 512, 128, 2),
                 what="shared_memory_budget(128, 512): 128 threads and 2-byte query elements by default")
    exact = lab.shared_memory_budget(128, 12216)  # 12,216 * 4 + 288 = 49,152
    assert_value(int(exact.total_bytes), DEFAULT_SMEM, what="shared_memory_budget(128, 12216).total_bytes")
    assert_value(lab.smem_fits(exact), True, what="smem_fits(a 49,152-byte budget) under the default 48 KiB")
    assert_value(lab.largest_partition_size(128, 16), brute_largest_partition(128, 16, DEFAULT_SMEM, 128, 2),
                 what="largest_partition_size(128, 16) with its defaults (48 KiB, 128 threads, 2 bytes)")
    assert_value(lab.reduce_shared_memory_bytes(32768, 512), 544,
                 what="reduce_shared_memory_bytes(32768, 512) with 128 threads by default")
    assert_value((lab.DEFAULT_SMEM_BYTES, lab.H100_OPTIN_SMEM_BYTES), (DEFAULT_SMEM, H100_OPTIN_SMEM),
                 what="(DEFAULT_SMEM_BYTES, H100_OPTIN_SMEM_BYTES): 48 KiB and 227 KiB")


def test_byte_counts_are_ints(lab):
    """Every byte count is a Python int (the annotations say so): the budget's fields, the largest
    partition, the reduce kernel's bytes.

    Catches: a true division where the warps, the tokens or the scratch are counted (``/`` for
    ``//``), which gives floats equal to the right numbers."""
    budget = lab.shared_memory_budget(128, 512, 128, 2)
    counts = {f"shared_memory_budget(128, 512, 128, 2).{name}": getattr(budget, name)
              for name in expected_budget(64, 16, 128, 2)}
    counts["largest_partition_size(128, 16, 49152, 128, 2)"] = lab.largest_partition_size(128, 16, DEFAULT_SMEM,
                                                                                          128, 2)
    counts["reduce_shared_memory_bytes(32768, 512, 128)"] = lab.reduce_shared_memory_bytes(32768, 512, 128)
    floats = {what: value for what, value in counts.items() if type(value) is not int}
    assert not floats, f"byte counts that are not ints (a / where // belongs?): {floats}"


def brute_largest_partition(head_size, block_size, limit, num_threads, itemsize):
    """Walk the multiples of block_size upward while they fit."""
    best, p = 0, block_size
    while expected_budget(head_size, p, num_threads, itemsize)["total_bytes"] <= limit:
        best, p = p, p + block_size
    return best


def test_largest_partition_size_of_the_source_configuration(lab):
    """Hand-checked: head 128, 128 threads, fp16, blocks of 16: 12,208 tokens under 48 KiB
    (12,208 * 4 + 288 = 49,120), 58,032 under an H100's 227 KiB; 12,192 with blocks of 32."""
    assert_value(lab.largest_partition_size(128, 16, DEFAULT_SMEM, 128, 2), 12208,
                        what="largest_partition_size(128, 16, 48 KiB, 128, 2)")
    assert_value(lab.largest_partition_size(128, 16, H100_OPTIN_SMEM, 128, 2), 58032,
                        what="largest_partition_size(128, 16, 227 KiB, 128, 2)")
    assert_value(lab.largest_partition_size(128, 32, DEFAULT_SMEM, 128, 2), 12192,
                        what="largest_partition_size(128, 32, 48 KiB, 128, 2)")


@pytest.mark.parametrize("limit", [0, 500, 1_000, 2_400, 4_096, 5_000, DEFAULT_SMEM, 100_000, H100_OPTIN_SMEM])
def test_largest_partition_size_matches_a_search(lab, limit):
    """Against a brute-force walk over multiples of the block size, including limits that no
    partition fits (0) and limits set by the output staging rather than the logits.

    Catches: no rounding to whole blocks, the static part forgotten, the output staging
    forgotten (a partition 'fits' a limit the block cannot meet), an off-by-one block."""
    for head_size, block_size, threads, itemsize in [(128, 16, 128, 2), (256, 8, 512, 2), (80, 32, 128, 4),
                                                     (64, 1, 64, 4), (192, 16, 256, 2), (256, 16, 1024, 2)]:
        got = lab.largest_partition_size(head_size, block_size, limit, threads, itemsize)
        want = brute_largest_partition(head_size, block_size, limit, threads, itemsize)
        assert_value(got, want, what=f"largest_partition_size({head_size}, {block_size}, {limit}, {threads}, "
                                        f"{itemsize})")


def test_reduce_kernel_budget(lab):
    """2 * ceil(max_seq_len / P) fp32 (max logits, exp sums) + 2 * NUM_WARPS fp32 of scratch.

    Hand-checked: 32,768 tokens in partitions of 512 -> 64 partitions -> 512 + 32 = 544 bytes;
    32,769 tokens -> 65 partitions -> 552. Catches: floor instead of ceil, one array instead of two."""
    for max_seq_len, want in ((32768, 544), (32769, 552)):
        assert_value(lab.reduce_shared_memory_bytes(max_seq_len, 512, 128), want,
                     what=f"reduce_shared_memory_bytes({max_seq_len}, 512, 128)")
    for max_seq_len in (0, 1, 511, 512, 513, 100_000):
        for partition_size, threads in ((512, 128), (256, 256), (16, 64)):
            want = 2 * math.ceil(max_seq_len / partition_size) * 4 + 2 * (threads // 32) * 4
            got = lab.reduce_shared_memory_bytes(max_seq_len, partition_size, threads)
            assert_value(got, want, what=f"reduce_shared_memory_bytes({max_seq_len}, {partition_size}, {threads})")


def test_budget_rejects_bad_input(lab):
    """ValueErrors naming the argument: threads not a multiple of the warp size, a zero head
    size, a 3-byte query, and a 1-byte (fp8) query: the kernel's query is fp16, bf16 or fp32
    whatever the cache holds (``fp8_query_accepted``). The reduce kernel's and the largest
    partition's arguments too: a negative max_seq_len, a partition of 0, 0 or 100 threads, block_size 0
    (named as such, not as the partition_size it becomes). Numbers equal to integers but not integers
    (a head size of 128.0, a query_itemsize of 2.0, a limit of 49,152.5 bytes, a max_seq_len of 100.5),
    which would make the byte counts floats: ``sizes_checked_by_value``, ``budget_takes_fractions``."""
    with pytest.raises(ValueError, match="num_threads"):
        lab.shared_memory_budget(128, 512, 100, 2)
    with pytest.raises(ValueError, match="head_size"):
        lab.shared_memory_budget(0, 512, 128, 2)
    for itemsize in (3, 1):
        with pytest.raises(ValueError, match="query_itemsize"):
            lab.shared_memory_budget(128, 512, 128, itemsize)
    for call, word in [(lambda: lab.largest_partition_size(128, 0), "block_size"),
                       (lambda: lab.reduce_shared_memory_bytes(-1, 512, 128), "max_seq_len"),
                       (lambda: lab.reduce_shared_memory_bytes(100, 0, 128), "partition_size"),
                       (lambda: lab.reduce_shared_memory_bytes(100, 512, 0), "num_threads"),
                       (lambda: lab.reduce_shared_memory_bytes(100, 512, 100), "num_threads"),
                       (lambda: lab.shared_memory_budget(128.0, 512), "head_size"),
                       (lambda: lab.shared_memory_budget(128, 512, 128, 2.0), "query_itemsize"),
                       (lambda: lab.largest_partition_size(128, 16, 49152.5), "limit_bytes"),
                       (lambda: lab.reduce_shared_memory_bytes(100.5, 16), "max_seq_len")]:
        with pytest.raises(ValueError, match=word):
            call()
            pytest.fail(f"a bad {word}: no ValueError naming it")


# ---------------------------------------------------------------------------
# Exercise 3: the QK score kernel (torch + triton; CUDA on a GPU)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    """torch, or a skip with the install command when torch/triton are missing."""
    torch, _ = triton_env.require_torch_and_triton()
    return torch


def make_qk_inputs(torch, seq_lens, head_dim, dtype, seed=0, poison="nan", max_len=None):
    """Random q, k with every padding row of k (t >= seq_len) poisoned (``labkit.POISON_KINDS``);
    k is ``max_len`` rows long, by default the longest sequence."""
    g = torch.Generator().manual_seed(seed)
    num_seqs, max_len = len(seq_lens), max(seq_lens) if max_len is None else max_len
    q = torch.randn(num_seqs, head_dim, generator=g)
    k = torch.randn(num_seqs, max_len, head_dim, generator=g)
    for s, n in enumerate(seq_lens):
        k[s, n:] = labkit.poison_value(dtype, poison)
    dev = triton_env.device()
    return q.to(dtype).to(dev), k.to(dtype).to(dev), torch.tensor(seq_lens, dtype=torch.int32)


def expected_scores(q, k, seq_lens, scale):
    """float64, one token at a time; -inf past seq_len."""
    q64, k64 = q.double().cpu().numpy(), k.double().cpu().numpy()
    out = np.full(k64.shape[:2], -np.inf)
    for s, n in enumerate(seq_lens.tolist()):
        for t in range(n):
            out[s, t] = float(np.dot(q64[s], k64[s, t])) * scale
    return out


def check_scores(got, want, seq_lens, atol, what, rtol=0.0):
    """``got`` is fp32 ``[num_seqs, max_len]``: exactly -inf where ``want`` is, within ``atol``
    (+ ``rtol``) of it elsewhere."""
    __tracebackhide__ = True
    labkit.assert_dtype(got, "float32", what=f"{what}: the scores (logits are kept in fp32)")
    got64 = got.double().cpu().numpy()
    assert_value(got64.shape, want.shape, what=f"{what}: the shape of the scores")
    past = ~np.isfinite(want)
    bad = np.argwhere(past & ~(got64 == -np.inf))
    if bad.size:
        s, t = bad[0]
        raise AssertionError(f"{what}: sequence {s}, token {t} (seq_len {int(seq_lens[s])}) holds {got64[s, t]}; "
                             f"positions past seq_len must hold -inf ({len(bad)} such positions wrong)")
    assert_close(np.where(past, 0.0, got64), np.where(past, 0.0, want), atol=atol, rtol=rtol,
                 axes=("sequence", "token"), what=what)


def qk_case(torch, lab, seq_lens, head_dim, dtype, *, seed=0, poison="nan", scale=None, factor=1.0):
    """Inputs, the float64 expectation computed before the call, and the call's result."""
    q, k, lens = make_qk_inputs(torch, seq_lens, head_dim, dtype, seed=seed, poison=poison)
    q, k = q * factor, k * factor
    want = expected_scores(q, k, lens, 1.0 / math.sqrt(head_dim) if scale is None else scale)
    got = lab.qk_scores_triton(q, k, lens) if scale is None else lab.qk_scores_triton(q, k, lens, scale=scale)
    return got, want, lens


RAGGED = [0, 1, 63, 64, 65, 130, 7]


@pytest.mark.triton
@pytest.mark.parametrize("poison", labkit.POISON_KINDS)
@pytest.mark.parametrize("head_dim", [40, 64])
def test_qk_triton_matches_float64_on_ragged_lengths(lab, torch, head_dim, poison):
    """fp32 scores of ragged sequences (0 and tile-boundary lengths), head_dim 40 (not a power of
    two) and 64; the padding rows of k hold huge values, NaN or inf, so reading them shows.

    Catches: every sequence reading sequence 0's query (``qk_first_query``), key lanes past
    head_dim read from the next row (``qk_head_dim_unmasked``: times the query's zero lanes
    that is 0 for finite poison, NaN for NaN or inf), no loop over the tiles (``qk_one_tile``),
    0 instead of -inf past seq_len (``qk_zero_past_len``), the scale forgotten or applied twice."""
    got, want, lens = qk_case(torch, lab, RAGGED, head_dim, torch.float32, poison=poison)
    check_scores(got, want, lens, 1e-4, f"qk_scores_triton, head_dim={head_dim}, {poison} padding")
    got, want, lens = qk_case(torch, lab, RAGGED, head_dim, torch.float32, poison=poison, scale=0.25)
    check_scores(got, want, lens, 1e-4, f"qk_scores_triton, scale=0.25, {poison} padding")


@pytest.mark.triton
def test_qk_triton_fp16_inputs(lab, torch):
    """fp16 q and k, fp32 accumulation: within 5e-4 of float64 over the same fp16 values, and an
    fp32 result. Catches: multiplying and summing in fp16 (errors near 1e-2 on 128-long dots:
    ``qk_fp16_accumulate``), an fp16 output."""
    got, want, lens = qk_case(torch, lab, [5, 64, 33], 128, torch.float16, seed=1, factor=2.0)
    check_scores(got, want, lens, 5e-4, "qk_scores_triton, fp16")


@pytest.mark.triton
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["positive", "negative"])
def test_qk_triton_very_large_scores(lab, torch, sign):
    """fp16 keys lined up with the query so that the scores reach about +1000 or -1000 (raw
    dot products near 11,000, past what fp16 can add up without losing whole units). The
    fp32 accumulation keeps them to about 1e-6 relative (the tolerance: 1e-2 + 1e-5 of the
    score). Catches multiplying or summing in fp16 (``qk_fp16_accumulate``: the sum's step
    at 11,000 is 8)."""
    g = torch.Generator().manual_seed(6)
    head_dim, seq_lens = 128, [70, 33]
    direction = torch.randint(0, 2, (2, head_dim), generator=g).float() * 2 - 1
    q = 4.0 * direction
    ramp = torch.linspace(800.0, 1000.0, 70) / (4.0 * math.sqrt(head_dim))  # score = 4 c sqrt(head_dim)
    k = sign * ramp[None, :, None] * direction[:, None, :] + 0.05 * torch.randn(2, 70, head_dim, generator=g)
    k[1, 33:] = float("nan")
    dev = triton_env.device()
    q, k, lens = q.half().to(dev), k.half().to(dev), torch.tensor(seq_lens, dtype=torch.int32)
    want = expected_scores(q, k, lens, 1.0 / math.sqrt(head_dim))
    got = lab.qk_scores_triton(q, k, lens)
    check_scores(got, want, lens, 1e-2, f"qk_scores_triton, scores near {sign * 1000:+.0f}", rtol=1e-5)


@pytest.mark.triton
def test_qk_triton_k_longer_than_every_sequence(lab, torch):
    """k of 150 rows (a cache sized for its capacity) holding sequences of 3, 70 and 0 tokens: the
    scores are 150 wide, as k is, -inf from each seq_len on; max_len is k's length, not the longest
    sequence.

    Catches: the kernel handed ``max(seq_lens)`` for ``max_len`` (``qk_loop_to_the_longest_sequence``:
    it is the rows' stride as well as the loop's end, so sequence 1 reads sequence 0's padding, and
    the scores past the longest sequence keep whatever torch.empty held)."""
    q, k, lens = make_qk_inputs(torch, [3, 70, 0], 40, torch.float32, seed=12, max_len=150)
    want = expected_scores(q, k, lens, 1.0 / math.sqrt(40))
    got = lab.qk_scores_triton(q, k, lens)
    check_scores(got, want, lens, 1e-4, "qk_scores_triton, seq_lens [3, 70, 0] in k of 150 rows")


QK_VIEWS = {  # the views an engine passes: q a slice of a fused projection, k one half of a fused pool
    f"{q_id}-{k_id}": (q_id, k_id) for q_id in contract.Q_LAYOUTS for k_id in contract.CACHE_LAYOUTS
}


@pytest.mark.triton
@pytest.mark.parametrize("views", QK_VIEWS)
def test_qk_triton_reads_strided_views(lab, torch, views):
    """q and k as views with NaN beside them (``labkit.contract``'s layouts, one head, each sequence's
    keys one block): q as ``qkv[:, :head_dim]`` of a fused projection, k as ``kv[:, 0]`` of a fused
    K/V pool or of one stored heads outside the slots. The scores are the values', whatever the strides.

    Catches: the kernel's contiguous offsets (``seq * head_dim``, ``(seq * max_len + t) * head_dim``)
    applied to the caller's views without the copy the given check makes
    (``qk_views_read_as_contiguous``): they read the K part of qkv and the V half of the pool, NaN."""
    q_id, k_id = QK_VIEWS[views]
    q_layout, k_layout = contract.Q_LAYOUTS[q_id], contract.CACHE_LAYOUTS[k_id]
    q, k, lens = make_qk_inputs(torch, [0, 65, 7], 40, torch.float32, seed=11)
    want = expected_scores(q, k, lens, 1.0 / math.sqrt(40))
    k4 = k[:, :, None, :]  # [num_seqs as blocks, max_len as block_size, one KV head, head_dim]
    q_view = q_layout.apply(q[:, None, :], 1)[:, 0]
    k_view = k_layout.apply(k4, torch.full_like(k4, float("nan")))[0][:, :, 0]
    got = lab.qk_scores_triton(q_view, k_view, lens)
    check_scores(got, want, lens, 1e-4, f"qk_scores_triton, q: {q_layout.describe}; k (a sequence a block, one "
                                        f"head) as the K of: {k_layout.describe}")


@pytest.mark.triton
def test_qk_triton_writes_minus_inf_past_seq_len(lab, torch):
    """Positions at and past seq_len hold -inf exactly, a whole row for seq_len 0.

    Catches: 0 written for masked tokens (``qk_zero_past_len``). vLLM's kernel stores 0 there
    and its value loop does read those slots back, as probabilities, after the exponentials
    (computed for the valid tokens only) have left them at 0; here the scores are the output,
    and a softmax over the row would give a 0 the weight exp(0 - max). Also catches positions
    left unwritten."""
    q, k, seq_lens = make_qk_inputs(torch, [0, 3, 10], 16, torch.float32, seed=2)
    got = lab.qk_scores_triton(q, k, seq_lens).cpu()
    for s, n in enumerate([0, 3, 10]):
        tail = got[s, n:]
        if not bool((tail == float("-inf")).all()):
            raise AssertionError(f"qk_scores_triton, sequence {s} (seq_len {n}): past seq_len got {tail.tolist()}, "
                                 "expected -inf everywhere")


@pytest.mark.triton
def test_qk_triton_sequences_longer_than_one_tile(lab, torch):
    """1,100 and 700 tokens: more than one tile of tokens and more than 1,024 threads could cover.

    Catches: one pass over the first tile only (no loop over the sequence: ``qk_one_tile``)."""
    got, want, lens = qk_case(torch, lab, [1100, 700], 16, torch.float32, seed=3, scale=0.25)
    check_scores(got, want, lens, 1e-4, "qk_scores_triton, long")


@pytest.mark.triton
def test_qk_triton_leaves_its_inputs_unchanged(lab, torch):
    """q, k and seq_lens are read, never written: the padding rows of k still hold their NaN
    after the call. Catches a wrapper that cleans the padding in place (``qk_sanitizes_k_in_place``:
    ``k.nan_to_num_()`` on what is the caller's own tensor when it is already contiguous), which
    returns the right scores and corrupts the caller's cache. The scores are checked too: leaving
    the inputs alone earns nothing without them."""
    q, k, lens = make_qk_inputs(torch, [5, 12], 16, torch.float32, seed=7)
    want = expected_scores(q, k, lens, 1.0 / math.sqrt(16))
    before = [t.clone() for t in (q, k, lens)]
    check_scores(lab.qk_scores_triton(q, k, lens), want, lens, 1e-4, "qk_scores_triton of writeable inputs")
    for name, old, new in zip(["q", "k", "seq_lens"], before, (q, k, lens), strict=True):
        if not (torch.equal(old.isnan(), new.isnan()) and torch.equal(old.nan_to_num(), new.nan_to_num())):
            raise AssertionError(f"qk_scores_triton changed its input {name} (inputs are only read; k's padding rows "
                                 "hold NaN and must keep it)")


@pytest.mark.triton
def test_qk_triton_empty_batch_and_empty_cache(lab, torch):
    """No sequences gives a [0, max_len] result; max_len 0 gives [num_seqs, 0]; neither launches garbage.

    Catches: a launch on an empty grid or a division by max_len that crashes on valid, empty input."""
    dev = triton_env.device()
    got = lab.qk_scores_triton(torch.zeros(0, 16, device=dev), torch.zeros(0, 5, 16, device=dev),
                               torch.zeros(0, dtype=torch.int32))
    assert_value(tuple(got.shape), (0, 5), what="qk_scores_triton of no sequences (max_len 5): the shape")
    got = lab.qk_scores_triton(torch.zeros(2, 16, device=dev), torch.zeros(2, 0, 16, device=dev),
                               torch.zeros(2, dtype=torch.int32))
    assert_value(tuple(got.shape), (2, 0), what="qk_scores_triton of 2 sequences with max_len 0: the shape")


@pytest.mark.triton
def test_qk_rejects_bad_input(lab, torch):
    """ValueErrors naming the argument: k of another head_dim, a seq_len longer than k, float seq_lens,
    boolean seq_lens (a mask passed for the lengths: torch calls it no float)."""
    q, k, seq_lens = make_qk_inputs(torch, [4, 8], 16, torch.float32)
    with pytest.raises(ValueError, match="k"):
        lab.qk_scores_triton(q, k[..., :8], seq_lens)
    with pytest.raises(ValueError, match="seq_lens"):
        lab.qk_scores_triton(q, k, torch.tensor([4, 9]))
    with pytest.raises(ValueError, match="seq_lens"):
        lab.qk_scores_triton(q, k, torch.tensor([4.0, 8.0]))
    dev = triton_env.device()
    bad = {
        "a negative seq_len after a valid one": (lambda: lab.qk_scores_triton(q, k, torch.tensor([4, -1])), "seq_lens"),
        "seq_lens in 2-D": (lambda: lab.qk_scores_triton(q, k, torch.tensor([[4, 8]])), "seq_lens"),
        "boolean seq_lens": (lambda: lab.qk_scores_triton(q, k, torch.tensor([True, False])), "seq_lens"),
        "q a numpy array": (lambda: lab.qk_scores_triton(q.cpu().numpy(), k, seq_lens), "torch tensors"),
        "float64 q and k": (lambda: lab.qk_scores_triton(q.double(), k.double(), seq_lens), "dtype"),
        "fp16 q, fp32 k": (lambda: lab.qk_scores_triton(q.half(), k, seq_lens), "dtype"),
        "k on another device": (lambda: lab.qk_scores_triton(q, torch.empty(k.shape, device="meta"), seq_lens),
                                "k on"),
        "head_dim 0": (lambda: lab.qk_scores_triton(torch.zeros(2, 0, device=dev), torch.zeros(2, 8, 0, device=dev),
                                                    seq_lens), "head_dim"),
        "head_dim 4097": (lambda: lab.qk_scores_triton(torch.zeros(1, 4097, device=dev),
                                                       torch.zeros(1, 8, 4097, device=dev), torch.tensor([4])),
                          "head_dim"),
    }
    for what, (call, word) in bad.items():
        with pytest.raises(ValueError, match=word):
            call()
            pytest.fail(f"qk_scores_triton with {what}: no ValueError naming {word!r}")


@pytest.mark.triton
@pytest.mark.parametrize("seq_lens", [[1], [65, 3], [2, 129]], ids=["max_len-1", "max_len-65", "max_len-129"])
def test_qk_triton_one_token_past_a_tile(lab, torch, seq_lens):
    """max_len one past a multiple of the 64-token tile (1, 65, 129): the last tile holds one token,
    and it is scored.

    Catches: a loop over the tiles that stops one token short (``range(0, max_len - 1, BLOCK_T)``
    skips the last tile when it holds one token; its score is whatever torch.empty left there)."""
    got, want, lens = qk_case(torch, lab, seq_lens, 16, torch.float32, seed=8)
    check_scores(got, want, lens, 1e-4, f"qk_scores_triton, seq_lens {seq_lens}")


@pytest.mark.triton
@pytest.mark.parametrize("head_dim", [1, 4096])
def test_qk_triton_head_dims_at_the_limits(lab, torch, head_dim):
    """head_dim 1 and 4096, the smallest and the largest the checks accept: scored like any other.

    Catches: the head_dim bounds off by one (1 refused, 4096 refused), or compared with the
    number of sequences instead of head_dim."""
    got, want, lens = qk_case(torch, lab, [3, 5], head_dim, torch.float32, seed=9)
    check_scores(got, want, lens, 1e-3, f"qk_scores_triton, head_dim {head_dim}")


@pytest.mark.triton
def test_qk_triton_scores_are_fp32_whatever_torchs_default_dtype(lab, torch):
    """With torch's default dtype set to float64 (a caller's setting, for the whole process), the
    scores are still fp32, as the docstring says.

    Catches: the output allocated without a dtype (``torch.empty(shape)`` follows the default)."""
    q, k, lens = make_qk_inputs(torch, [3, 7], 16, torch.float32, seed=10)
    want = expected_scores(q, k, lens, 0.25)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        got = lab.qk_scores_triton(q, k, lens)
    finally:
        torch.set_default_dtype(before)
    check_scores(got, want, lens, 1e-4, "qk_scores_triton with torch's default dtype float64")


@pytest.mark.triton
def test_qk_cuda_checks_its_inputs_first(lab, torch):
    """On any machine: qk_scores_cuda gives bad input the same ValueError as qk_scores_triton, and
    refuses tensors that are not on a GPU with a ValueError saying so, before building anything (CPU
    copies of the inputs on a GPU machine too, so that the check is tested wherever the suite runs).

    Catches: the device check turned around or dropped (a CPU tensor reaches the CUDA build), the
    given input checks not called first."""
    q, k, seq_lens = make_qk_inputs(torch, [4, 8], 16, torch.float32)
    with pytest.raises(ValueError, match="torch tensors"):
        lab.qk_scores_cuda(q.cpu().numpy(), k, seq_lens)
        pytest.fail("qk_scores_cuda(a numpy q, ...): no ValueError naming torch tensors")
    with pytest.raises(ValueError, match="CUDA"):
        lab.qk_scores_cuda(q.cpu(), k.cpu(), seq_lens.cpu())
        pytest.fail("qk_scores_cuda on CPU tensors: no ValueError saying it needs CUDA tensors")


def test_exercises_1_and_2_need_numpy_only(lab):
    """Without torch and triton (a child process in which the lab's files see neither): exercise 1
    still answers, and exercise 3 says what to install, as a ModuleNotFoundError, instead of a
    NameError or an AttributeError on None.

    Catches: the given fallbacks for a machine without torch removed (``torch = None``), the
    missing-torch check dropped."""
    from pathlib import Path

    from labkit.testing import child

    script = Path(__file__).with_name("_no_torch_child.py")
    got = child.run(script, "blocks", timeout=120)
    assert_equal(got, np.array([0, 1, 2]), what="blocks_per_seq([0, 16, 17], 16) without torch", dtype=np.int64)
    try:
        child.run(script, "qk", timeout=120)
    except child.ChildFailed as err:
        last = str(err).strip().splitlines()[-1]
        if "ModuleNotFoundError" in last and "pip install" in last:
            return
        raise AssertionError(f"qk_scores_triton without torch and triton: expected a ModuleNotFoundError naming "
                             f"the install command, got: {last}") from None
    raise AssertionError("qk_scores_triton without torch and triton: no error at all")


@pytest.mark.triton
@pytest.mark.gpu
def test_qk_cuda_matches_float64(lab, torch):
    """The CUDA kernel, built with load_inline: fp32 and fp16, ragged lengths up to 1,100 tokens
    (more than the block's threads, and more than 1,024), -inf past seq_len.

    Catches: a kernel without the strided token loop (tokens past blockDim.x never scored), a
    missing __syncthreads after staging the query, reads of the padding rows, int64 seq_lens handed
    to the kernel's int pointer (the given check converts them to int32)."""
    from torch.utils import cpp_extension

    if cpp_extension.CUDA_HOME is None or not cpp_extension.is_ninja_available():
        seam.skip_here("building the CUDA exercise needs nvcc (CUDA_HOME) and ninja")
    lens = [0, 1, 127, 128, 129, 1100, 300]
    for dtype, atol, lens_dtype in ((torch.float32, 1e-4, torch.int32), (torch.float16, 2e-3, torch.int64)):
        q, k, seq_lens = make_qk_inputs(torch, lens, 40, dtype, seed=4)
        seq_lens = seq_lens.to(lens_dtype)  # any integer type: the kernel reads int32, converted by the check
        want = expected_scores(q, k, seq_lens, 1.0 / math.sqrt(40))
        got = lab.qk_scores_cuda(q, k, seq_lens)
        check_scores(got, want, seq_lens, atol, f"qk_scores_cuda, {dtype}, seq_lens {lens_dtype}")
