"""Tests of lab 02-01: block hashes, the free queue, the block pool.

Nothing here is floating point: every expectation is an exact integer, order or identity, written
out by hand in the test or computed by a brute-force model made of plain lists and dicts
(``_Model``), never by another function of the implementation under test. Block hashes are the
one exception: their values are the implementation's own choice, so the tests pin their
properties (equal inputs give equal keys in every process, any change of a token or of the parent
gives another key) and use them only as opaque keys.

The queue's links are read directly (``fake_free_list_head``, ``next_free_block``...): a walk in
this file, not ``get_all_free_blocks``, says what the queue holds.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from labkit.testing import child

LINKS = ("prev_free_block", "next_free_block")


# --- helpers: the test's own view of the queue -------------------------------------------------


def _walk(queue) -> list[int]:
    """Block ids in the queue, front to back, read from the links; checks that every link has its
    mirror (b.next.prev is b) and that the walk ends at the tail sentinel."""
    head, tail = queue.fake_free_list_head, queue.fake_free_list_tail
    ids, block, steps = [], head, 0
    while True:
        nxt = block.next_free_block
        assert nxt is not None, f"the link after block {block.block_id} is None: the list is broken"
        assert nxt.prev_free_block is block, (
            f"block {nxt.block_id}.prev_free_block is not block {block.block_id}: the links are not mirrored")
        if nxt is tail:
            return ids
        ids.append(nxt.block_id)
        block, steps = nxt, steps + 1
        assert steps <= 100_000, "the free list loops"


def _walk_back(queue) -> list[int]:
    """The same ids read from the tail backwards, reversed (a list whose prev links disagree with its
    next links gives another order)."""
    ids, block = [], queue.fake_free_list_tail.prev_free_block
    while block is not queue.fake_free_list_head:
        assert block is not None, "a prev link is None: the list is broken"
        ids.append(block.block_id)
        block = block.prev_free_block
        assert len(ids) <= 100_000, "the free list loops"
    return ids[::-1]


def _queue_ids(queue) -> list[int]:
    forward = _walk(queue)
    assert _walk_back(queue) == forward, "walking the prev links gives another order than the next links"
    assert queue.num_free_blocks == len(forward), (
        f"num_free_blocks is {queue.num_free_blocks} but the list holds {len(forward)} blocks")
    return forward


def _ids(blocks) -> list[int]:
    return [b.block_id for b in blocks]


def _expect(got, want, what: str) -> None:
    """``got == want``, or a failure that says what was compared, what came and what was expected."""
    __tracebackhide__ = True
    if got != want:
        raise AssertionError(f"{what}: got {got}, expected {want}")


def _labels(hashes, keys) -> list[str | None]:
    """Block hashes as short names for messages: ``"key i"`` for ``keys[i]``, None for no hash,
    ``"another key"`` for anything else (raw 32-byte keys say nothing to a reader)."""
    names = {key: f"key {i}" for i, key in enumerate(keys)}
    return [None if h is None else names.get(h, "another key") for h in hashes]


def _block_hashes(blocks, keys) -> list[str | None]:
    """The hashes of ``blocks``, named after ``keys`` (``_labels``)."""
    return _labels([b.block_hash for b in blocks], keys)


def _found(block) -> int | None:
    """A lookup's answer as a block id (None for a miss)."""
    return None if block is None else block.block_id


def _full_pool_cycle(lab, num_blocks=8, block_size=4):
    """A pool, one sequence of 3 full blocks + 2 tokens that was cached and freed tail first:
    returns (pool, blocks, hashes, tokens)."""
    pool = lab.BlockPool(num_blocks)
    tokens = list(range(100, 100 + 3 * block_size + 2))
    hashes = lab.hash_request_tokens(tokens, block_size)
    blocks = pool.get_new_blocks(4)  # ids 1, 2, 3, 4
    pool.cache_full_blocks(blocks, hashes, 0, 3)
    pool.free_blocks(reversed(blocks))
    return pool, blocks, hashes, tokens


# --- step 1: block hashes ----------------------------------------------------------------------

HASH_CHILD = Path(__file__).with_name("_hash_child.py")


def test_hash_is_the_same_in_every_process(lab):
    """The key of a block is the same in another process, whatever PYTHONHASHSEED is: two engines
    (or one engine after a restart) must agree on which tokens a key stands for. The child
    (``_hash_child.py``) sends back the raw bytes of its keys; the comparison is made here.

    Catches: Python's ``hash()`` of a str or bytes (salted per process unless PYTHONHASHSEED is set),
    ``hash(None)`` (its address on Python < 3.12), ``id()``."""
    first_block, sequence, block_size = [1, 2, 3, 4], list(range(40, 52)), 4
    keys = [lab.hash_block_tokens(None, first_block), *lab.hash_request_tokens(sequence, block_size)]
    kinds = [f"{type(k).__name__} of length {len(k)}" for k in keys if not (isinstance(k, bytes) and len(k) == 32)]
    if kinds:
        raise AssertionError(f"keys must be 32-byte bytes objects (a SHA-256 digest), got {kinds}")
    here = b"".join(keys)
    args = [",".join(map(str, first_block)), ",".join(map(str, sequence)), block_size]
    for seed in ("0", "12345"):
        there = child.run(HASH_CHILD, *args, timeout=120, env={"PYTHONHASHSEED": seed}).tobytes()
        if there != here:
            raise AssertionError(
                f"with PYTHONHASHSEED={seed} another process computes other keys for the same tokens: "
            f"{there[:32].hex()} vs {here[:32].hex()}")


def test_hash_covers_the_tokens_and_the_parent(lab):
    """A key is 32 bytes; equal (parent, tokens) give equal keys; changing one token, the order of
    the tokens, or the parent changes the key. A numpy array of token ids gives the key of the list.

    Catches: ignoring the parent (a block after another prefix would hit), a key of the token set
    or sum (order lost), a str/hex digest instead of bytes."""
    tokens = [5, 17, 9, 3]
    key = lab.hash_block_tokens(None, tokens)
    if not (isinstance(key, bytes) and len(key) == 32):
        raise AssertionError(
            f"hash_block_tokens(None, {tokens}): expected a 32-byte bytes key (the SHA-256 digest, not its hex "
            f"string), got a {type(key).__name__} of length {len(key)}")
    again = lab.hash_block_tokens(None, list(tokens))
    if again != key:
        raise AssertionError(f"hash_block_tokens(None, {tokens}) twice: the same tokens gave another key")
    from_numpy = lab.hash_block_tokens(None, np.array(tokens, dtype=np.int64))
    if from_numpy != key:
        raise AssertionError(f"a numpy int64 array of the token ids {tokens} gave another key than the list")
    changed = lab.hash_block_tokens(None, [5, 17, 9, 4])
    if changed == key:
        raise AssertionError("[5, 17, 9, 4] got the key of [5, 17, 9, 3]: changing the last token kept the key")
    swapped = lab.hash_block_tokens(None, [17, 5, 9, 3])
    if swapped == key:
        raise AssertionError(
            "[17, 5, 9, 3] got the key of [5, 17, 9, 3]: swapping two tokens kept the key (the order of the tokens "
        "is lost: sorted, summed or a set?)")
    parent = lab.hash_block_tokens(None, [1, 2, 3, 4])
    child = lab.hash_block_tokens(parent, tokens)
    if child == key:
        raise AssertionError(f"{tokens} after a parent block got the key of {tokens} as a first block")
    other_parent = lab.hash_block_tokens(None, [1, 2, 3, 5])
    other_child = lab.hash_block_tokens(other_parent, tokens)
    if other_child == child:
        raise AssertionError(f"{tokens} after two different parents got the same key: the parent is ignored")


def test_hash_never_confuses_two_token_lists(lab):
    """Different token lists never give the same bytes to hash: each token has a fixed width (8
    bytes), so nothing can shift from one token into the next. And real token ids need that width:
    Llama 3's vocabulary has 128256 ids, and the lab accepts any id below 2**63.

    Catches: the tokens written as text without a separator (``"1" + "23"`` and ``"12" + "3"``
    are the same string), each token in as few bytes as it needs (``[1, 1]`` and ``[257]``), and
    one byte per token (``bytes(token_ids)`` fails on ids of 256 and more)."""
    pairs = [
        ([1, 23], [12, 3], "the tokens as text without a separator ('1' + '23' == '12' + '3')"),
        ([11, 1, 5], [1, 11, 5], "the tokens as text without a separator ('11' + '1' == '1' + '11')"),
        ([1, 1], [257], "each token in as few bytes as it needs (0x01 0x01 == 0x0101)"),
        ([0, 5], [5], "each token in as few bytes as it needs (0 takes no byte)"),
    ]
    for a, b, mistake in pairs:
        key_a, key_b = lab.hash_block_tokens(None, a), lab.hash_block_tokens(None, b)
        if key_a == key_b:
            raise AssertionError(
                f"hash_block_tokens(None, {a}) == hash_block_tokens(None, {b}): two different blocks share a key, "
            f"so one request would read the other's KV. The bytes hashed must tell them apart; the usual cause "
            f"is {mistake}: give every token 8 bytes (README step 1)")
    big = [128255, 2**40, 2**63 - 1, 7]
    try:
        key_big = lab.hash_block_tokens(None, big)
    except (ValueError, OverflowError) as err:
        raise AssertionError(
            f"hash_block_tokens(None, {big}) raised {type(err).__name__}: {err}. Token ids go up to the vocabulary "
            f"size (128256 for Llama 3) and the lab allows any id below 2**63: one byte per token (bytes(token_ids)) "
            f"or four cannot hold them; give every token 8 bytes") from err
    near = lab.hash_block_tokens(None, [128255, 2**40, 2**63 - 1, 8])
    if key_big == near:
        raise AssertionError(f"{big} and the same with its last token + 1 got one key")


@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
def test_only_full_blocks_are_hashed(lab, block_size):
    """Invariant 3, the hashing side: a sequence of n tokens has n // block_size keys (the partial
    last block has none), and key i is the key of block i with key i - 1 as its parent.

    Catches: rounding up (hashing the partial tail, which its request will still write into),
    restarting the chain at every block, hashing overlapping or shifted windows."""
    rng = random.Random(block_size)
    for n in [0, 1, block_size - 1, block_size, block_size + 1, 3 * block_size - 1, 3 * block_size,
              3 * block_size + 1]:
        tokens = [rng.randrange(50) for _ in range(n)]
        keys = lab.hash_request_tokens(tokens, block_size)
        assert len(keys) == n // block_size, (
            f"{n} tokens in blocks of {block_size}: {len(keys)} keys, expected {n // block_size} (full blocks only: "
            f"the partial last block has no key)")
        parent = None
        for i, key in enumerate(keys):
            expected = lab.hash_block_tokens(parent, tokens[i * block_size:(i + 1) * block_size])
            if key != expected:
                first = lab.hash_block_tokens(None, tokens[i * block_size:(i + 1) * block_size])
                why = (" (it is the key of that block as a first block: the chain restarts at every block)"
                       if i and key == first else "")
                raise AssertionError(
                    f"{n} tokens in blocks of {block_size}: key {i} is not hash_block_tokens(key {i - 1}, tokens "
                    f"{i * block_size}..{(i + 1) * block_size - 1}){why}" if i else
                    f"{n} tokens in blocks of {block_size}: key 0 is not hash_block_tokens(None, tokens 0.."
                    f"{block_size - 1})")
            parent = key


def test_chained_keys_share_exactly_the_common_prefix(lab):
    """Two prompts that agree on their first 2 blocks and differ in the third have the same first 2
    keys and different keys from the third block on, even where later blocks hold the same tokens:
    a key stands for a block *and everything before it*.

    Catches: ignoring the parent (the fourth blocks, identical tokens after different thirds,
    would share a key and one request would reuse the other's KV)."""
    a = list(range(16))  # 4 blocks of 4
    b = a[:8] + [99, 98, 97, 96] + a[12:]  # block 2 differs, block 3 is the same tokens
    ka, kb = lab.hash_request_tokens(a, 4), lab.hash_request_tokens(b, 4)
    assert len(ka) == len(kb) == 4, f"16 tokens in blocks of 4: {len(ka)} and {len(kb)} keys, expected 4 each"
    if ka[:2] != kb[:2]:
        raise AssertionError("the common prefix (blocks 0 and 1, the same tokens) got different keys")
    if ka[2] == kb[2]:
        raise AssertionError("different tokens in block 2 got the same key")
    if ka[3] == kb[3]:
        raise AssertionError(
            "block 3 holds the same tokens after different block 2s and got the same key: a key must cover "
        "everything before its block (chain it to the previous key)")
    assert len(set(ka)) == 4, f"the 4 blocks of one prompt have {len(set(ka))} different keys, expected 4"


def _words(key: bytes, order: str) -> list[int] | None:
    """``key`` read as four 8-byte token ids (``order``: "little" or "big"), or None if one of them is
    2**63 or more (no valid token id)."""
    words = [int.from_bytes(key[i:i + 8], order) for i in range(0, 32, 8)]
    return words if max(words) < 2**63 else None


def test_a_first_block_never_shares_a_key_with_a_later_block(lab):
    """A first block's parent is a 32-byte key too (NONE_HASH), not nothing: a first block whose
    tokens spell out some key P followed by tokens B does not get the key of B after the parent P.
    Token ids go up to 2**63, so four of them (8 bytes each, little- or big-endian) can spell any key
    whose four 8-byte words are below 2**63; the test picks one among the implementation's own keys.

    Catches: hashing a first block's tokens alone (no parent bytes for None): the bytes of
    (None, P's words + B) and of (P, B) are then the same, and a request whose prompt spells a key
    would read another request's KV."""
    tail = [7, 8, 9]
    for order in ("little", "big"):
        parent = words = None
        for i in range(400):  # each key qualifies with chance 1/16
            parent = lab.hash_block_tokens(None, [i])
            words = _words(parent, order)
            if words is not None:
                break
        assert words is not None, f"none of 400 keys reads as four token ids below 2**63 ({order}-endian)"
        spelled = lab.hash_block_tokens(None, words + tail)
        if spelled == lab.hash_block_tokens(parent, tail):
            raise AssertionError(
                f"hash_block_tokens(None, P's bytes as four {order}-endian token ids + {tail}) == "
                f"hash_block_tokens(P, {tail}) for the key P of [{i}]: a first block got the key of a later block. "
                f"A first block's parent is NONE_HASH's 32 bytes (_check_parent_hash), never nothing")


def test_hash_rejects_bad_input(lab):
    """Bad input is a ValueError that names the argument, not a traceback from hashlib or
    ``int.to_bytes``: a parent that is not a key (a string, or bytes of the wrong length), no
    tokens, token ids outside [0, 2**63) at either end of the range and wherever they sit in the list.

    Catches: a parent checked for its type or its length but not both, the bounds of the token ids
    off by one (-1 or 2**63 let through), the upper bound compared with the smallest token."""
    calls = [
        ("parent_hash", "hash_block_tokens('not a hash', [1, 2])", lambda: lab.hash_block_tokens("not a hash", [1, 2])),
        ("parent_hash", "hash_block_tokens(b'short', [1, 2])", lambda: lab.hash_block_tokens(b"short", [1, 2])),
        ("token_ids", "hash_block_tokens(None, [])", lambda: lab.hash_block_tokens(None, [])),
        ("token_ids", "hash_block_tokens(None, [1, -2])", lambda: lab.hash_block_tokens(None, [1, -2])),
        ("token_ids", "hash_block_tokens(None, [-1])", lambda: lab.hash_block_tokens(None, [-1])),
        ("token_ids", "hash_block_tokens(None, [1, 2**63])", lambda: lab.hash_block_tokens(None, [1, 2**63])),
        ("block_size", "hash_request_tokens([1, 2, 3], 0)", lambda: lab.hash_request_tokens([1, 2, 3], 0)),
    ]
    for name, call, run in calls:
        with pytest.raises(ValueError, match=name):
            run()
            pytest.fail(f"{call}: no ValueError naming {name}")


def test_a_bool_is_no_token_id(lab):
    """``True`` among the token ids is a ValueError naming ``token_ids``: Python counts it as the int 1,
    so a check that takes it as an int gives ``[5, True]`` the key of ``[5, 1]``, two different inputs
    under one key; a bool among token ids is a slip (a mask passed for the ids), never a token. numpy
    integers stay token ids (``test_hash_covers_the_tokens_and_the_parent``).

    Catches: token ids checked with ``operator.index`` (``bool_taken_as_token_1``), which takes a bool
    as its int."""
    calls = [
        ("hash_block_tokens(None, [5, True])", lambda: lab.hash_block_tokens(None, [5, True])),
        ("hash_block_tokens(None, [False])", lambda: lab.hash_block_tokens(None, [False])),
        ("hash_request_tokens([1, 2, True, 4], 2)", lambda: lab.hash_request_tokens([1, 2, True, 4], 2)),
    ]
    for call, run in calls:
        with pytest.raises(ValueError, match="token_ids"):
            run()
            pytest.fail(f"{call}: no ValueError naming token_ids (a bool is no token id)")


def test_hash_request_tokens_takes_any_sequence(lab):
    """``token_ids`` is any sequence of ints: a list, a tuple, a numpy array, or a
    ``collections.deque`` (a sequence that cannot be sliced) all give the keys of the list.

    Catches: slicing the argument as given (``deque`` has no slices)."""
    from collections import deque

    tokens = [7, 3, 9, 1, 4, 4, 2, 8, 5, 6]
    keys = lab.hash_request_tokens(tokens, 4)
    for what, given in [("tuple", tuple(tokens)), ("numpy array", np.array(tokens)), ("deque", deque(tokens))]:
        try:
            got = lab.hash_request_tokens(given, 4)
        except Exception as err:
            raise AssertionError(f"hash_request_tokens(a {what} of token ids, 4) raised {type(err).__name__}({err}): "
                                 f"token_ids is any sequence; copy it into a list first") from err
        _expect(got == keys, True, f"hash_request_tokens(a {what} of the token ids, 4) equals the keys of the list")


# --- step 2: the free queue --------------------------------------------------------------------


def test_queue_links_the_blocks_in_order(lab):
    """A queue built from blocks [3, 1, 4, 5] holds them in that order between the two sentinels,
    every link mirrored; an empty queue links the sentinels to each other.

    Catches: forgetting the sentinels' links, one-way links, a wrong num_free_blocks."""
    blocks = [lab.KVCacheBlock(i) for i in (3, 1, 4, 5)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    _expect(_queue_ids(queue), [3, 1, 4, 5], "a queue built from blocks [3, 1, 4, 5], read through its links")
    assert queue.fake_free_list_head.next_free_block is blocks[0], "the head sentinel does not link to block 3"
    assert queue.fake_free_list_tail.prev_free_block is blocks[-1], "the tail sentinel does not link back to block 5"
    _expect(_ids(queue.get_all_free_blocks()), [3, 1, 4, 5], "get_all_free_blocks() of that queue")
    empty = lab.FreeKVCacheBlockQueue([])
    _expect(empty.num_free_blocks, 0, "num_free_blocks of an empty queue")
    _expect(_queue_ids(empty), [], "an empty queue, read through its links")
    _expect(empty.get_all_free_blocks(), [], "get_all_free_blocks() of an empty queue")


def test_a_blocks_repr_does_not_walk_the_queue(lab):
    """Printing a block in the middle of a queue of 3000 (a debugger, a log line, a failing assert)
    shows that block, in a line: its links are left out of its repr.

    Catches: the links in the dataclass's repr, which prints the neighbours, their neighbours...
    the whole queue, until Python's recursion limit."""
    pool = lab.BlockPool(3000)
    block = pool.blocks[1500]
    try:
        text = repr(block)
    except RecursionError as err:
        raise AssertionError("repr(a block in a queue of 2999 free blocks) raised RecursionError: the repr walks "
                             "the queue through prev_free_block / next_free_block (keep them out of the repr)") from err
    if len(text) > 300:
        raise AssertionError(f"repr(a block in a queue of 2999 free blocks) is {len(text)} characters long: the repr "
                             f"walks the queue through its links (keep them out of the repr): {text[:120]}...")


def test_popleft_and_append_keep_fifo_order(lab):
    """popleft takes the front, append puts at the back, a block out of the queue has no links,
    num_free_blocks follows; popleft on an empty queue is a ValueError.

    Catches: popping from the back (the block freed last would be evicted first), an append that
    leaves the tail sentinel pointing at the old last block, a counter that drifts."""
    blocks = [lab.KVCacheBlock(i) for i in range(5)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    first = queue.popleft()
    assert first is blocks[0], f"popleft() on [0, 1, 2, 3, 4] returned block {first.block_id}, expected block 0"
    links = [name for name in LINKS if getattr(first, name) is not None]
    if links:
        raise AssertionError(f"block 0, popped, still has {links}: a block out of the queue has both links None")
    _expect(_queue_ids(queue), [1, 2, 3, 4], "the queue after popleft()")
    queue.append(first)
    _expect(_queue_ids(queue), [1, 2, 3, 4, 0], "after append(block 0)")
    queue.append(queue.popleft())
    queue.append(queue.popleft())
    _expect(_queue_ids(queue), [3, 4, 0, 1, 2], "after two append(popleft())")
    _expect(_ids(queue.popleft() for _ in range(5)), [3, 4, 0, 1, 2], "five popleft() in a row")
    _expect(_queue_ids(queue), [], "the queue after popping every block")
    with pytest.raises(ValueError):
        queue.popleft()
        pytest.fail("popleft() on an empty queue: no ValueError")
    queue.append(blocks[2])
    _expect(_queue_ids(queue), [2], "an emptied queue after append(block 2)")


class _CountingBlock:
    """A block of the test's own with the public attributes of ``KVCacheBlock`` (duck-typed, not a
    subclass of the implementation's class), that counts every read and write of its two links and
    every ``==`` comparison in ``counts``. The counting is the test's code: under ``labs grade`` the
    blocks stay in the test's process, and the implementation reaches them through the grader."""

    def __init__(self, block_id, counts):
        object.__setattr__(self, "_counts", counts)
        self.block_id, self.ref_cnt, self.block_hash, self.is_null = block_id, 0, None, False
        self.prev_free_block = self.next_free_block = None

    def __getattribute__(self, name):
        if name in LINKS:
            object.__getattribute__(self, "_counts")["link reads"] += 1
        return object.__getattribute__(self, name)

    def __setattr__(self, name, value):
        if name in LINKS:
            self._counts["link writes"] += 1
        object.__setattr__(self, name, value)

    def __eq__(self, other):  # a list or deque search compares every element it passes
        self._counts["comparisons"] += 1
        return self is other

    __hash__ = object.__hash__

    def reset_hash(self):
        self.block_hash = None


def _cost(lab, n, operation):
    """Link reads + writes + comparisons that ``operation(queue, blocks)`` makes on a queue of n blocks."""
    counts = {"link reads": 0, "link writes": 0, "comparisons": 0}
    blocks = [_CountingBlock(i, counts) for i in range(n)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    for key in counts:
        counts[key] = 0
    operation(queue, blocks)
    return sum(counts.values()), counts


# The large queue of the O(1) checks: a walk to its middle passes 128 blocks, three times the small queue's
# bound of 40 operations; under labs grade each link the queue touches crosses to the test's blocks, so
# a larger queue costs seconds there and shows nothing more.
BIG_QUEUE = 257


def test_free_queue_o1_middle_removal(lab):
    """Removing a block from the middle of the queue costs the same handful of link operations
    whether the queue holds 11 blocks or 257 (counted, not timed), and leaves the others in order.
    popleft and append are O(1) as well. This is the reason the queue is a hand-made linked list.

    Catches: a deque or list and ``.remove(block)`` (a search that compares every block before it),
    a walk from the head to find the block, a membership check by walking the list."""
    def remove_middle(queue, blocks):
        queue.remove(blocks[len(blocks) // 2])

    small, small_counts = _cost(lab, 11, remove_middle)
    big, big_counts = _cost(lab, BIG_QUEUE, remove_middle)
    assert small <= 40, f"removing one block took {small_counts}: more than a constant number of link operations"
    assert big <= small, (
        f"removing the middle block of {BIG_QUEUE} blocks took {big_counts}, of 11 blocks {small_counts}: "
        f"the cost grows with the queue (O(n), not O(1))")

    for name, operation in [("popleft", lambda q, b: q.popleft()),
                            ("append", lambda q, b: q.append(q.popleft()))]:
        small, small_counts = _cost(lab, 11, operation)
        big, big_counts = _cost(lab, BIG_QUEUE, operation)
        assert big <= small <= 40, f"{name}: {big_counts} on {BIG_QUEUE} blocks vs {small_counts} on 11: not O(1)"

    blocks = [lab.KVCacheBlock(i) for i in range(7)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    queue.remove(blocks[3])
    links = [name for name in LINKS if getattr(blocks[3], name) is not None]
    if links:
        raise AssertionError(f"block 3, removed, still has {links}: a block out of the queue has both links None")
    _expect(_queue_ids(queue), [0, 1, 2, 4, 5, 6], "[0..6] after remove(block 3)")
    queue.remove(blocks[0])  # the front
    queue.remove(blocks[6])  # the back
    _expect(_queue_ids(queue), [1, 2, 4, 5], "after removing the front (0) and the back (6) too")


def test_queue_rejects_blocks_in_the_wrong_state(lab):
    """Removing a block that is not in the queue, or appending one that already is, is a ValueError
    and leaves the queue as it was (appending twice would tie the list into a loop).

    Catches: a remove that trusts its argument (its None links crash, or it unlinks neighbours that
    are not its own), an append that links a block twice."""
    blocks = [lab.KVCacheBlock(i) for i in range(4)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    out = queue.popleft()
    with pytest.raises(ValueError):
        queue.remove(out)
        pytest.fail("remove(block 0) of a block that is not in the queue: no ValueError")
    _expect(_queue_ids(queue), [1, 2, 3], "the queue after the refused remove(block 0)")
    with pytest.raises(ValueError):
        queue.append(blocks[2])
        pytest.fail("append(block 2) of a block already in the queue: no ValueError")
    _expect(_queue_ids(queue), [1, 2, 3], "the queue after the refused append(block 2)")


# --- step 3: the pool: allocate and free -------------------------------------------------------


def test_null_block_is_reserved(lab):
    """Block 0 is the null block: marked ``is_null``, never in the free queue, never handed out,
    even after every other block has been allocated and freed twice. A pool of 1 block is the null
    block alone: valid, with no free block.

    Catches: leaving block 0 in the free queue (some request gets it and its table entry means
    "no block"), marking another block null, refusing a pool of 1."""
    pool = lab.BlockPool(8)
    if pool.null_block is not pool.blocks[0]:
        raise AssertionError("pool.null_block is not pool.blocks[0]")
    _expect([i for i, b in enumerate(pool.blocks) if b.is_null], [0], "the blocks marked is_null")
    _expect(_queue_ids(pool.free_block_queue), [1, 2, 3, 4, 5, 6, 7], "the free queue of a fresh pool of 8")
    _expect(pool.get_num_free_blocks(), 7, "get_num_free_blocks() of a fresh pool of 8")
    for cycle in range(2):
        blocks = pool.get_new_blocks(7)
        _expect(sorted(_ids(blocks)), [1, 2, 3, 4, 5, 6, 7], f"cycle {cycle}: get_new_blocks(7), sorted")
        with pytest.raises(ValueError):
            pool.get_new_blocks(1)
            pytest.fail(f"cycle {cycle}: get_new_blocks(1) with every block but the null block held: no ValueError")
        pool.free_blocks(blocks)
    # The smallest pool: one block, the null block, and nothing to hand out. It is a valid pool.
    try:
        pool = lab.BlockPool(1)
    except ValueError as err:
        raise AssertionError(f"BlockPool(1) raised ValueError({err}): 1 is a positive int, a valid pool size (block 0 "
                             f"is its null block, and no block is free)") from err
    _expect(_queue_ids(pool.free_block_queue), [], "the free queue of a pool of 1 (block 0 is the null block)")
    _expect(pool.get_num_free_blocks(), 0, "get_num_free_blocks() of a pool of 1")


def test_get_new_blocks_takes_the_front(lab):
    """get_new_blocks(n) takes the n blocks at the front of the queue, in queue order, each with
    ref_cnt 1; get_new_blocks(0) is an empty list; the free count and usage follow.

    Catches: taking from the back, ref_cnt left at 0 (the block looks free while it is held),
    ref_cnt incremented from a stale value."""
    pool = lab.BlockPool(10)
    _expect(pool.get_new_blocks(0), [], "get_new_blocks(0)")
    a = pool.get_new_blocks(3)
    _expect(_ids(a), [1, 2, 3], "get_new_blocks(3) on a fresh pool of 10")
    _expect([b.ref_cnt for b in a], [1, 1, 1], "ref_cnt of the blocks handed out")
    if not all(b is pool.blocks[b.block_id] for b in a):
        raise AssertionError("get_new_blocks returned copies, not the pool's blocks")
    b = pool.get_new_blocks(2)
    _expect(_ids(b), [4, 5], "the next get_new_blocks(2)")
    _expect(_queue_ids(pool.free_block_queue), [6, 7, 8, 9], "the free queue after handing out 1..5")
    _expect(pool.get_num_free_blocks(), 4, "get_num_free_blocks() after handing out 1..5")


def test_usage_leaves_out_the_null_block(lab):
    """get_usage() is the fraction of the blocks that can be handed out that are not free, the null
    block left out of both counts (vLLM's BlockPool.get_usage): 0 for a fresh pool of 10, 5/9 with
    5 blocks held, back to 0 when they are freed; 0 for a pool of the null block alone, whose 0 usable
    blocks must not be divided by.

    Catches: the free fraction, the null block counted as used (0.1 for a fresh pool of 10), a
    division by zero for a pool of 1."""
    pool = lab.BlockPool(10)
    why = "the fraction of the 9 blocks that can be handed out that are not free"
    # Exact up to one rounding of the division: 1e-12 is far below any wrong formula's error.
    usage = pool.get_usage()
    assert usage == pytest.approx(0.0, abs=1e-12), f"get_usage() of a fresh pool of 10 is {usage}, expected 0.0 ({why})"
    held = pool.get_new_blocks(5)
    usage = pool.get_usage()
    assert usage == pytest.approx(5 / 9, abs=1e-12), f"get_usage() with 5 blocks held is {usage}, expected 5/9 ({why})"
    pool.free_blocks(held)
    usage = pool.get_usage()
    assert usage == pytest.approx(0.0, abs=1e-12), f"get_usage() once they are freed is {usage}, expected 0.0 ({why})"
    try:
        usage = lab.BlockPool(1).get_usage()
    except ZeroDivisionError:
        raise AssertionError("get_usage() of BlockPool(1) divided by zero: a pool of the null block alone has no "
                             "block to hand out, and its usage is 0.0") from None
    assert usage == 0.0, f"get_usage() of BlockPool(1) (the null block alone) is {usage}, expected 0.0"


def test_free_blocks_returns_in_the_order_given(lab):
    """free_blocks appends the blocks that reach ref_cnt 0 to the back of the queue in the order
    given (the caller lists them by eviction priority), behind the blocks already free, so the next
    allocations take the older free blocks first, then the freed ones in that order.

    Catches: appending in reverse, pushing freed blocks to the front (the most recently used blocks
    would be evicted first)."""
    pool = lab.BlockPool(8)
    held = pool.get_new_blocks(5)  # 1..5; free queue: 6, 7
    pool.free_blocks([held[2], held[0], held[4]])  # 3, 1, 5
    _expect([b.ref_cnt for b in held], [0, 1, 0, 1, 0], "ref_cnt of blocks 1..5 after free_blocks([3, 1, 5])")
    _expect(_queue_ids(pool.free_block_queue), [6, 7, 3, 1, 5],
            "the free queue after free_blocks([3, 1, 5]) behind 6, 7 (freed blocks join the back, in the order given)")
    _expect(_ids(pool.get_new_blocks(4)), [6, 7, 3, 1], "the next get_new_blocks(4)")


def test_shared_block_stays_held_until_the_last_free(lab):
    """Invariant 1: a block held by two requests (touched once more) has ref_cnt 2; one free leaves
    it held (ref_cnt 1, not in the queue, never handed out); the second free puts it in the queue.

    Catches: appending a block to the queue on every free (another request gets a block that is
    still in use), a touch that takes a held block out of the queue it is not in."""
    pool = lab.BlockPool(6)
    a = pool.get_new_blocks(2)  # 1, 2
    pool.touch([a[0]])  # a second request shares block 1
    _expect(a[0].ref_cnt, 2, "ref_cnt of block 1, held by one request and touched by a second (touch counts every "
                             "new holder, whether or not the block was free)")
    _expect(_queue_ids(pool.free_block_queue), [3, 4, 5], "the free queue after touching the held block 1")
    pool.free_blocks(reversed(a))  # the first request finishes
    _expect([a[0].ref_cnt, a[1].ref_cnt], [1, 0], "ref_cnt of blocks 1 and 2 after the first request frees both")
    _expect(_queue_ids(pool.free_block_queue), [3, 4, 5, 2], "the free queue then (block 1 is still held)")
    handed = _ids(pool.get_new_blocks(4))
    assert 1 not in handed, f"block 1 is still held by the second request but was handed out again: {handed}"
    pool.free_blocks([a[0]])
    _expect(a[0].ref_cnt, 0, "ref_cnt of block 1 after its last holder frees it")
    _expect(_queue_ids(pool.free_block_queue), [1], "the free queue after the last free of block 1")


def test_bad_input_is_a_clear_error_and_changes_nothing(lab):
    """Freeing a block more times than it is held (in two calls or twice in one), freeing or
    touching the null block, asking for more blocks than are free or for a negative count, and a
    pool of 0, -3 or 2.5 blocks are ValueErrors (the pool's naming num_gpu_blocks), and the pool is
    exactly as it was after each.

    Catches: a pool size checked against 0 instead of 1 (a pool of 0 fails later, taking its null
    block out of an empty queue), a double free accepted (ref_cnt goes negative, or the block enters the queue twice), a
    partial decrement before the error, the null block freed into the queue."""
    for num_gpu_blocks in (0, -3, 2.5):  # a pool size must be a positive int
        try:
            lab.BlockPool(num_gpu_blocks)
        except ValueError as err:
            if "num_gpu_blocks" not in str(err):
                raise AssertionError(f"BlockPool({num_gpu_blocks!r}) raised ValueError({err}), which does not name "
                                     f"num_gpu_blocks: check the argument first (a pool of 0 blocks has no null "
                                     f"block to take out of its queue)") from err
            continue
        except NotImplementedError:
            raise
        except Exception as err:
            raise AssertionError(f"BlockPool({num_gpu_blocks!r}) raised {type(err).__name__}({err}), expected a "
                                 f"ValueError saying that num_gpu_blocks must be a positive int") from err
        raise AssertionError(f"BlockPool({num_gpu_blocks!r}): no ValueError (num_gpu_blocks must be a positive int)")
    pool = lab.BlockPool(6)
    held = pool.get_new_blocks(2)  # 1, 2
    pool.free_blocks([held[1]])

    before = _pool_state(pool)
    bad_calls = {
        "free a free block": lambda: pool.free_blocks([held[1]]),
        "free a block held once, twice in one call": lambda: pool.free_blocks([held[0], held[0]]),
        "free the null block": lambda: pool.free_blocks([pool.null_block]),
        "touch the null block": lambda: pool.touch([pool.null_block]),
        "ask for more blocks than are free": lambda: pool.get_new_blocks(5),
        "ask for -1 blocks": lambda: pool.get_new_blocks(-1),
    }
    for what, call in bad_calls.items():
        with pytest.raises(ValueError):
            call()
            pytest.fail(f"{what}: no ValueError")
        _expect_unchanged(pool, before, what)


def _pool_state(pool) -> dict:
    """Everything a refused call must leave as it was: ref counts, hashes, the queue, the index."""
    return {
        "ref_cnt per block": [b.ref_cnt for b in pool.blocks],
        "hashed blocks": [b.block_id for b in pool.blocks if b.block_hash is not None],
        "free queue": _queue_ids(pool.free_block_queue),
        "indexed blocks": sorted(i for same in pool.cached_block_hash_to_block.values() for i in same),
    }


def _expect_unchanged(pool, before: dict, what: str) -> None:
    __tracebackhide__ = True
    now = _pool_state(pool)
    changed = [f"{name} {before[name]} -> {now[name]}" for name in before if now[name] != before[name]]
    if changed:
        raise AssertionError(
            f"{what}: the ValueError came after the pool had changed ({'; '.join(changed)}). Check every element "
            f"first, then change anything: a refused call must leave the pool as it was")


def test_a_refusal_mid_list_changes_nothing(lab):
    """A call that refuses one element of a list refuses the whole call before changing anything,
    wherever the bad element is: here it sits in the middle, after elements the call would accept.
    touch with the null block between two good blocks; free_blocks with a double free or the null
    block between two held blocks; cache_full_blocks with an already cached block, or the null
    block, between two blocks that could be cached, or with one block listed twice; get_new_blocks
    for one block more than free.

    Catches: a loop that checks each element as it goes (the elements before the bad one are
    already touched, freed, cached or handed out when the ValueError comes), and a check of each
    block against the pool alone (a block listed twice is uncached at both places)."""
    pool = lab.BlockPool(10)
    keys = lab.hash_request_tokens(list(range(12)), 4)
    held = pool.get_new_blocks(5)  # 1..5, ref_cnt 1
    pool.cache_full_blocks(held[1:2], keys[1:2], 0, 1)  # block 2 holds key 1
    pool.free_blocks([held[4]])  # block 5 is free again: ref_cnt 0, at the back of the queue
    one, two, three, _, five = held
    before = _pool_state(pool)
    bad_calls = {
        "touch([block 5 (free), null block, block 1])": lambda: pool.touch([five, pool.null_block, one]),
        "free_blocks([block 1, block 5 (already free), block 3])": lambda: pool.free_blocks([one, five, three]),
        "free_blocks([block 1, null block, block 3])": lambda: pool.free_blocks([one, pool.null_block, three]),
        "free_blocks([block 1, block 3, block 1]) (block 1 held once)": lambda: pool.free_blocks([one, three, one]),
        "cache_full_blocks([block 1, block 2 (already cached), block 3], keys, 0, 3)":
            lambda: pool.cache_full_blocks([one, two, three], keys, 0, 3),
        "cache_full_blocks([block 1, null block, block 3], keys, 0, 3)":
            lambda: pool.cache_full_blocks([one, pool.null_block, three], keys, 0, 3),
        # Checked one by one against the pool, block 1 is uncached both times: indexed under keys 0 and 2,
        # evicted later from one of them, and the other key would name a block that holds other tokens.
        "cache_full_blocks([block 1, block 3, block 1], keys, 0, 3) (block 1 twice)":
            lambda: pool.cache_full_blocks([one, three, one], keys, 0, 3),
        "get_new_blocks(6) with 5 free": lambda: pool.get_new_blocks(6),
    }
    for what, call in bad_calls.items():
        with pytest.raises(ValueError):
            call()
            pytest.fail(f"{what}: no ValueError")
        _expect_unchanged(pool, before, what)


# --- step 4: the prefix cache: cache, look up, touch, evict lazily -----------------------------


def test_cache_full_blocks_indexes_only_the_new_full_blocks(lab):
    """Invariant 3, the pool side: a sequence of 10 tokens in blocks of 4 holds 3 blocks and 2
    full-block keys; caching blocks [0, 2) hashes and indexes blocks 1 and 2, never the partial
    third; after 2 more tokens the third is full and cache_full_blocks(…, 2, 3) adds it alone.

    Asking to cache more blocks than there are keys (the partial one), a block already cached, the
    null block, or a range with num_cached_blocks < 0 or > num_full_blocks, is a ValueError that
    changes nothing. Keys past num_full_blocks (the caller knows more keys than it caches now) are
    left for a later call.

    Catches: caching the partial tail, re-caching blocks already cached, hashing the wrong block, an
    unchecked range (cache_full_blocks(blocks, keys, 2, 1) returns quietly, caching nothing)."""
    pool = lab.BlockPool(8)
    tokens = list(range(10))
    blocks = pool.get_new_blocks(3)  # 1, 2, 3
    keys = lab.hash_request_tokens(tokens, 4)
    with pytest.raises(ValueError):
        pool.cache_full_blocks(blocks, keys, 0, 3)  # 3 blocks, but only 2 are full
        pytest.fail("cache_full_blocks(3 blocks, 2 keys, 0, 3): no ValueError (only full blocks have keys)")
    _expect(_block_hashes(blocks, keys), [None, None, None], "the hashes of blocks 1..3 after that refusal")
    _expect(len(pool.cached_block_hash_to_block), 0, "keys in the index after that refusal")
    with pytest.raises(ValueError):
        pool.cache_full_blocks([pool.null_block], keys, 0, 1)
        pytest.fail("cache_full_blocks([null block], keys, 0, 1): no ValueError")
    for num_cached, num_full in [(2, 1), (-1, 1)]:  # the range [num_cached, num_full) runs backwards, or from -1
        with pytest.raises(ValueError):
            pool.cache_full_blocks(blocks, keys, num_cached, num_full)
            pytest.fail(f"cache_full_blocks(blocks, keys, {num_cached}, {num_full}): no ValueError (the call needs "
                        f"0 <= num_cached_blocks <= num_full_blocks; a slice of that range is empty, so an unchecked "
                        f"call silently caches nothing)")
    pool.cache_full_blocks(blocks, keys, 0, 2)
    with pytest.raises(ValueError):
        pool.cache_full_blocks(blocks, keys, 1, 2)  # block 2 is already cached
        pytest.fail("cache_full_blocks(blocks, keys, 1, 2) with block 2 already cached: no ValueError")
    _expect(_block_hashes(blocks, keys), ["key 0", "key 1", None], "the hashes of blocks 1..3 after caching [0, 2)")
    _expect([_found(pool.get_cached_block(k)) for k in keys], [1, 2], "get_cached_block of keys 0 and 1")
    _expect(len(pool.cached_block_hash_to_block), 2, "keys in the index")

    keys = lab.hash_request_tokens(tokens + [10, 11], 4)
    pool.cache_full_blocks(blocks, keys, 2, 3)
    _expect(_block_hashes(blocks, keys), ["key 0", "key 1", "key 2"], "the hashes after 2 more tokens and (2, 3)")
    _expect(_found(pool.get_cached_block(keys[2])), 3, "get_cached_block(key 2)")
    _expect(len(pool.cached_block_hash_to_block), 3, "keys in the index")

    # The keys may run ahead of the blocks being cached: 3 keys, the first block cached alone, then the rest.
    pool = lab.BlockPool(8)
    blocks = pool.get_new_blocks(3)  # 1, 2, 3
    for num_cached, num_full, want in [(0, 1, ["key 0", None, None]), (1, 3, ["key 0", "key 1", "key 2"])]:
        try:
            pool.cache_full_blocks(blocks, keys, num_cached, num_full)
        except ValueError as err:
            raise AssertionError(f"cache_full_blocks(blocks 1..3, 3 keys, {num_cached}, {num_full}) raised "
                                 f"ValueError({err}): the keys past num_full_blocks are simply not used yet (take "
                                 f"block_hashes[num_cached_blocks:num_full_blocks])") from err
        _expect(_block_hashes(blocks, keys), want,
                f"the hashes of blocks 1..3 after caching ({num_cached}, {num_full}) with 3 keys")


def test_cached_block_survives_free_until_reused(lab):
    """Invariant 4, lazy eviction: a cached block that is freed keeps its hash and stays findable
    while it waits in the free queue; only when get_new_blocks hands it out again does it lose its
    hash and leave the index (and then a lookup of its old key misses).

    Catches: evicting on free (every finished request's prefix is lost at once), forgetting to drop
    the index entry on reuse (a later request "hits" a block that now holds other tokens),
    forgetting to reset the block's hash."""
    pool, blocks, keys, _ = _full_pool_cycle(lab)  # blocks 1..4 cached (1..3) and freed tail first
    _expect(_queue_ids(pool.free_block_queue), [5, 6, 7, 4, 3, 2, 1], "the free queue after freeing 1..4 tail first")
    _expect(_block_hashes(blocks[:3], keys), ["key 0", "key 1", "key 2"],
            "the hashes of the freed blocks 1..3 (freeing a block must not forget its hash: lazy eviction)")
    _expect([_found(pool.get_cached_block(k)) for k in keys], [1, 2, 3], "get_cached_block of keys 0..2 after free")

    reused = pool.get_new_blocks(5)  # 5, 6, 7, then 4 (never cached) and 3 (cached: evicted now)
    _expect(_ids(reused), [5, 6, 7, 4, 3], "get_new_blocks(5)")
    if blocks[2].block_hash is not None:
        raise AssertionError("block 3 was handed out again but kept its old hash")
    _expect(_found(pool.get_cached_block(keys[2])), None,
            "get_cached_block(key 2) once block 3 is handed out again (its index entry must go with the hash)")
    if keys[2] in pool.cached_block_hash_to_block:
        raise AssertionError(
            "key 2 is still in cached_block_hash_to_block (an empty entry?) after its only block was evicted")
    _expect([_found(pool.get_cached_block(k)) for k in keys[:2]], [1, 2], "get_cached_block of keys 0 and 1")


def test_reset_hash_forgets_the_hash_and_nothing_else(lab):
    """KVCacheBlock.reset_hash sets block_hash to None and changes nothing else: a cached block in the
    middle of a free queue keeps its links (the queue is intact, in order) and its ref_cnt 0; a cached
    block held by two requests keeps ref_cnt 2. vLLM resets the hashes of such blocks too
    (``BlockPool.reset_prefix_cache`` resets every block's, the free ones in the queue included).

    Catches: a reset that makes a fresh block (ref_cnt 0, links None): harmless where get_new_blocks
    calls it, on a block just popped with ref_cnt 0, but it cuts a queued block out of its queue's
    walk and forgets a held block's holders."""
    keys = lab.hash_request_tokens(list(range(8)), 4)
    blocks = [lab.KVCacheBlock(i) for i in range(1, 6)]
    queue = lab.FreeKVCacheBlockQueue(blocks)
    queued, held = blocks[2], lab.KVCacheBlock(9, ref_cnt=2)
    queued.block_hash, held.block_hash = keys
    queued.reset_hash()
    held.reset_hash()
    _expect(_labels([queued.block_hash, held.block_hash], keys), [None, None],
            "the hashes of block 3 (queued) and block 9 (held) after reset_hash()")
    if queued.prev_free_block is not blocks[1] or queued.next_free_block is not blocks[3]:
        raise AssertionError("block 3, queued between blocks 2 and 4, lost its links to them in reset_hash(): the "
                             "links are the queue's, reset_hash forgets the hash alone")
    _expect(_queue_ids(queue), [1, 2, 3, 4, 5], "the queue of blocks 1..5 after block 3's reset_hash()")
    _expect([queued.ref_cnt, held.ref_cnt], [0, 2], "ref_cnt of blocks 3 and 9 after reset_hash() (it counts holders)")
    _expect([queued.block_id, held.block_id], [3, 9], "the ids of blocks 3 and 9 after reset_hash()")


def test_touch_revives_a_cached_block_from_the_middle(lab):
    """Invariant 4: a newcomer with the same first two blocks finds them cached in the middle of the
    free queue; touching them takes them out of the queue (the others keep their order) with
    ref_cnt 1, and the next allocations never hand them out.

    Catches: a touch that leaves the block in the queue (it is handed to a second request while the
    first reads it), a touch that does not count the new reference."""
    pool, blocks, keys, _ = _full_pool_cycle(lab)  # queue: 5, 6, 7, 4, 3, 2, 1
    hits = [pool.get_cached_block(k) for k in keys[:2]]
    _expect([_found(b) for b in hits], [1, 2], "get_cached_block of keys 0 and 1")
    pool.touch(hits)
    _expect([b.ref_cnt for b in hits], [1, 1], "ref_cnt of the touched blocks 1 and 2")
    _expect(_queue_ids(pool.free_block_queue), [5, 6, 7, 4, 3],
            "the free queue after touching 1 and 2 (they leave it; the others keep their order)")
    _expect(pool.get_num_free_blocks(), 5, "get_num_free_blocks() after touching 1 and 2")
    _expect(sorted(_ids(pool.get_new_blocks(5))), [3, 4, 5, 6, 7], "get_new_blocks(5), sorted")
    _expect(_block_hashes(hits, keys), ["key 0", "key 1"], "the hashes of the revived blocks (they keep them)")


def test_touch_takes_any_iterable(lab):
    """touch, like free_blocks, takes any iterable of blocks: a generator or ``reversed(table)``
    touches every block it yields, once.

    Catches: a touch that walks its argument twice (first the null-block check, then the loop that
    counts the holders): an iterator is used up by the check, and nothing is touched."""
    pool, blocks, keys, _ = _full_pool_cycle(lab)  # queue: 5, 6, 7, 4, 3, 2, 1
    hits = [pool.get_cached_block(k) for k in keys[:2]]
    _expect([_found(b) for b in hits], [1, 2], "get_cached_block of keys 0 and 1")
    pool.touch(b for b in hits)
    _expect([b.ref_cnt for b in hits], [1, 1],
            "ref_cnt of blocks 1 and 2 after touch(a generator over them) (read the argument once: an iterator "
            "that a first pass has used up yields nothing to a second)")
    _expect(_queue_ids(pool.free_block_queue), [5, 6, 7, 4, 3], "the free queue after touch(a generator over 1, 2)")
    pool.touch(reversed(hits))
    _expect([b.ref_cnt for b in hits], [2, 2], "ref_cnt of blocks 1 and 2 after a second touch(reversed([1, 2]))")
    _expect(_queue_ids(pool.free_block_queue), [5, 6, 7, 4, 3], "the free queue after touching held blocks")


def test_a_block_listed_twice_counts_twice(lab):
    """touch and free_blocks count every element of their list: a block listed twice gains or loses
    two references in one call. touch([b, b]) of a free block takes it out of the queue once, with
    ref_cnt 2, whether or not it is cached; free_blocks([c, b, b]) then drops both references, and b
    joins the queue once, after c.

    Catches: touch in two passes (take every free block out of the queue, then count the holders),
    whose second remove of b finds it gone; free_blocks in two passes, as vLLM writes it (drop every
    reference, then append each listed block at 0), which appends b twice, a ValueError after the
    pool changed; a touch that takes only cached blocks out of the queue."""
    pool = lab.BlockPool(6)
    one, two, three = pool.get_new_blocks(3)
    keys = lab.hash_request_tokens(list(range(4)), 4)
    pool.cache_full_blocks([one], keys, 0, 1)  # block 1 holds key 0; blocks 2 and 3 hold no key
    pool.free_blocks([one, two])  # queue: 4, 5, 1, 2; block 3 still held once
    steps = [
        ("touch([block 2, block 2]) (free, no key)", lambda: pool.touch([two, two]), [0, 2, 1], [4, 5, 1]),
        ("touch([block 1, block 1]) (free, cached)", lambda: pool.touch([one, one]), [2, 2, 1], [4, 5]),
        ("free_blocks([block 3, block 2, block 2])", lambda: pool.free_blocks([three, two, two]), [2, 0, 0],
         [4, 5, 3, 2]),
        ("free_blocks([block 1, block 1])", lambda: pool.free_blocks([one, one]), [0, 0, 0], [4, 5, 3, 2, 1]),
    ]
    for what, call, refs, queue in steps:
        try:
            call()
        except ValueError as err:
            raise AssertionError(f"{what} raised ValueError({err}): each element of the list is one reference, a "
                                 f"block listed twice two (count them one element at a time)") from err
        _expect([one.ref_cnt, two.ref_cnt, three.ref_cnt], refs, f"ref_cnt of blocks 1, 2, 3 after {what}")
        _expect(_queue_ids(pool.free_block_queue), queue, f"the free queue after {what}")
    _expect(_found(pool.get_cached_block(keys[0])), 1, "get_cached_block(key 0) at the end (block 1 keeps it)")


def test_block_ids_are_stable(lab):
    """Invariant 2: ``pool.blocks[i]`` is block i forever, and caching never rewrites a caller's
    block table: when a second request fills a block with tokens already cached in another block,
    both blocks stay where they are and both are indexed under the key; the lookup returns the
    first one cached, and the second once the first is evicted.

    Catches: de-duplicating on cache (swapping the caller's block for the older copy changes a
    block table that the GPU already reads, and frees a block that holds written KV), an index that
    keeps one block per key (the other copy is lost to the cache)."""
    pool = lab.BlockPool(6)
    tokens = list(range(4))
    keys = lab.hash_request_tokens(tokens, 4)
    first = pool.get_new_blocks(1)  # block 1
    second = pool.get_new_blocks(1)  # block 2: the same tokens, computed again by another request
    table = list(second)
    pool.cache_full_blocks(first, keys, 0, 1)
    pool.cache_full_blocks(table, keys, 0, 1)
    if _ids(table) != [2]:
        raise AssertionError(f"cache_full_blocks changed the caller's block table: [2] -> {_ids(table)}")
    _expect([b.block_id for b in pool.blocks], list(range(6)), "the ids of pool.blocks")
    _expect(sorted(pool.cached_block_hash_to_block.get(keys[0], {})), [1, 2],
            "the blocks indexed under key 0 (both copies: no de-duplication)")
    _expect(_found(pool.get_cached_block(keys[0])), 1,
            "get_cached_block(key 0) with copies in blocks 1 (cached first) and 2: the first copy cached")

    pool.free_blocks(first)
    pool.free_blocks(second)  # queue: 3, 4, 5, 1, 2
    pool.get_new_blocks(4)  # 3, 4, 5 and 1: block 1 is evicted, block 2 still holds the tokens
    _expect(_found(pool.get_cached_block(keys[0])), 2, "get_cached_block(key 0) once block 1 is evicted")


def test_caching_disabled_never_hits(lab):
    """With enable_caching=False the pool still allocates and frees, but cache_full_blocks records
    nothing and every lookup misses; it still checks its arguments (a range that runs backwards or
    past the full blocks is a ValueError, caching or not).

    Catches: ignoring enable_caching; returning early before the checks, so that a caller's bad
    range passes silently until caching is turned on."""
    pool = lab.BlockPool(6, enable_caching=False)
    blocks = pool.get_new_blocks(2)
    keys = lab.hash_request_tokens(list(range(8)), 4)
    pool.cache_full_blocks(blocks, keys, 0, 2)
    _expect(_block_hashes(blocks, keys), [None, None], "the hashes of blocks 1, 2 with enable_caching=False")
    _expect(_found(pool.get_cached_block(keys[0])), None, "get_cached_block(key 0) with enable_caching=False")
    _expect(len(pool.cached_block_hash_to_block), 0, "keys in the index with enable_caching=False")
    for num_cached, num_full in [(2, 1), (0, 3)]:  # backwards; past the 2 blocks and 2 keys
        with pytest.raises(ValueError):
            pool.cache_full_blocks(blocks, keys, num_cached, num_full)
            pytest.fail(f"cache_full_blocks(2 blocks, 2 keys, {num_cached}, {num_full}) with enable_caching=False: "
                        f"no ValueError (the arguments are checked whether or not caching is enabled: return "
                        f"early only after the checks)")
    pool.free_blocks(blocks)
    _expect(pool.get_num_free_blocks(), 5, "get_num_free_blocks() after freeing both")


# --- everything at once: random interleavings against a brute-force model ----------------------


class _Model:
    """The pool as plain data: the free queue as a list, ref counts and hashes as dicts, the index
    as {key: [block ids in the order they were cached]}. What a correct BlockPool looks like."""

    def __init__(self, num_blocks):
        self.free = list(range(1, num_blocks))  # front first; block 0 is the null block
        self.ref = dict.fromkeys(range(num_blocks), 0)
        self.hash = dict.fromkeys(range(num_blocks))
        self.index: dict[bytes, list[int]] = {}

    def allocate(self, n):
        ids, self.free = self.free[:n], self.free[n:]
        for i in ids:
            if self.hash[i] is not None:  # lazy eviction
                self.index[self.hash[i]].remove(i)
                if not self.index[self.hash[i]]:
                    del self.index[self.hash[i]]
                self.hash[i] = None
            self.ref[i] = 1
        return ids

    def free_(self, ids):
        for i in ids:
            self.ref[i] -= 1
            if self.ref[i] == 0:
                self.free.append(i)

    def touch(self, ids):
        for i in ids:
            if self.ref[i] == 0:
                self.free.remove(i)
            self.ref[i] += 1

    def cache(self, ids, keys):
        for i, key in zip(ids, keys, strict=True):
            self.hash[i] = key
            self.index.setdefault(key, []).append(i)

    def lookup(self, key):
        return self.index[key][0] if key in self.index else None


def _index_of(pool) -> dict[bytes, tuple[int, ...]]:
    """The pool's prefix-cache index as plain data, {key: block ids in the index's own order}; checks
    that every entry is the pool's own block under its own id."""
    index = {}
    for key, same_hash in pool.cached_block_hash_to_block.items():
        for block_id, block in same_hash.items():
            if block is not pool.blocks[block_id]:
                raise AssertionError(f"the index holds another object as block {block_id}")
        index[key] = tuple(same_hash)
    return index


def _check_against_model(pool, model, sequences, key_names, where, looked_up, sweep):
    """The pool equals the model: the queue (both ways), the free count, every block's id, ref count and
    hash, every request's block table, the whole index (one read), and every lookup. Keys are named
    in messages by ``key_names`` (key -> which block of which tokens it stands for), never printed raw.

    A lookup reads its own index entry only, so ``get_cached_block(key)`` is asked again only when the
    key's entry (in the pool or in the model) is not what it was when it was last asked
    (``looked_up``: key -> those entries), and for every key ever seen when ``sweep``."""
    def name(key):
        return "no key" if key is None else key_names.get(key, "a key no request of this test has")

    queue_ids = _queue_ids(pool.free_block_queue)
    assert queue_ids == model.free, f"{where}: free queue {queue_ids}, expected {model.free}"
    free = pool.get_num_free_blocks()
    assert free == len(model.free), f"{where}: get_num_free_blocks() is {free}, expected {len(model.free)}"
    for i, block in enumerate(pool.blocks):
        assert block.block_id == i, f"{where}: pool.blocks[{i}] has id {block.block_id} (invariant 2)"
        assert block.ref_cnt == model.ref[i], f"{where}: block {i} ref_cnt {block.ref_cnt}, expected {model.ref[i]}"
        if block.block_hash != model.hash[i]:
            raise AssertionError(f"{where}: block {i} holds {name(block.block_hash)}, expected {name(model.hash[i])}")
    in_queue = set(queue_ids)
    should_be = {i for i, r in model.ref.items() if r == 0 and i != 0}
    assert in_queue == should_be, (
        f"{where}: invariant 1 broken: in the queue {sorted(in_queue)}, with ref_cnt 0 {sorted(should_be)}")
    for seq in sequences:
        if not all(b is pool.blocks[i] for b, i in zip(seq["blocks"], seq["ids"], strict=True)):
            raise AssertionError(f"{where}: a request's block table {seq['ids']} changed under it (invariant 2)")
    index = _index_of(pool)
    as_sets = {key: sorted(ids) for key, ids in index.items()}
    expected = {key: sorted(ids) for key, ids in model.index.items()}
    wrong = [f"{name(key)}: blocks {as_sets.get(key, [])}, expected {expected.get(key, [])}"
             for key in sorted({*as_sets, *expected}, key=name) if as_sets.get(key) != expected.get(key)]
    if wrong:
        raise AssertionError(f"{where}: the prefix-cache index differs from the model's for {len(wrong)} key(s): "
                             + "; ".join(wrong[:4]) + (" ..." if len(wrong) > 4 else ""))
    for key in key_names:
        entries = (index.get(key), tuple(model.index.get(key, ())))
        if sweep or looked_up.get(key) != entries:
            got = _found(pool.get_cached_block(key))
            assert got == model.lookup(key), (
                f"{where}: get_cached_block({name(key)}) finds block {got}, expected {model.lookup(key)} "
                f"(blocks cached under it, first cached first: {list(model.index.get(key, []))})")
            looked_up[key] = entries


@pytest.mark.parametrize("seed", range(4))
def test_random_interleavings_keep_the_invariants(lab, seed):
    """Several hundred seeded steps of a small serving workload: new requests (often repeating an
    earlier prompt's prefix, so that lookups hit blocks that are held, free or already evicted) look
    up their cached prefix, touch it, allocate the rest and cache their full blocks; running requests
    grow by a few tokens; finished ones free their blocks tail first. After every step the pool must
    equal the brute-force model exactly: queue order (read from the links, both ways), free count,
    every ref count and hash, the whole prefix-cache index, every request's block table, and every
    lookup (``get_cached_block`` of each key whose index entry changed, and of every key ever seen each
    25 steps and at the end: a lookup that reads only its own entry cannot change otherwise).

    Catches: any of the gallery's bugs that a directed test might let through, in any combination
    of states (a touched block that was just evicted, two copies of a key, a full pool)."""
    rng = random.Random(seed)
    block_size, num_blocks = rng.choice([1, 2, 4]), rng.choice([9, 16, 24])
    pool, model = lab.BlockPool(num_blocks), _Model(num_blocks)
    sequences, prompts = [], [[rng.randrange(4) for _ in range(12)]]
    key_names: dict[bytes, str] = {}  # key -> "block i of [tokens]": what messages call it
    looked_up = {}  # key -> its index entries (pool, model) when get_cached_block(key) was last checked

    def cache_full(seq):
        keys = lab.hash_request_tokens(seq["tokens"], block_size)
        n = len(seq["tokens"])
        assert len(keys) == n // block_size, (
            f"{n} tokens in blocks of {block_size} got {len(keys)} keys, expected {n // block_size} (invariant 3)")
        new = range(seq["num_cached"], len(keys))
        try:
            pool.cache_full_blocks(seq["blocks"], keys, seq["num_cached"], len(keys))
        except ValueError as err:
            ids = [seq["ids"][i] for i in new]
            hashed = [i for i in ids if pool.blocks[i].block_hash is not None]
            why = (f"the pool has a hash on {hashed}: a block handed out again must lose its hash (lazy eviction, "
                   f"in get_new_blocks)" if hashed else
                   "the pool has none on them either: only blocks num_cached_blocks <= i < num_full_blocks are to "
                   "be cached, the ones before are cached already")
            raise AssertionError(
                f"seed {seed}, step {step}: cache_full_blocks(table {seq['ids']}, its keys, {seq['num_cached']}, "
                f"{len(keys)}) raised ValueError ({err}); the model says blocks {ids} hold no hash yet, and {why}"
            ) from err
        model.cache([seq["ids"][i] for i in new], [keys[i] for i in new])
        for i, key in enumerate(keys):
            key_names.setdefault(key, f"the key of block {i} of tokens {seq['tokens'][:(i + 1) * block_size]}")
        seq["num_cached"] = len(keys)

    for step in range(250):
        action = rng.choice(["new", "new", "grow", "grow", "finish"])
        if action == "new":
            base = rng.choice(prompts)
            tokens = base[:rng.randrange(len(base) + 1)] + [rng.randrange(4) for _ in range(rng.randrange(1, 6))]
            keys = lab.hash_request_tokens(tokens, block_size)
            hits = []
            for key in keys[:(len(tokens) - 1) // block_size]:  # the last token is always computed
                block = pool.get_cached_block(key)
                assert _found(block) == model.lookup(key), (
                    f"step {step}: get_cached_block({key_names.get(key, 'a key never cached')}) finds block "
                    f"{_found(block)}, expected {model.lookup(key)}")
                if block is None:
                    break
                hits.append(block)
            needed = -(-len(tokens) // block_size) - len(hits)
            if needed + sum(b.ref_cnt == 0 for b in hits) > pool.get_num_free_blocks():
                continue  # the pool is too full: this request waits
            pool.touch(hits)
            model.touch(_ids(hits))
            new = pool.get_new_blocks(needed)
            assert _ids(new) == model.allocate(needed), f"step {step}: get_new_blocks took other blocks"
            seq = {"tokens": tokens, "blocks": hits + new, "ids": _ids(hits + new), "num_cached": len(hits)}
            sequences.append(seq)
            prompts.append(tokens)
            cache_full(seq)
        elif action == "grow" and sequences:
            seq = rng.choice(sequences)
            seq["tokens"] += [rng.randrange(4) for _ in range(rng.randrange(1, 2 * block_size + 1))]
            needed = -(-len(seq["tokens"]) // block_size) - len(seq["blocks"])
            if needed > pool.get_num_free_blocks():
                sequences.remove(seq)  # preempted: its blocks go back, tail first
                pool.free_blocks(reversed(seq["blocks"]))
                model.free_(reversed(seq["ids"]))
            else:
                new = pool.get_new_blocks(needed)
                assert _ids(new) == model.allocate(needed), f"step {step}: get_new_blocks took other blocks"
                seq["blocks"] += new
                seq["ids"] += _ids(new)
                cache_full(seq)
        elif action == "finish" and sequences:
            seq = sequences.pop(rng.randrange(len(sequences)))
            pool.free_blocks(reversed(seq["blocks"]))
            model.free_(reversed(seq["ids"]))
        _check_against_model(pool, model, sequences, key_names, f"seed {seed}, step {step} ({action})", looked_up,
                             sweep=step % 25 == 24)
