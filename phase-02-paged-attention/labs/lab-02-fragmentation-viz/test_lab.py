"""Lab 02-02 tests: fragmentation, measured.

Every expected number is an integer worked out by hand in the comments, or counted by the
brute-force replays at the bottom of this file (plain loops over plain integers: no pool, no
function of the implementation under test). The implementation under test is the ``lab``
fixture (root conftest.py; ``LAB_IMPL=starter`` for your own work).

Units: a slot holds one token's keys and values; a block is ``block_size`` slots.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import labkit

# The three per-step counts and the two per-request steps every replay returns, all int64.
STEP_KEYS = ("used", "reserved", "running", "waiting")
REQUEST_KEYS = ("admitted_at", "finished_at")


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def read_only(array) -> np.ndarray:
    array = np.array(array, dtype="int64")
    array.flags.writeable = False
    return array


def serve_paged(lab, stream, num_blocks, block_size):
    """``lab.serve_paged(...)``; a ValueError that lab 02-01's pool raises from inside it is reported
    in this lab's terms (what the replay asked of the pool, and why that cannot happen)."""
    __tracebackhide__ = True
    try:
        return lab.serve_paged(stream, num_blocks, block_size)
    except ValueError as err:
        text = str(err)
        if "blocks are free" in text:
            raise AssertionError(
                f"serve_paged asked lab 02-01's pool for more blocks than it has free ({text}): check "
                f"blocks_needed against pool.get_num_free_blocks() first; in the grow phase preempt the newest "
                f"running request until the blocks fit (or it was the request itself)") from err
        if "double free" in text or "null block" in text:
            raise AssertionError(
                f"serve_paged freed blocks it does not hold ({text}): a request's blocks go back once, when it "
                f"finishes or is preempted, and its table is dropped with them") from err
        raise


def assert_timeline(got: dict, expected: dict, what: str) -> None:
    """Every key of ``expected`` equals ``got``'s, as int64 arrays (or the same int).

    The per-step counts are compared first, step by step: a failure names the earliest step where
    any of them differs, with all of that step's counts and the requests admitted there, so that a
    replay that went wrong at step 7 is not reported as arrays of different lengths."""
    __tracebackhide__ = True
    for key in expected:
        if key not in got:
            raise AssertionError(f"{what}: the timeline has no {key!r} (it has {sorted(got)})")
    steps = [key for key in STEP_KEYS if key in expected]
    if steps:
        got_steps = {key: [int(v) for v in np.asarray(got[key]).reshape(-1)] for key in steps}
        common = min([len(expected[key]) for key in steps] + [len(got_steps[key]) for key in steps])
        first = next((t for t in range(common) if any(got_steps[k][t] != int(expected[k][t]) for k in steps)), None)
        if first is None and any(len(got_steps[k]) != len(expected[k]) for k in steps):
            first = common  # equal as far as both go: one replay ended early, or went on
        if first is not None:
            def at(values, t):
                return str(values[t]) if t < len(values) else "(no such step)"

            lines = [f"{what}: the replays part at step {first} (the timeline has {len(got_steps[steps[0]])} "
                     f"steps, expected {len(expected[steps[0]])}):"]
            lines += [f"  {key}: got {at(got_steps[key], first)}, expected {at([int(v) for v in expected[key]], first)}"
                      for key in steps]
            if "admitted_at" in expected and "admitted_at" in got and len(got["admitted_at"]) == len(
                    expected["admitted_at"]):
                admitted = [r for r, t in enumerate(np.asarray(got["admitted_at"]).tolist()) if t == first]
                want = [r for r, t in enumerate(expected["admitted_at"]) if t == first]
                if admitted != want:
                    lines.append(f"  requests admitted (first time) at step {first}: got {admitted}, expected {want} "
                                 "(first come, first served: a request that does not fit stops the queue)")
            raise AssertionError("\n".join(lines))
    for key, want in expected.items():
        if key in STEP_KEYS:
            labkit.assert_equal(got[key], np.array(want, dtype="int64"), axes=("step",), what=f"{what}: {key}",
                                dtype="int64")
            continue
        if isinstance(want, int):
            if got[key] != want:
                raise AssertionError(f"{what}: {key} = {got[key]}, expected {want}")
        else:
            labkit.assert_equal(got[key], np.array(want, dtype="int64"), axes=("request",), what=f"{what}: {key}",
                                dtype="int64")


# ----------------------------------------------------------------------------- step 1


def test_blocks_needed_is_a_ceiling(lab):
    """``blocks_needed`` is ceil(num_tokens / block_size), in exact integers.

    Catches a floor division (17 tokens in one block of 16), ``n // b + 1`` (a spare block for
    16 tokens, one block for 0 tokens) and a float ``ceil(n / b)``, which loses the last token
    of a huge count (2**60 + 1 is not a float)."""
    cases = [  # (num_tokens, block_size, blocks)
        (0, 16, 0), (1, 16, 1), (15, 16, 1), (16, 16, 1), (17, 16, 2), (32, 16, 2), (33, 16, 3),
        (1, 1, 1), (7, 1, 7), (100, 3, 34), (99, 3, 33),
        (2**60 + 1, 16, 2**56 + 1),  # (2**60 + 1) / 16 rounds to exactly 2**56 as a float
    ]
    for n, b, want in cases:
        got = lab.blocks_needed(n, b)
        assert type(got) is int or isinstance(got, np.integer), (
            f"blocks_needed({n}, {b}) returned {got!r}, of type {type(got).__name__}: expected an int (count in "
            f"integers)")
        assert got == want, f"blocks_needed({n}, {b}) = {got}, expected {want} (ceil(num_tokens / block_size), exactly)"


# Counts in numpy's integer types (a length read out of an array is one): (num_tokens, block_size, blocks).
NUMPY_COUNTS = [
    (np.int64(17), np.int64(16), 2), (np.int32(2**31 - 1), np.int32(16), 2**27),
    (np.uint64(17), 16, 2),  # -np.uint64(17) wraps around to 2**64 - 17: negate a Python int
    (np.uint8(255), np.uint8(16), 16), (np.int64(2**60 + 1), 16, 2**56 + 1),
]


def test_blocks_needed_takes_numpy_integers(lab):
    """Counts in numpy's integer types (int32, int64, uint8, uint64) give the same exact ceilings as
    Python ints: the docstring accepts any integer, and the checks (``_check_positive``) accept them.

    Catches a check of ``isinstance(num_tokens, int)`` alone (a numpy integer is no Python int) and a
    ceiling negated in the count's own dtype: ``-np.uint64(17)`` is 2**64 - 17."""
    for n, b, want in NUMPY_COUNTS:
        call = f"blocks_needed({n!r}, {b!r})"
        try:
            got = lab.blocks_needed(n, b)
        except ValueError as err:
            raise AssertionError(f"{call} raised ValueError({err}): a numpy integer is an integer count too "
                                 f"(isinstance(n, int | np.integer))") from None
        assert got == want, (f"{call} = {got!r}, expected {want} (compute in Python ints, int(num_tokens): "
                             f"numpy's fixed-width integers wrap around)")


def test_internal_fragmentation_is_the_tail_of_the_last_block(lab):
    """The waste of one paged request: slots of its last block past its last token, always < block_size.

    Catches ``block_size - n % block_size`` (a whole wasted block when the tokens fill their blocks
    exactly), ``n % block_size`` (the used part of the last block, not the unused part), the product
    taken in a numpy block size's int32 (an OverflowError for 2**40 tokens, a wrap-around for 2**31 - 1)
    and the shortcut ``-num_tokens % block_size`` with the count left in its numpy dtype: ``-np.uint64(17)``
    is 2**64 - 17, whose remainder by 3 is 2, not 1 (by a power of two the wrap-around hides)."""
    cases = [  # (num_tokens, block_size, wasted slots)
        (0, 16, 0),  # no tokens, no block, no waste
        (1, 16, 15), (15, 16, 1), (16, 16, 0), (17, 16, 15), (31, 16, 1), (32, 16, 0), (33, 16, 15),
        (5, 1, 0), (100, 3, 2),  # 100 tokens in 34 blocks of 3: 102 slots
        # A numpy block size: 2**36 blocks * 16 slots is no int32, 2**27 blocks * 16 overflows one.
        (2**40 + 1, np.int32(16), 15), (2**40, np.int32(16), 0), (np.int32(2**31 - 1), np.int32(16), 1),
        # Unsigned counts by block sizes that do not divide 2**64 or 2**8: 17 tokens in 6 blocks of 3,
        # 5 tokens in 2 blocks of 3, 17 tokens in 1 block of 100.
        (np.uint64(17), 3, 1), (np.uint8(5), 3, 1), (np.uint64(17), np.uint64(100), 83),
    ]
    for n, b, want in cases:
        call = f"internal_fragmentation({n!r}, {b!r})"
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # numpy's "overflow encountered" is a wrong answer
            try:
                got = lab.internal_fragmentation(n, b)
            except (OverflowError, RuntimeWarning) as err:
                raise AssertionError(f"{call}: {type(err).__name__}({err}): arithmetic in a numpy argument's "
                                     f"fixed-width dtype, which overflows or wraps around; compute in Python ints "
                                     f"(int(num_tokens), int(block_size))") from None
        assert got == want, f"{call} = {got}, expected {want}"


# ----------------------------------------------------------------------------- step 2


def check_admitted(lab, name: str, cases) -> None:
    """Each case ``(lengths, memory, size, admitted, why)``: the lab's ``name(lengths, memory, size)``
    (the lengths read-only) is ``admitted``."""
    __tracebackhide__ = True
    for lengths, memory, size, want, why in cases:
        got = getattr(lab, name)(read_only(lengths), memory, size)
        shown = f"[{lengths[0]}] * {len(lengths)}" if len(set(lengths)) == 1 else str(lengths)
        assert got == want, f"{name}({shown}, {memory}, {size}) = {got}, expected {want} ({why})"


def test_admit_contiguous_reserves_max_len_per_request(lab):
    """The contiguous allocator fits ``num_slots // max_len`` requests, however short they are.

    The book's example: 4096 slots, reservations of 512, requests of 32 tokens: 4096 // 512 = 8.
    Catches an allocator that sizes each reservation by the request's real length (which nobody
    knows at admission: 4096 // 32 = 128) and a count that ignores how many requests there are."""
    cases = [  # (lengths, num_slots, max_len, admitted, why)
        ([32] * 200, 4096, 512, 8, "4096 // 512 reservations, whatever the lengths"),
        ([512, 1, 300], 4096, 512, 3, "fewer requests than reservations"),
        ([1] * 10, 1023, 512, 1, "1023 slots hold one reservation of 512"),
        ([7] * 3, 4096, 8, 3, "fewer requests than reservations"),
        ([], 4096, 512, 0, "no request"),
    ]
    check_admitted(lab, "admit_contiguous", cases)


def test_admit_paged_counts_blocks_of_the_pool(lab):
    """The paged allocator fits requests until the pool's free blocks run out, first come first served.

    Same memory as above: 4096 slots = 256 blocks of 16, and block 0 is lab 02-01's null block,
    so 255 blocks are free. 32 tokens = 2 blocks: 255 // 2 = 127 requests (128 if the null block
    were free). 33 tokens = 3 blocks: 255 // 3 = 85 (a token-granular count would say
    4080 // 33 = 123). Catches forgetting the null block, counting tokens instead of blocks, and a
    queue that lets a later, smaller request jump ahead of one that does not fit."""
    cases = [  # (lengths, num_blocks, block_size, admitted, why)
        ([32] * 200, 256, 16, 127, "255 free blocks (block 0 is the null block) // 2 blocks each"),
        ([33] * 200, 256, 16, 85, "255 free blocks // 3 blocks each (33 tokens take 3 blocks of 16)"),
        ([16] * 300, 256, 16, 255, "one full block each"),
        ([1] * 300, 256, 1, 255, "one block each"),
        # 10 blocks, 9 free: 1 + 1 blocks, then 200 tokens need 13: the queue stops there, although
        # the 16-token request behind it would fit.
        ([16, 16, 200, 16], 10, 16, 2, "the third request (13 blocks) does not fit and stops the queue: first come, "
                                       "first served, no overtaking"),
        ([], 10, 16, 0, "no request"),
    ]
    check_admitted(lab, "admit_paged", cases)


def test_block_size_tradeoff_hand_computed(lab):
    """Waste shrinks with the block size while block tables grow: four requests, three block sizes.

    lengths 1, 16, 17, 100:
      b=1 : tables 1, 16, 17, 100 (134 blocks, 134 slots), waste 0; mean 33.5, max 100
      b=4 : tables 1, 4, 5, 25 (35 blocks, 140 slots), waste 3 + 0 + 3 + 0 = 6, 6/140; mean 8.75, max 25
      b=16: tables 1, 1, 2, 7 (11 blocks, 176 slots), waste 15 + 0 + 15 + 12 = 42, 42/176; mean 2.75, max 7
    Catches a waste fraction taken over the used slots (6/134) instead of the allocated ones, and
    table lengths that round down."""
    out = lab.block_size_tradeoff(read_only([1, 16, 17, 100]), read_only([1, 4, 16]))
    labkit.assert_equal(out["block_size"], np.array([1, 4, 16]), what="block_size", dtype="int64")
    labkit.assert_equal(out["waste"], np.array([0, 6, 42]), what="waste", dtype="int64")
    labkit.assert_equal(out["max_table_len"], np.array([100, 25, 7]), what="max_table_len", dtype="int64")
    # float64 ratios of small integers: the only error is the division's rounding (~1e-16).
    labkit.assert_close(out["waste_fraction"], np.array([0, 6 / 140, 42 / 176]), atol=1e-15,
                        what="waste_fraction", dtype="float64")
    labkit.assert_close(out["table_len"], np.array([33.5, 8.75, 2.75]), atol=1e-15, what="table_len",
                        dtype="float64")


def test_block_size_tradeoff_matches_brute_force(lab):
    """On 300 random lengths and block sizes 1 to 256, waste and table lengths equal a direct count,
    and each request wastes fewer than ``block_size`` slots. The sizes come out of order and one of
    them twice: the answer has one entry per size given, in the order given.

    Catches block sizes sorted or deduplicated (``sorted(set(block_sizes))``): entry i no longer
    answers for the i-th size asked."""
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 3000, size=300)
    sizes = [16, 1, 256, 8, 2, 128, 32, 16]
    out = lab.block_size_tradeoff(read_only(lengths), read_only(sizes))
    labkit.assert_equal(out["block_size"], np.array(sizes), what=f"block_size (one entry per size given: {sizes})",
                        dtype="int64")
    for i, b in enumerate(sizes):
        tables = [ceil_div(int(n), b) for n in lengths]
        waste = sum(t * b - int(n) for t, n in zip(tables, lengths, strict=True))
        where = f"block_size {b} (entry {i}), 300 random lengths"
        assert out["waste"][i] == waste, f"{where}: waste {out['waste'][i]}, counted {waste}"
        assert out["max_table_len"][i] == max(tables), (
            f"{where}: max_table_len {out['max_table_len'][i]}, counted {max(tables)}")
        # float64 ratios of integers: one rounding of the division (relative 1e-16).
        mean = sum(tables) / len(tables)
        assert abs(out["table_len"][i] - mean) <= 1e-12 * max(tables), (
            f"{where}: table_len {out['table_len'][i]}, counted {mean}")
        fraction = waste / (sum(tables) * b)
        assert abs(out["waste_fraction"][i] - fraction) <= 1e-15, (
            f"{where}: waste_fraction {out['waste_fraction'][i]}, counted {fraction} (waste over the allocated slots)")


# Lengths read out of arrays of numpy's integer types: up to 255, the largest a uint8 holds, so that
# every dtype can carry them, and block sizes that do not divide 2**8 or 2**64 (3), and one (256)
# larger than a uint8 can hold.
LENGTH_DTYPES = ["uint8", "uint16", "int32", "uint64"]
DTYPE_LENGTHS, DTYPE_SIZES = [1, 16, 17, 100, 255], [1, 3, 16, 256]


@pytest.mark.parametrize("dtype", LENGTH_DTYPES)
def test_block_size_tradeoff_takes_any_integer_dtype(lab, dtype):
    """Lengths handed over as a read-only array of np.uint8, np.uint16, np.int32 or np.uint64 give
    the same trade-off as Python ints: the given check accepts any integer dtype, and a count of
    tokens is a count whatever array it came from.

    Catches block counts computed on the array in its own dtype (``(lengths + b - 1) // b`` or
    ``-(-lengths // b)``): 255 + 2 is 1 in uint8, and -17 is 2**64 - 17 in uint64."""
    lengths = np.array(DTYPE_LENGTHS, dtype=dtype)
    lengths.flags.writeable = False
    expected = {key: [] for key in ("waste", "max_table_len", "table_len", "waste_fraction")}
    for b in DTYPE_SIZES:  # the truth in Python ints, before the call
        tables = [ceil_div(n, b) for n in DTYPE_LENGTHS]
        waste = sum(t * b - n for t, n in zip(tables, DTYPE_LENGTHS, strict=True))
        expected["waste"].append(waste)
        expected["max_table_len"].append(max(tables))
        expected["table_len"].append(sum(tables) / len(tables))
        expected["waste_fraction"].append(waste / (sum(tables) * b))
    out = lab.block_size_tradeoff(lengths, DTYPE_SIZES)
    what = (f"block_size_tradeoff({DTYPE_LENGTHS} as {dtype}, {DTYPE_SIZES}) (count blocks in Python ints: "
            f"{dtype} arithmetic wraps around)")
    for key in ("waste", "max_table_len"):
        labkit.assert_equal(out[key], np.array(expected[key]), axes=("block size",), what=f"{what}: {key}",
                            dtype="int64")
    # float64 ratios of small integers: one rounding of the division.
    for key in ("table_len", "waste_fraction"):
        labkit.assert_close(out[key], np.array(expected[key]), atol=1e-15, axes=("block size",),
                            what=f"{what}: {key}", dtype="float64")


# ----------------------------------------------------------------------------- step 3: hand streams

# (arrival step, prompt_len, output_len). Both strategies get 32 slots: contiguous reservations of
# max_len 16 (two at a time), or 8 blocks of 4 (seven free: block 0 is the null block).
HAND_STREAM = [(0, 3, 4), (0, 5, 2), (0, 2, 3), (1, 7, 2)]


def test_serve_contiguous_hand_stream(lab):
    """The contiguous replay of ``HAND_STREAM``, step by step.

    A request holds prompt + (tokens sampled so far) slots of KV; two reservations of 16 fit.
      t0: admit r0, r1 (r2 waits)         used 3+5 = 8    reserved 2*16   r1.. r0 s=1, r1 s=1
      t1: full; r2, r3 wait               used 4+6 = 10   reserved 32     r1 samples its 2nd: done
      t2: admit r2                        used 5+2 = 7    reserved 32
      t3: full; r3 waits                  used 6+3 = 9    reserved 32     r0 samples its 4th: done
      t4: admit r3                        used 4+7 = 11   reserved 32     r2 done
      t5: r3 alone                        used 8          reserved 16     r3 done
    The same replay in 47 slots: 47 // 16 = 2 reservations still, the 15 slots left over hold no
    third.
    Catches a reservation counted as what is used, finished requests kept, and a capacity that is
    not ``num_slots // max_len`` (47 / 16 = 2.9 in true division lets a third request in)."""
    for num_slots in (32, 47):
        got = lab.serve_contiguous(read_only(HAND_STREAM), num_slots, 16)
        assert_timeline(got, {
            "used": [8, 10, 7, 9, 11, 8],
            "reserved": [32, 32, 32, 32, 32, 16],
            "running": [2, 2, 2, 2, 2, 1],
            "waiting": [1, 2, 1, 1, 0, 0],
            "admitted_at": [0, 0, 2, 4],
            "finished_at": [3, 1, 4, 5],
            "preemptions": 0,
        }, f"contiguous, HAND_STREAM in {num_slots} slots ({num_slots} // 16 = 2 reservations)")


def test_serve_paged_hand_stream(lab):
    """The paged replay of ``HAND_STREAM`` in the same 32 slots: everyone runs at once.

      t0: r0 3 tok -> 1 block, r1 5 -> 2, r2 2 -> 1       used 10   4 blocks = 16 slots  (3 free)
      t1: everyone fits; r3 arrives: 7 tok -> 2 blocks     used 4+6+3+7 = 20   6 blocks = 24
          r1 done (its 2 blocks go back: 3 free)
      t2: r0 reaches 5 tokens: a second block              used 5+4+8 = 17   5 blocks = 20
          r2 and r3 done
      t3: r0 alone, 6 tokens in 2 blocks                   used 6   8 slots; r0 done
    The blocks come from lab 02-01's pool in its free-queue order: 1, 2, 3, 4, 5, 6, 7, then the
    blocks given back (r1's 3 and 2 go to the back of the queue, behind 7).
    Catches a block allocated one token late, blocks not given back, and block ids not taken from
    the pool (or reallocated every step)."""
    got = serve_paged(lab, read_only(HAND_STREAM), 8, 4)
    assert_timeline(got, {
        "used": [10, 20, 17, 6],
        "reserved": [16, 24, 20, 8],
        "running": [3, 4, 3, 1],
        "waiting": [0, 0, 0, 0],
        "admitted_at": [0, 0, 0, 1],
        "finished_at": [3, 1, 2, 2],
        "preemptions": 0,
    }, "paged, HAND_STREAM")
    assert_block_tables(got, [
        {0: [1], 1: [2, 3], 2: [4]},
        {0: [1], 1: [2, 3], 2: [4], 3: [5, 6]},
        {0: [1, 7], 2: [4], 3: [5, 6]},
        {0: [1, 7]},
    ], "paged, HAND_STREAM")


def test_serve_paged_preempts_the_newest_request(lab):
    """When a running request needs a block and the pool is empty, the newest request is preempted.

    4 blocks of 2 (3 free). r0 (0, 2, 4) peaks at 5 tokens = 3 blocks; r1 (0, 2, 3) at 4 = 2.
      t0: r0 [1 block], r1 [1 block]                    used 4, 4 slots; 1 block free
      t1: r0 -> 3 tokens takes the last block; r1 -> 3 tokens finds none: r1, the newest, is
          preempted (its block goes back), and cannot come back yet (2 blocks, 1 free)
                                                        used 3, 4 slots, waiting 1
      t2: r1 (3 tokens to recompute: 2 blocks) waits: 1 free   used 4, 4 slots
      t3: r0 -> 5 tokens takes the freed block           used 5, 6 slots; r0 done
      t4: r1 readmitted with its prompt and its sampled token: 2 blocks   used 3, 4 slots
      t5: r1 -> 4 tokens, 2 blocks                       used 4, 4 slots; r1 done
    Catches preempting the oldest request, and readmitting with blocks for the prompt only (its
    sampled tokens are recomputed too)."""
    got = serve_paged(lab, read_only([(0, 2, 4), (0, 2, 3)]), 4, 2)
    assert_timeline(got, {
        "used": [4, 3, 4, 5, 3, 4],
        "reserved": [4, 4, 4, 6, 4, 4],
        "running": [2, 1, 1, 1, 1, 1],
        "waiting": [0, 1, 1, 1, 0, 0],
        "admitted_at": [0, 0],
        "finished_at": [3, 5],
        "preemptions": 1,
    }, "paged, preemption")


def test_empty_stream(lab):
    """No requests: zero steps, empty int64 arrays, no error."""
    empty = read_only(np.zeros((0, 3)))
    for got in (lab.serve_contiguous(empty, 32, 16), serve_paged(lab, empty, 8, 4)):
        assert_timeline(got, {key: [] for key in STEP_KEYS + REQUEST_KEYS} | {"preemptions": 0}, "empty stream")


def test_bad_input_names_the_argument(lab):
    """Inputs that cannot be served raise ValueError naming the argument, instead of looping forever
    or failing inside numpy."""
    with pytest.raises(ValueError, match="block_size"):
        lab.blocks_needed(10, 0)
    with pytest.raises(ValueError, match="num_tokens"):
        lab.blocks_needed(-1, 16)
    with pytest.raises(ValueError, match="lengths"):
        lab.admit_contiguous(read_only([600]), 4096, 512)  # longer than any reservation
    with pytest.raises(ValueError, match="lengths"):
        lab.block_size_tradeoff(read_only([]), [4, 16])  # no request: the waste fraction would be 0 / 0
        pytest.fail("block_size_tradeoff([], [4, 16]): no ValueError naming lengths (with no request, the waste "
                    "fraction is 0 / 0 slots and the mean table length 0 / 0 requests)")
    with pytest.raises(ValueError, match="stream"):
        lab.serve_contiguous(read_only([(0, 10, 10)]), 64, 16)  # 20 tokens > max_len 16
    with pytest.raises(ValueError, match="stream"):
        lab.serve_paged(read_only([(0, 10, 10)]), 5, 4)  # peaks at 19 tokens: 5 blocks, only 4 free
    call = "serve_paged([(0, 10, 8)], num_blocks=5, block_size=4)"  # one token past 4 blocks of 4
    why = "the request peaks at 10 + 8 - 1 = 17 tokens, 5 blocks, and only 4 can ever be free"
    try:
        lab.serve_paged(read_only([(0, 10, 8)]), 5, 4)
    except ValueError as err:
        assert "stream" in str(err), f"{call} raised ValueError({err}), which does not name stream ({why})"
    except NotImplementedError:
        raise
    except Exception as err:
        raise AssertionError(f"{call} raised {type(err).__name__}({err}), expected a ValueError naming stream "
                             f"before the replay starts ({why})") from err
    else:
        raise AssertionError(f"{call}: no ValueError naming stream ({why})")
    # At the edge, a request that fits is served: its peak is prompt_len + output_len - 1 tokens, a
    # reservation may take the whole memory, and a length may reach the given check's bound, 2**62 - 1.
    peak = ("the last sampled token's KV is never written, so a request peaks at prompt_len + output_len - 1 "
            "tokens")
    for call, got, finished, why in (
            ("serve_paged([(0, 10, 7)], num_blocks=5, block_size=4) (peaks at 16 tokens: 4 blocks, 4 free)",
             lambda: lab.serve_paged(read_only([(0, 10, 7)]), 5, 4), 6, peak),
            ("serve_contiguous([(0, 10, 6)], num_slots=64, max_len=16) (prompt_len + output_len = max_len)",
             lambda: lab.serve_contiguous(read_only([(0, 10, 6)]), 64, 16), 5, peak),
            ("serve_contiguous([(0, 10, 6)], num_slots=16, max_len=16) (one reservation fills the memory exactly)",
             lambda: lab.serve_contiguous(read_only([(0, 10, 6)]), 16, 16), 5,
             "max_len is refused only when it is larger than num_slots: 16 slots hold one reservation of 16"),
            ("serve_contiguous([(0, 2**62 - 1, 1)], num_slots=2**62, max_len=2**62) (one step)",
             lambda: lab.serve_contiguous(read_only([(0, 2**62 - 1, 1)]), 2**62, 2**62), 0,
             "values below 2**62 are accepted: their sums fit in int64")):
        try:
            timeline = got()
        except ValueError as err:
            message = f"{call} raised ValueError({err}): the request fits, and must be served ({why})"
            raise AssertionError(message) from err
        assert_timeline(timeline, {"finished_at": [finished]}, call)
    with pytest.raises(ValueError, match="stream"):
        lab.serve_paged(read_only([(0, 10)]), 64, 4)  # not (arrival, prompt_len, output_len)
    with pytest.raises(ValueError, match="max_len"):
        lab.serve_contiguous(read_only([(0, 1, 1)]), 8, 16)  # a reservation larger than the memory


# name: (the call, a word its ValueError must contain, why it is bad). Each is wrong in one way only:
# the other arguments are good.
BAD_ARGUMENTS = {
    "a length of 0": (lambda lab: lab.admit_contiguous([3, 0], 64, 16), "lengths", "a request holds >= 1 token"),
    "lengths in 2-D": (lambda lab: lab.admit_contiguous([[3, 4]], 64, 16), "lengths", "one length per request"),
    "float lengths": (lambda lab: lab.admit_contiguous([3.5], 64, 16), "lengths", "token counts are integers"),
    "num_slots 64.0": (lambda lab: lab.admit_contiguous([3], 64.0, 16), "num_slots", "a float is no slot count"),
    "paged, a length of 0": (lambda lab: lab.admit_paged([3, 0], 8, 4), "lengths", "a request holds >= 1 token"),
    "paged, block_size 0 and no request": (lambda lab: lab.admit_paged([], 8, 0), "block_size",
                                           "a block holds >= 1 slot, whether or not a request asks for one"),
    "num_tokens True": (lambda lab: lab.blocks_needed(True, 16), "num_tokens",
                        "a bool is no token count, although Python counts True as the int 1"),
    "waste of a block_size 0": (lambda lab: lab.internal_fragmentation(10, 0), "block_size",
                                "a block holds >= 1 slot (a remainder by 0 is a ZeroDivisionError)"),
    "waste of -1 tokens": (lambda lab: lab.internal_fragmentation(-1, 16), "num_tokens",
                           "a request holds >= 0 tokens (-(-1) % 16 would call it 1 wasted slot)"),
    "a negative arrival": (lambda lab: lab.serve_contiguous([(-1, 2, 2)], 64, 16), "stream",
                           "arrival steps start at 0"),
    "a prompt of 0 tokens": (lambda lab: lab.serve_contiguous([(0, 0, 2)], 64, 16), "stream",
                             "prompt_len >= 1"),
    "an output of 0 tokens": (lambda lab: lab.serve_paged([(0, 2, 0)], 8, 4), "stream", "output_len >= 1"),
    "a stream of shape [1, 1]": (lambda lab: lab.serve_contiguous([[5]], 64, 16), "stream",
                                 "rows of (arrival, prompt_len, output_len)"),
    "the second request past max_len": (lambda lab: lab.serve_contiguous([(0, 2, 2), (0, 12, 2)], 64, 8), "stream",
                                        "12 + 2 tokens > max_len 8, while 2 + 2 fit and 2 * output_len fits"),
    "uint8 lengths that overflow": (lambda lab: lab.serve_contiguous(np.array([(0, 200, 100)], dtype=np.uint8),
                                                                     1024, 256), "stream",
                                    "200 + 100 = 300 tokens > max_len 256 (44 in uint8 arithmetic)"),
    "int64 lengths whose sum overflows": (lambda lab: lab.serve_contiguous(np.array([(0, 2**63 - 1, 1)]), 64, 16),
                                          "stream", "2**63 - 1 + 1 tokens > max_len 16 (-2**63 in int64 arithmetic)"),
    "a prompt of 2**62 tokens": (lambda lab: lab.serve_contiguous(np.array([(0, 2**62, 1)]), 2**63, 2**63), "stream",
                                 "values must be below 2**62, the given check's bound, whatever max_len"),
    "paged, int64 lengths whose sum overflows": (lambda lab: lab.serve_paged(np.array([(0, 2**63 - 1, 2)]), 64, 16),
                                                 "stream", "it peaks at 2**63 tokens (-2**63 in int64 arithmetic)"),
    "contiguous, num_slots 64.0": (lambda lab: lab.serve_contiguous([(0, 2, 2)], 64.0, 16), "num_slots",
                                   "a float is no slot count"),
    "contiguous, max_len 16.0": (lambda lab: lab.serve_contiguous([(0, 2, 2)], 64, 16.0), "max_len",
                                 "a float is no slot count"),
    "paged, num_blocks 5.0": (lambda lab: lab.serve_paged([(0, 2, 2)], 5.0, 4), "num_blocks",
                              "a float is no block count"),
    "paged, the second request past the pool": (lambda lab: lab.serve_paged([(0, 2, 2), (0, 30, 2)], 5, 4),
                                                "stream", "it peaks at 31 tokens, 8 blocks of 4; 4 are free"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_each_bad_argument_is_named(lab, name):
    """One bad argument at a time, the others good: each raises a ValueError naming it, before anything
    is replayed. Lengths and stream rows are checked wherever the bad one sits, and in integers wide
    enough for their sum.

    Catches: a check dropped (the given ``_check_lengths``, ``_check_stream``, ``_check_positive``
    not called; ``internal_fragmentation`` computed without ``blocks_needed``'s checks), conditions
    joined with ``and`` where each alone is an error, a bound of 0 where token counts start at 1, the
    max_len or peak check run on the smallest request instead of the largest (or on output_len twice),
    a uint8 stream summed in uint8, an int64 stream whose lengths sum past 2**63 - 1 (the given
    check's bound on each value dropped)."""
    call, word, why = BAD_ARGUMENTS[name]
    try:
        call(lab)
    except ValueError as err:
        if word in str(err):
            return
        got = f"ValueError({err})"
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
        got = f"{type(err).__name__}({err})"
    else:
        got = "no exception"
    pytest.fail(f"{name} ({why}): expected a ValueError naming {word!r}, got {got}")


def test_takes_lists(lab):
    """Lengths and streams as plain Python lists (of ints, of (arrival, prompt_len, output_len) tuples),
    and the empty stream as ``[]``, give what the same arrays give: the given checks turn them into
    arrays.

    Catches: the given conversions dropped (a list has no ``.ndim`` nor ``[:, 1]``), an empty list
    refused (numpy reads ``[]`` as a float array of shape [0])."""
    assert lab.admit_contiguous([5, 9, 3], 40, 16) == 2, "admit_contiguous([5, 9, 3], 40, 16): 40 // 16 = 2 fit"
    assert lab.admit_paged([5, 9, 3], 5, 4) == 1, (
        "admit_paged([5, 9, 3], 5, 4): 4 free blocks; 5 tokens take 2, 9 need 3 of the 2 left: 1 fits")
    table = lab.block_size_tradeoff([5, 9, 3], [4])
    labkit.assert_equal(table["waste"], np.array([7]), what="block_size_tradeoff([5, 9, 3], [4])['waste']",
                        dtype=np.int64)
    stream = [tuple(row) for row in HAND_STREAM]
    expected, _, _ = brute_force_replay(np.array(HAND_STREAM), max_len=16, num_slots=32)
    assert_timeline(lab.serve_contiguous(stream, 32, 16), expected, "contiguous, HAND_STREAM as a list of tuples")
    check_paged_replay(serve_paged(lab, stream, 8, 4), np.array(HAND_STREAM), 8, 4,
                       "paged, HAND_STREAM as a list of tuples")
    for got in (lab.serve_contiguous([], 32, 16), serve_paged(lab, [], 8, 4)):
        assert_timeline(got, {key: [] for key in STEP_KEYS + REQUEST_KEYS} | {"preemptions": 0}, "stream = []")


@pytest.mark.parametrize("later", [[(6, 2, 1)], [(6, 2, 1), (9, 1, 2)]], ids=["one-waiting", "two-waiting"])
def test_idle_steps(lab, later):
    """Steps where nothing runs and nothing has arrived: a short request at step 0, then the pool
    stays empty until the next arrival at step 6 (and one more at 9). Those steps count 0 used, 0
    reserved, 0 running, 0 waiting (a request not yet arrived does not wait), and the replay goes on.

    Catches: a replay that stops at its first idle step, or trips over it (a check of "nothing runs,
    yet a request waits" that reads past the one request in the queue)."""
    stream = np.array([(0, 2, 1), *later])
    expected, _, _ = brute_force_replay(stream, max_len=8, num_slots=32)
    assert_timeline(lab.serve_contiguous(read_only(stream), 32, 8), expected, f"contiguous, idle steps, {later}")
    check_paged_replay(serve_paged(lab, read_only(stream), 8, 4), stream, 8, 4, f"paged, idle steps, {later}")


# ----------------------------------------------------------------------------- step 3: a seeded stream


def random_stream(rng, num_requests=40, last_arrival=30, max_prompt=40, max_output=30):
    arrivals = np.sort(rng.integers(0, last_arrival + 1, size=num_requests))
    return np.stack([arrivals, rng.integers(1, max_prompt + 1, size=num_requests),
                     rng.integers(1, max_output + 1, size=num_requests)], axis=1)


# Classic mistakes the paged replay can make on purpose, so that a failure can name the one a
# learner's replay reproduces (counts alone cannot: a block is a block).
REPLAY_MISTAKES = {
    "finished_head_first": "a finished request's blocks go back to the pool head first; free them tail first "
                           "(pool.free_blocks(reversed(blocks)))",
    "preempted_head_first": "a preempted request's blocks go back to the pool head first; free them tail first "
                            "(pool.free_blocks(reversed(blocks)))",
    "grow_newest_first": "the grow phase serves the newest running request first; serve them oldest first (in "
                         "admission order)",
}


def brute_force_replay(stream, *, max_len=None, num_slots=None, num_blocks=None, block_size=None, mistake=None):
    """The step model of the README in plain integers and lists, for a contiguous allocator
    (``max_len``, ``num_slots``) or a paged one (``num_blocks`` of ``block_size``). Also returns, per
    step, the tokens each running request holds and, paged, the block ids of each running request.

    The paged pool is a list of free block ids, front first, as lab 02-01's free queue orders them:
    1 .. num_blocks - 1 at first (block 0 is the null block), new blocks taken from the front, a
    request's blocks given back at the back, tail first (``reversed(table)``). ``mistake`` (a key of
    ``REPLAY_MISTAKES``) replays one classic mistake instead, to name it when a replay matches it."""
    paged = num_blocks is not None
    arrival, prompt, output = ([int(x) for x in stream[:, i]] for i in range(3))
    n = len(arrival)
    queue = sorted(range(n), key=lambda r: (arrival[r], r))
    sampled, running = [0] * n, []
    free_ids = list(range(1, num_blocks)) if paged else None
    table: dict[int, list[int]] = {}  # request -> its block ids, in logical order

    def take(count):
        taken = free_ids[:count]
        del free_ids[:count]
        return taken

    def give_back(r, head_first=False):
        free_ids.extend(table.pop(r) if head_first else reversed(table.pop(r)))

    out = {k: [] for k in STEP_KEYS} | {"admitted_at": [-1] * n, "finished_at": [-1] * n, "preemptions": 0}
    held, tables = [], []
    t = 0
    while queue or running:
        growing = list(running) if paged else []  # oldest first: each newest token needs a slot
        for r in growing[::-1] if mistake == "grow_newest_first" else growing:
            if r not in running:
                continue
            need = ceil_div(prompt[r] + sampled[r], block_size) - len(table[r])
            while need > len(free_ids):
                victim = running.pop()  # the newest
                give_back(victim, head_first=mistake == "preempted_head_first")
                queue.insert(0, victim)
                out["preemptions"] += 1
                if victim == r:
                    break
            if r in running:
                table[r] += take(need)
        while queue and arrival[queue[0]] <= t:
            r = queue[0]
            if paged:
                need = ceil_div(prompt[r] + sampled[r], block_size)
                if need > len(free_ids):
                    break
                table[r] = take(need)
            elif len(running) == num_slots // max_len:
                break
            running.append(queue.pop(0))
            if out["admitted_at"][r] < 0:
                out["admitted_at"][r] = t
        held.append({r: prompt[r] + sampled[r] for r in running})
        tables.append({r: list(table[r]) for r in running} if paged else {})
        out["used"].append(sum(held[-1].values()))
        out["reserved"].append(sum(len(table[r]) for r in running) * block_size if paged else len(running) * max_len)
        out["running"].append(len(running))
        out["waiting"].append(sum(arrival[r] <= t for r in queue))
        for r in list(running):
            sampled[r] += 1
            if sampled[r] == output[r]:
                out["finished_at"][r] = t
                running.remove(r)
                if paged:
                    give_back(r, head_first=mistake == "finished_head_first")
        t += 1
    return out, held, tables


def assert_block_tables(got: dict, expected: list[dict], what: str) -> None:
    """The replay's ``block_tables``, step by step, equal ``expected`` ({request: [block ids]})."""
    __tracebackhide__ = True
    steps = got.get("block_tables")
    assert steps is not None, f"{what}: the timeline has no 'block_tables'"
    assert len(steps) == len(expected), f"{what}: block_tables has {len(steps)} steps, expected {len(expected)}"
    for t, (step, want) in enumerate(zip(steps, expected, strict=True)):
        step = {int(r): [int(b) for b in blocks] for r, blocks in step.items()}
        if sorted(step) != sorted(want):
            raise AssertionError(f"{what}: step {t}: running requests {sorted(step)}, expected {sorted(want)}")
        for r in sorted(want):
            if step[r] != want[r]:
                same = sorted(step[r]) == sorted(want[r])
                i = next((i for i, (a, b) in enumerate(zip(step[r], want[r], strict=False)) if a != b),
                         min(len(step[r]), len(want[r])))
                cut = max(i - 3, 0)  # show the tables from a little before the first difference

                def shown(ids, cut=cut):
                    return ("[..., " if cut else "[") + ", ".join(map(str, ids[cut:cut + 8])) + (
                        ", ...]" if len(ids) > cut + 8 else "]")

                raise AssertionError(
                    f"{what}: step {t}: request {r}'s block table differs from table position {i} on: "
                    f"{shown(step[r])}, expected {shown(want[r])}"
                    + (" (the same blocks in another order)" if same else "")
                    + ". Blocks come from the front of lab 02-01's free queue; a finished or preempted request "
                      "gives its blocks back tail first (reversed); the grow phase serves the oldest running "
                      "request first, then admission takes the queue's head")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_serve_contiguous_matches_brute_force(lab, seed):
    """A seeded stream of 40 requests (prompts of 1-40 tokens, outputs of 1-30, arrivals over 30
    steps) in 288 slots with reservations of 72: every per-step and per-request count equals the
    brute-force replay's, and ``used <= reserved <= num_slots`` at every step. Then the same requests
    with their rows shuffled: the queue is ordered by arrival step (ties by row), not by row.

    Catches, with the shuffled rows, a queue taken in row order (a stream sorted by arrival assumed)."""
    stream = random_stream(np.random.default_rng(seed))
    expected, _, _ = brute_force_replay(stream, max_len=72, num_slots=288)
    got = lab.serve_contiguous(read_only(stream), 288, 72)
    assert_timeline(got, expected, f"contiguous, seed {seed}")
    shuffled = stream[np.random.default_rng(seed + 100).permutation(len(stream))]
    expected, _, _ = brute_force_replay(shuffled, max_len=72, num_slots=288)
    got = lab.serve_contiguous(read_only(shuffled), 288, 72)
    assert_timeline(got, expected, f"contiguous, seed {seed}, rows shuffled (first come is the earliest arrival "
                                   f"step, whatever the row)")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_serve_paged_matches_brute_force(lab, seed, block_size):
    """The same streams in the same 288 slots, paged (288 // block_size blocks): every count equals
    the brute-force replay's (preemptions included: the pool runs dry), and at every step each
    running request's block table holds ``ceil(tokens / block_size)`` distinct blocks of the pool,
    never the null block 0, shared with no other request, and keeps the ids it had the step before
    (block ids are stable: growth appends). Then every block id, step by step, equals the brute
    force's, which keeps the pool as a list of free ids in lab 02-01's queue order: counts alone
    cannot see in which order blocks go back or which request grows first.

    Catches blocks never given back, a block allocated one token late, readmission without the
    sampled tokens' blocks, preempting the wrong request, a preempted request sent to the back of
    the queue, finished or preempted requests' blocks freed head first, and the grow phase served
    newest first. Then the same requests with their rows shuffled: catches a queue taken in row order."""
    stream = random_stream(np.random.default_rng(seed))
    num_blocks = 288 // block_size
    got = serve_paged(lab, read_only(stream), num_blocks, block_size)
    what = f"paged, seed {seed}, block_size {block_size}"
    try:
        check_paged_replay(got, stream, num_blocks, block_size, what)
    except AssertionError as err:
        for mistake, why in REPLAY_MISTAKES.items():  # does the replay reproduce a classic mistake exactly?
            try:
                check_paged_replay(got, stream, num_blocks, block_size, what, mistake=mistake)
            except AssertionError:
                continue
            raise AssertionError(f"{what}: every step matches a replay in which {why}.\n{err}") from None
        raise
    shuffled = stream[np.random.default_rng(seed + 100).permutation(len(stream))]
    got = serve_paged(lab, read_only(shuffled), num_blocks, block_size)
    check_paged_replay(got, shuffled, num_blocks, block_size,
                       f"{what}, rows shuffled (first come is the earliest arrival step, whatever the row)")


def check_paged_replay(got, stream, num_blocks, block_size, what, mistake=None):
    """``got`` against the brute-force paged replay (of ``mistake``, if given): counts, then tables."""
    __tracebackhide__ = True
    expected, held, expected_tables = brute_force_replay(stream, num_blocks=num_blocks, block_size=block_size,
                                                         mistake=mistake)
    assert_timeline(got, expected, what)
    assert len(got["block_tables"]) == len(held), (
        f"{what}: block_tables has {len(got['block_tables'])} steps, expected {len(held)}")
    before: dict = {}
    for t, (tables, tokens) in enumerate(zip(got["block_tables"], held, strict=True)):
        tables = {int(r): [int(b) for b in blocks] for r, blocks in tables.items()}
        assert sorted(tables) == sorted(tokens), (
            f"{what}: step {t}: running {sorted(tables)}, expected {sorted(tokens)}")
        ids = [b for blocks in tables.values() for b in blocks]
        assert len(ids) == len(set(ids)), f"{what}: step {t}: a block is in two tables: {tables}"
        outside = [b for b in ids if not 0 < b < num_blocks]
        assert not outside, f"{what}: step {t}: block ids {outside} outside 1..{num_blocks - 1} (0 is the null block)"
        for r, blocks in tables.items():
            assert len(blocks) == ceil_div(tokens[r], block_size), (
                f"{what}: step {t}: request {r} holds {tokens[r]} tokens in {len(blocks)} blocks of {block_size}, "
                f"expected {ceil_div(tokens[r], block_size)}")
            if r in before:
                assert blocks[: len(before[r])] == before[r], (
                    f"{what}: step {t}: request {r}'s table changed: {before[r]} -> {blocks} (growth appends)")
        before = tables
    assert_block_tables(got, expected_tables, what)


def test_serve_leaves_the_stream_alone(lab):
    """The stream is read-only here: a replay that sorts or edits it in place raises instead of
    silently changing the caller's requests. Both replays' answers are checked too: leaving the
    stream alone earns nothing without them."""
    stream = read_only(random_stream(np.random.default_rng(5)))
    expected, _, _ = brute_force_replay(stream, max_len=72, num_slots=288)
    assert_timeline(lab.serve_contiguous(stream, 288, 72), expected, "contiguous, a read-only stream")
    check_paged_replay(serve_paged(lab, stream, 72, 4), stream, 72, 4, "paged, a read-only stream")
