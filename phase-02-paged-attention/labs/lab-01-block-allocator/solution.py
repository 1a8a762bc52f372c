"""Lab 02-01, reference solution: the block allocator of a paged KV cache.

Four pieces, named after vLLM v0.22.1's ``vllm/v1/core/kv_cache_utils.py`` and
``vllm/v1/core/block_pool.py``:

- ``hash_block_tokens`` / ``hash_request_tokens``: the key of a full block covers its own tokens
  and, through its parent's key, every token before it.
- ``KVCacheBlock``: the metadata of one physical block (the KV data itself lives in a tensor
  indexed by ``block_id``; this lab never touches it).
- ``FreeKVCacheBlockQueue``: the free blocks in eviction order, a doubly linked list threaded
  through the blocks themselves, so that a block can leave from the middle in O(1).
- ``BlockPool``: hands blocks out, takes them back, and keeps the prefix-cache index
  ``{block_hash: {block_id: block}}`` of full blocks whose contents are known.

The invariants every operation keeps:
1. a block is in the free queue exactly when its ``ref_cnt`` is 0 (the null block never is);
2. block ids are stable: a block never changes id, and a caller's block table is never rewritten;
3. only full blocks are hashed and cached;
4. a cached block in the free queue is still usable: ``touch`` takes it back out of the middle of the
   queue; its hash is dropped only when the block is handed out again (lazy eviction).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from labkit.integers import as_int  # given: the integer check the labs share (an int or a numpy integer)

# The parent of a sequence's first block. Fixed, so that keys are the same in every process and run.
NONE_HASH: bytes = hashlib.sha256(b"paged-attention-labs: the parent of a first block").digest()


def _check_parent_hash(parent_hash) -> bytes:
    if parent_hash is None:
        return NONE_HASH
    if not isinstance(parent_hash, bytes) or len(parent_hash) != len(NONE_HASH):
        raise ValueError(f"parent_hash must be None or a {len(NONE_HASH)}-byte block hash, got {parent_hash!r}")
    return parent_hash


def _check_token_ids(token_ids) -> list[int]:
    try:  # an int or a numpy integer, never a bool: True is no token id, although Python counts it as 1
        tokens = [as_int(t, "token_ids: each token id") for t in token_ids]
    except TypeError:  # not iterable
        raise ValueError(f"token_ids must be a sequence of integers, got {token_ids!r}") from None
    if not tokens:
        raise ValueError("token_ids must not be empty: a block holds at least one token")
    if min(tokens) < 0 or max(tokens) >= 2**63:
        raise ValueError("token_ids must be integers in [0, 2**63)")
    return tokens


def hash_block_tokens(parent_hash: bytes | None, token_ids: Sequence[int]) -> bytes:
    """The 32-byte key of a full block: SHA-256 of its parent's key and its token ids."""
    parent = _check_parent_hash(parent_hash)
    tokens = _check_token_ids(token_ids)
    # Fixed-width encoding: the parent is always 32 bytes and each token 8, so two different
    # (parent, tokens) pairs never produce the same byte string.
    data = parent + b"".join(t.to_bytes(8, "little") for t in tokens)
    return hashlib.sha256(data).digest()


def hash_request_tokens(token_ids: Sequence[int], block_size: int) -> list[bytes]:
    """The chained keys of every full block of a sequence, in order; a partial last block has none.

    ``token_ids`` is any sequence, a ``collections.deque`` included, which cannot be sliced: it is
    made a list first."""
    if not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
    token_ids = list(token_ids)
    num_full_blocks = len(token_ids) // block_size  # floor: the partial tail is not hashed
    hashes: list[bytes] = []
    parent = None
    for i in range(num_full_blocks):
        parent = hash_block_tokens(parent, token_ids[i * block_size : (i + 1) * block_size])
        hashes.append(parent)
    return hashes


@dataclass(eq=False)  # identity, not field equality: two blocks are the same block only if they are one object
class KVCacheBlock:
    """Metadata of one physical KV-cache block."""

    block_id: int
    ref_cnt: int = 0  # how many running requests hold this block in their block table
    block_hash: bytes | None = None  # set once the block is full and cached; None otherwise
    # The free queue's links. Only FreeKVCacheBlockQueue writes them; both are None while the block
    # is not in the queue. repr=False: printing a block must not walk the whole list.
    prev_free_block: KVCacheBlock | None = field(default=None, repr=False)
    next_free_block: KVCacheBlock | None = field(default=None, repr=False)
    is_null: bool = False  # block 0: a placeholder that is never handed out, freed or cached

    def reset_hash(self) -> None:
        """Forget the block's hash (it is being evicted from the prefix cache)."""
        self.block_hash = None


class FreeKVCacheBlockQueue:
    """The free blocks, in eviction order: the front is handed out (and evicted) first.

    A doubly linked list through the blocks' own ``prev_free_block`` / ``next_free_block``, between
    two sentinel blocks (``fake_free_list_head``, ``fake_free_list_tail``, id -1) that never leave,
    so every real block in the queue has a neighbour on each side and no operation needs a branch
    for "first" or "last". Unlike ``collections.deque``, removing a block from the middle is O(1).
    """

    def __init__(self, blocks: list[KVCacheBlock]) -> None:
        self.num_free_blocks = 0
        self.fake_free_list_head = KVCacheBlock(block_id=-1)
        self.fake_free_list_tail = KVCacheBlock(block_id=-1)
        self.fake_free_list_head.next_free_block = self.fake_free_list_tail
        self.fake_free_list_tail.prev_free_block = self.fake_free_list_head
        for block in blocks:
            self.append(block)

    def popleft(self) -> KVCacheBlock:
        """Take the first free block out of the queue."""
        if self.num_free_blocks == 0:
            raise ValueError("no free blocks: the free queue is empty")
        block = self.fake_free_list_head.next_free_block
        self.remove(block)
        return block

    def remove(self, block: KVCacheBlock) -> None:
        """Take ``block`` out of the queue, wherever it is, in O(1)."""
        if block.prev_free_block is None or block.next_free_block is None:
            raise ValueError(f"block {block.block_id} is not in the free queue")
        block.prev_free_block.next_free_block = block.next_free_block
        block.next_free_block.prev_free_block = block.prev_free_block
        block.prev_free_block = block.next_free_block = None
        self.num_free_blocks -= 1

    def append(self, block: KVCacheBlock) -> None:
        """Put ``block`` at the back of the queue (it will be evicted last)."""
        if block.prev_free_block is not None or block.next_free_block is not None:
            raise ValueError(f"block {block.block_id} is already in the free queue")
        last = self.fake_free_list_tail.prev_free_block
        last.next_free_block = block
        block.prev_free_block = last
        block.next_free_block = self.fake_free_list_tail
        self.fake_free_list_tail.prev_free_block = block
        self.num_free_blocks += 1

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        """The blocks in the queue, front to back (a walk of the list: for tests and debugging)."""
        blocks = []
        block = self.fake_free_list_head.next_free_block
        while block is not self.fake_free_list_tail:
            blocks.append(block)
            block = block.next_free_block
        return blocks


class BlockPool:
    """All the KV-cache blocks of one engine, the free queue, and the prefix-cache index."""

    def __init__(self, num_gpu_blocks: int, enable_caching: bool = True) -> None:
        if not isinstance(num_gpu_blocks, int) or num_gpu_blocks < 1:
            raise ValueError(f"num_gpu_blocks must be a positive integer, got {num_gpu_blocks!r}")
        self.num_gpu_blocks = num_gpu_blocks
        self.enable_caching = enable_caching
        self.blocks = [KVCacheBlock(block_id=i) for i in range(num_gpu_blocks)]
        self.free_block_queue = FreeKVCacheBlockQueue(self.blocks)
        # {block_hash: {block_id: block}}: several blocks may hold the same tokens (no de-duplication).
        self.cached_block_hash_to_block: dict[bytes, dict[int, KVCacheBlock]] = {}
        # Block 0 is the null block: taken out of the queue once, never handed out.
        self.null_block = self.free_block_queue.popleft()
        self.null_block.is_null = True

    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        """Take ``num_blocks`` blocks from the front of the free queue, each with ``ref_cnt`` 1."""
        if not isinstance(num_blocks, int) or num_blocks < 0:
            raise ValueError(f"num_blocks must be a non-negative integer, got {num_blocks!r}")
        if num_blocks > self.get_num_free_blocks():
            raise ValueError(f"num_blocks={num_blocks}, but only {self.get_num_free_blocks()} blocks are free")
        blocks = []
        for _ in range(num_blocks):
            block = self.free_block_queue.popleft()
            self._maybe_evict_cached_block(block)  # lazy eviction: only now does the cached content go
            block.ref_cnt = 1
            blocks.append(block)
        return blocks

    def _maybe_evict_cached_block(self, block: KVCacheBlock) -> bool:
        """Drop ``block`` from the prefix-cache index and forget its hash; False if it had none."""
        if block.block_hash is None:
            return False
        same_hash = self.cached_block_hash_to_block[block.block_hash]
        del same_hash[block.block_id]
        if not same_hash:
            del self.cached_block_hash_to_block[block.block_hash]
        block.reset_hash()
        return True

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock]) -> None:
        """Drop one reference to each block; a block whose count reaches 0 joins the back of the free
        queue, in the order given (the first one given is evicted first). Its hash stays."""
        blocks = list(ordered_blocks)
        self._check_can_free(blocks)
        for block in blocks:
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self.free_block_queue.append(block)

    def _check_can_free(self, blocks: list[KVCacheBlock]) -> None:
        # Checked before anything changes, so that a bad call leaves the pool as it was.
        times_freed: dict[int, int] = {}
        for block in blocks:
            if block.is_null:
                raise ValueError("ordered_blocks: the null block (block 0) is never allocated and cannot be freed")
            times_freed[block.block_id] = times_freed.get(block.block_id, 0) + 1
            if times_freed[block.block_id] > block.ref_cnt:
                raise ValueError(f"ordered_blocks: double free of block {block.block_id} (freed more often than held)")

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """Add one reference to each block (a new request shares it); a block that was free leaves the
        free queue, from wherever it is in it."""
        blocks = list(blocks)
        if any(block.is_null for block in blocks):
            raise ValueError("blocks: the null block (block 0) cannot be touched, it holds no tokens")
        for block in blocks:
            if block.ref_cnt == 0:
                self.free_block_queue.remove(block)
            block.ref_cnt += 1

    def cache_full_blocks(
        self, blocks: list[KVCacheBlock], block_hashes: list[bytes], num_cached_blocks: int, num_full_blocks: int
    ) -> None:
        """Give ``blocks[i]`` the hash ``block_hashes[i]`` and index it, for each newly full block
        ``num_cached_blocks <= i < num_full_blocks`` of one sequence's block table."""
        if not 0 <= num_cached_blocks <= num_full_blocks:
            raise ValueError(f"need 0 <= num_cached_blocks <= num_full_blocks, got {num_cached_blocks}, "
                             f"{num_full_blocks}")
        if num_full_blocks > len(blocks) or num_full_blocks > len(block_hashes):
            raise ValueError(f"num_full_blocks={num_full_blocks} but the sequence has {len(blocks)} blocks and "
                             f"{len(block_hashes)} full-block hashes: only full blocks are cached")
        new_full_blocks = blocks[num_cached_blocks:num_full_blocks]
        new_hashes = block_hashes[num_cached_blocks:num_full_blocks]
        listed = set()  # a block twice in the range would be indexed under two keys and evicted from one
        for block in new_full_blocks:
            if block.is_null or block.block_hash is not None or id(block) in listed:
                raise ValueError(f"blocks: block {block.block_id} is the null block, already cached, or listed twice")
            listed.add(id(block))
        if not self.enable_caching:
            return
        for block, block_hash in zip(new_full_blocks, new_hashes, strict=True):
            block.block_hash = block_hash
            self.cached_block_hash_to_block.setdefault(block_hash, {})[block.block_id] = block

    def get_cached_block(self, block_hash: bytes) -> KVCacheBlock | None:
        """A block holding the tokens ``block_hash`` stands for (the first one cached), or None."""
        same_hash = self.cached_block_hash_to_block.get(block_hash)
        if not same_hash:
            return None
        return next(iter(same_hash.values()))

    def get_num_free_blocks(self) -> int:
        """Blocks in the free queue (cached ones included: they can be evicted and reused)."""
        return self.free_block_queue.num_free_blocks

    def get_usage(self) -> float:
        """The fraction of the blocks that can be handed out (all but the null block) that are not
        free, between 0 and 1; 0 for a pool that holds the null block alone."""
        usable = self.num_gpu_blocks - 1  # the null block is never free, never handed out
        if usable == 0:
            return 0.0
        return 1.0 - self.get_num_free_blocks() / usable
