"""labkit.block_table, the block-id check that labs 02-06, 04-01, 04-03, 04-06 and 04-07 give their
learners: compared with a brute force that walks each sequence's tokens, on numpy arrays and torch
tensors, one-sequence tables and batches, lengths on and off block boundaries, padding of every kind."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from labkit.block_table import blocks_needed, check_block_ids, ids_in_use

POISON = (-1, -(2**31), 2**31 - 1, 10**9)  # what engines and garbage leave in a table's padding


def ids_of_tokens(table, seq_len: int, block_size: int) -> list[int]:
    """The brute force: the block of each token, token by token, first occurrences in order of use."""
    ids = []
    for t in range(seq_len):
        block = int(table[t // block_size])
        if t % block_size == 0:
            ids.append(block)
    return ids


def batch(rng, seq_lens, block_size, num_blocks, pad):
    width = max([int(blocks_needed(s, block_size)) for s in seq_lens] + [1])
    tables = np.full((len(seq_lens), width), pad, dtype=np.int64)
    for i, s in enumerate(seq_lens):
        n = int(blocks_needed(s, block_size))
        tables[i, :n] = rng.integers(0, num_blocks, n)
    return tables


@pytest.mark.parametrize("block_size", [1, 3, 16])
def test_blocks_needed_is_the_ceiling(block_size):
    for n in range(0, 4 * block_size + 2):
        assert blocks_needed(n, block_size) == -(-n // block_size) == len(range(0, n, block_size))
    lens = np.arange(0, 50)
    assert (blocks_needed(lens, block_size) == -(-lens // block_size)).all()


@pytest.mark.parametrize("pad", POISON)
@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_ids_in_use_are_the_tokens_blocks_never_the_padding(pad, block_size):
    rng = np.random.default_rng(block_size)
    # lengths 0, one token, a block exactly, one past, and ragged ones
    seq_lens = [0, 1, block_size, block_size + 1, 3 * block_size - 1, 5 * block_size]
    tables = batch(rng, seq_lens, block_size, 50, pad)
    expected = [i for s, row in zip(seq_lens, tables, strict=True) for i in ids_of_tokens(row, s, block_size)]
    assert ids_in_use(tables, np.array(seq_lens, dtype=np.int32), block_size).tolist() == expected
    for s, row in zip(seq_lens, tables, strict=True):  # one sequence's table, with an int length
        assert ids_in_use(row, s, block_size).tolist() == ids_of_tokens(row, s, block_size)
    check_block_ids(tables, np.array(seq_lens), block_size, 50)  # the padding is never refused


@pytest.mark.parametrize("bad", [-1, -(2**31), 50, 2**31 - 1])
@pytest.mark.parametrize("where", ["first block", "last, partly filled block", "a block exactly full",
                                   "the one block of a one-token sequence"])
def test_an_id_outside_the_cache_among_the_blocks_in_use_is_refused(bad, where):
    block_size, num_blocks = 4, 50
    rng = np.random.default_rng(0)
    seq_lens = [9, 8, 1]  # 3 blocks (the last holds 1 token), 2 full blocks, 1 block of 1 token
    tables = batch(rng, seq_lens, block_size, num_blocks, pad=-1)
    row, column = {"first block": (0, 0), "last, partly filled block": (0, 2), "a block exactly full": (1, 1),
                   "the one block of a one-token sequence": (2, 0)}[where]
    tables[row, column] = bad
    with pytest.raises(ValueError, match=r"block_tables holds block ids outside the cache's \[0, 50\)"):
        check_block_ids(tables, np.array(seq_lens), block_size, num_blocks)
    with pytest.raises(ValueError, match=r"^block_table holds block ids"):
        check_block_ids(tables[row], seq_lens[row], block_size, num_blocks, "block_table")
    tables[row, column] = num_blocks - 1 if bad > 0 else 0  # the ids at the edges are blocks of the cache
    check_block_ids(tables, np.array(seq_lens), block_size, num_blocks)


def test_torch_tensors_as_the_kernels_take_them():
    torch = pytest.importorskip("torch", reason="pip install -e '.[torch]'")
    rng = np.random.default_rng(1)
    seq_lens = [0, 5, 16, 17, 33]
    tables = batch(rng, seq_lens, 16, 20, pad=-1)
    t_tables, t_lens = torch.tensor(tables, dtype=torch.int32), torch.tensor(seq_lens, dtype=torch.int32)
    expected = [i for s, row in zip(seq_lens, tables, strict=True) for i in ids_of_tokens(row, s, 16)]
    assert ids_in_use(t_tables, t_lens, 16).tolist() == expected
    check_block_ids(t_tables, t_lens, 16, 20)
    t_tables[4, 2] = 20  # the last block of the 33-token sequence
    with pytest.raises(ValueError, match=r"^paged_decode: block_tables holds block ids outside the cache's \[0, 20\) "
                                         r"among the entries its tokens use \(from \d+ to 20\)"):
        check_block_ids(t_tables, t_lens, 16, 20, "paged_decode: block_tables")


def test_int32_lengths_near_the_limit_do_not_wrap():
    """A length of 2**31 - 1 in int32 plus block_size - 1 would wrap negative and use no block."""
    table = np.zeros((1, 2**11), dtype=np.int32)  # 2**11 blocks of 2**20 tokens hold 2**31 tokens
    table[0, -1] = -1
    with pytest.raises(ValueError, match="from -1 to 0"):
        check_block_ids(table, np.array([2**31 - 1], dtype=np.int32), 2**20, 1)


def test_inputs_are_left_alone():
    tables = batch(np.random.default_rng(2), [7, 3], 4, 10, pad=-1)
    lens = np.array([7, 3])
    tables.flags.writeable = lens.flags.writeable = False
    assert ids_in_use(tables, lens, 4).tolist() == [*tables[0, :2], tables[1, 0]]
    check_block_ids(tables, lens, 4, 10)


def test_importing_it_imports_no_torch():
    """Labs 02-06 and 04-01 run with numpy alone: the check takes torch tensors without importing torch."""
    code = "import sys, labkit.block_table; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
