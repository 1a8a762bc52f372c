"""Lab 02-01, your work: the block allocator of a paged KV cache.

Fill in the functions and methods in the order of the README's steps (1: hashes, 2: the free queue,
3: allocate and free, 4: the prefix cache), then run
``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-01-block-allocator``.

The invariants every operation must keep:
1. a block is in the free queue exactly when its ``ref_cnt`` is 0 (the null block never is);
2. block ids are stable: a block never changes id, and a caller's block table is never rewritten;
3. only full blocks are hashed and cached;
4. a cached block in the free queue is still usable: ``touch`` takes it back out of the middle of the
   queue; its hash is dropped only when the block is handed out again (lazy eviction).

The input checks (``_check_parent_hash``, ``_check_token_ids``, ``_check_can_free``) are given:
call them where the docstrings say.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from labkit.integers import as_int  # given: the integer check the labs share (an int or a numpy integer)

# The parent of a sequence's first block. Fixed, so that keys are the same in every process and run.
NONE_HASH: bytes = hashlib.sha256(b"paged-attention-labs: the parent of a first block").digest()


def _check_parent_hash(parent_hash) -> bytes:
    """``parent_hash`` itself, or NONE_HASH for None; ValueError for anything else."""
    if parent_hash is None:
        return NONE_HASH
    if not isinstance(parent_hash, bytes) or len(parent_hash) != len(NONE_HASH):
        raise ValueError(f"parent_hash must be None or a {len(NONE_HASH)}-byte block hash, got {parent_hash!r}")
    return parent_hash


def _check_token_ids(token_ids) -> list[int]:
    """The token ids as a list of Python ints (numpy integers accepted; a bool is no token id, although
    Python counts True as 1); ValueError if empty or out of range."""
    try:
        tokens = [as_int(t, "token_ids: each token id") for t in token_ids]
    except TypeError:  # not iterable
        raise ValueError(f"token_ids must be a sequence of integers, got {token_ids!r}") from None
    if not tokens:
        raise ValueError("token_ids must not be empty: a block holds at least one token")
    if min(tokens) < 0 or max(tokens) >= 2**63:
        raise ValueError("token_ids must be integers in [0, 2**63)")
    return tokens


# --- step 1: block hashes ----------------------------------------------------------------------


def hash_block_tokens(parent_hash: bytes | None, token_ids: Sequence[int]) -> bytes:
    """The 32-byte key of a full block, from its parent's key and its own token ids.

    ``parent_hash`` is the key of the block before it in the sequence, or None for a first block
    (use ``_check_parent_hash``, which turns None into ``NONE_HASH`` and rejects anything else).
    ``token_ids`` is a non-empty sequence of ints or numpy integers (``_check_token_ids``).

    Returns ``bytes`` of length 32 (a SHA-256 digest), the same in every process and on every run,
    whatever ``PYTHONHASHSEED`` is; any change of the parent, of a token or of the tokens' order
    gives another key.
    """
    raise NotImplementedError(
        "hash_block_tokens: not implemented yet (README step 1: SHA-256 of the parent's 32 bytes "
        "followed by each token as 8 bytes)"
    )


def hash_request_tokens(token_ids: Sequence[int], block_size: int) -> list[bytes]:
    """The keys of every full block of a sequence, in order: key ``i`` is
    ``hash_block_tokens(key i - 1, tokens of block i)`` (None as the parent of block 0).

    A sequence of ``n`` tokens has ``n // block_size`` keys: the partial last block has none.
    ``token_ids`` is any sequence, a ``collections.deque`` included, which cannot be sliced: make
    it a list first. ValueError unless ``block_size`` is a positive int.
    """
    raise NotImplementedError(
        "hash_request_tokens: not implemented yet (README step 1: chain hash_block_tokens over the "
        "len(token_ids) // block_size full blocks)"
    )


# --- step 2: the free queue --------------------------------------------------------------------


@dataclass(eq=False)  # identity, not field equality: two blocks are the same block only if they are one object
class KVCacheBlock:
    """Metadata of one physical KV-cache block (given; ``reset_hash`` is step 4)."""

    block_id: int
    ref_cnt: int = 0  # how many running requests hold this block in their block table
    block_hash: bytes | None = None  # set once the block is full and cached; None otherwise
    # The free queue's links. Only FreeKVCacheBlockQueue writes them; both are None while the block
    # is not in the queue. repr=False: printing a block must not walk the whole list.
    prev_free_block: KVCacheBlock | None = field(default=None, repr=False)
    next_free_block: KVCacheBlock | None = field(default=None, repr=False)
    is_null: bool = False  # block 0: a placeholder that is never handed out, freed or cached

    def reset_hash(self) -> None:
        """Forget the block's hash (it is being evicted from the prefix cache); nothing else changes."""
        raise NotImplementedError("KVCacheBlock.reset_hash: not implemented yet (README step 4: block_hash = None)")


class FreeKVCacheBlockQueue:
    """The free blocks, in eviction order: the front is handed out (and evicted) first.

    A doubly linked list through the blocks' own ``prev_free_block`` / ``next_free_block``, between
    two sentinel blocks ``fake_free_list_head`` and ``fake_free_list_tail`` (``KVCacheBlock(-1)``)
    that never leave. ``num_free_blocks`` counts the real blocks in the list. Every operation is O(1)
    except ``get_all_free_blocks``.
    """

    def __init__(self, blocks: list[KVCacheBlock]) -> None:
        """A queue holding ``blocks`` in the given order (an empty list gives an empty queue:
        the two sentinels linked to each other)."""
        raise NotImplementedError(
            "FreeKVCacheBlockQueue.__init__: not implemented yet (README step 2: two sentinels linked to "
            "each other, num_free_blocks = 0, then append every block)"
        )

    def popleft(self) -> KVCacheBlock:
        """Take the first block out of the queue and return it (its links set to None).
        ValueError if the queue is empty."""
        raise NotImplementedError("FreeKVCacheBlockQueue.popleft: not implemented yet (README step 2)")

    def remove(self, block: KVCacheBlock) -> None:
        """Take ``block`` out of the queue wherever it is, in O(1): link its neighbours to each other,
        set its links to None. ValueError if it is not in the queue (its links are None)."""
        raise NotImplementedError(
            "FreeKVCacheBlockQueue.remove: not implemented yet (README step 2: unlink in O(1), no search)"
        )

    def append(self, block: KVCacheBlock) -> None:
        """Put ``block`` at the back of the queue, before the tail sentinel. ValueError if it is
        already in a queue (its links are not None)."""
        raise NotImplementedError("FreeKVCacheBlockQueue.append: not implemented yet (README step 2)")

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        """The blocks in the queue, front to back (a walk of the list: for tests and debugging)."""
        raise NotImplementedError("FreeKVCacheBlockQueue.get_all_free_blocks: not implemented yet (README step 2)")


# --- steps 3 and 4: the block pool -------------------------------------------------------------


class BlockPool:
    """All the KV-cache blocks of one engine, the free queue, and the prefix-cache index.

    Attributes: ``num_gpu_blocks``, ``enable_caching``, ``blocks`` (``blocks[i].block_id == i``),
    ``free_block_queue``, ``null_block`` (block 0) and ``cached_block_hash_to_block``:
    ``{block_hash: {block_id: block}}``, every cached block under its key (several blocks may hold
    the same tokens: no de-duplication).
    """

    def __init__(self, num_gpu_blocks: int, enable_caching: bool = True) -> None:
        """``num_gpu_blocks`` blocks with ids 0 .. num_gpu_blocks - 1, all in the free queue in id
        order except block 0, which is taken out once and marked ``is_null``: the null block.
        ValueError unless ``num_gpu_blocks`` is a positive int."""
        raise NotImplementedError(
            "BlockPool.__init__: not implemented yet (README step 3: the blocks, the queue, the index, "
            "and block 0 taken out as the null block)"
        )

    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """Take ``num_blocks`` blocks from the front of the free queue, in queue order, each with
        ``ref_cnt`` 1. A block that was cached is evicted now (lazy eviction, step 4: drop it from
        the index and reset its hash). ValueError, and no change, if ``num_blocks`` is negative or
        more than the free blocks."""
        raise NotImplementedError(
            "BlockPool.get_new_blocks: not implemented yet (README step 3: popleft, evict if cached, ref_cnt = 1)"
        )

    def _maybe_evict_cached_block(self, block: KVCacheBlock) -> bool:
        """Drop ``block`` from ``cached_block_hash_to_block`` and reset its hash; False if it had no hash."""
        raise NotImplementedError(
            "BlockPool._maybe_evict_cached_block: not implemented yet (README step 4: lazy eviction)"
        )

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock]) -> None:
        """Drop one reference to each block; each block whose ``ref_cnt`` reaches 0 joins the back of
        the free queue, in the order given (the caller lists the first to evict first). A freed block
        keeps its hash. Call ``_check_can_free`` first: a double free or the null block is a
        ValueError before anything changes."""
        raise NotImplementedError(
            "BlockPool.free_blocks: not implemented yet (README step 3: ref_cnt -= 1, append at 0)"
        )

    def _check_can_free(self, blocks: list[KVCacheBlock]) -> None:
        """ValueError if ``blocks`` holds the null block, or a block more times than its ``ref_cnt``."""
        times_freed: dict[int, int] = {}
        for block in blocks:
            if block.is_null:
                raise ValueError("ordered_blocks: the null block (block 0) is never allocated and cannot be freed")
            times_freed[block.block_id] = times_freed.get(block.block_id, 0) + 1
            if times_freed[block.block_id] > block.ref_cnt:
                raise ValueError(f"ordered_blocks: double free of block {block.block_id} (freed more often than held)")

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """Add one reference to each block (a new request shares it). A block whose ``ref_cnt`` was 0
        is in the free queue: take it out, from wherever it is. ValueError, before any change, if a
        block is the null block."""
        raise NotImplementedError(
            "BlockPool.touch: not implemented yet (README step 4: take it out of the queue if ref_cnt == 0, "
            "then ref_cnt += 1)"
        )

    def cache_full_blocks(
        self, blocks: list[KVCacheBlock], block_hashes: list[bytes], num_cached_blocks: int, num_full_blocks: int
    ) -> None:
        """Cache the newly full blocks of one sequence: for ``num_cached_blocks <= i < num_full_blocks``,
        set ``blocks[i].block_hash = block_hashes[i]`` and index the block under that key.

        ``blocks`` is the sequence's block table (never modified), ``block_hashes`` the keys of its
        full blocks (``hash_request_tokens``). ValueError, before any change, unless
        ``0 <= num_cached_blocks <= num_full_blocks <= min(len(blocks), len(block_hashes))``, or if
        one of the blocks is the null block, already has a hash, or appears twice in that range. Does nothing
        else when
        ``enable_caching`` is False.
        """
        raise NotImplementedError(
            "BlockPool.cache_full_blocks: not implemented yet (README step 4: set block_hash and index the block)"
        )

    def get_cached_block(self, block_hash: bytes) -> KVCacheBlock | None:
        """A block cached under ``block_hash`` (the first one cached, if several), or None."""
        raise NotImplementedError("BlockPool.get_cached_block: not implemented yet (README step 4)")

    def get_num_free_blocks(self) -> int:
        """The number of blocks in the free queue (cached ones included: they can be evicted)."""
        raise NotImplementedError("BlockPool.get_num_free_blocks: not implemented yet (README step 3)")

    def get_usage(self) -> float:
        """The fraction of the blocks that can be handed out (``num_gpu_blocks - 1``: the null block
        is left out) that are not free, between 0 and 1; 0.0 for a pool of the null block alone."""
        raise NotImplementedError(
            "BlockPool.get_usage: not implemented yet (README step 3: 1 - free / (total - 1), 0 when total is 1)")
