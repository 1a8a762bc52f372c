"""Lab 02-05, given: what ``KVCacheManager`` inherits and the learner does not write.

The constructor, ``usage``, the request's keys (``_update_block_hashes``) and the argument checks of
``allocate_slots`` (``_check_allocate``), over lab 02-01's reference pool (never the learner's own
02-01 file). Written once, here; ``starter.py`` and ``solution.py`` both subclass
``KVCacheManagerBase``.
"""

from __future__ import annotations

import labkit

_allocator = labkit.load_reference("02-01")
BlockPool = _allocator.BlockPool
KVCacheBlock = _allocator.KVCacheBlock
hash_request_tokens = _allocator.hash_request_tokens


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` in integers."""
    return -(-a // b)


class KVCacheManagerBase:
    """The bookkeeping of ``KVCacheManager``: its pool, block tables and cached counts."""

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_caching: bool = True) -> None:
        # A bool is an int to Python (True == 1), but never a size: refused like a float.
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.block_pool = BlockPool(num_gpu_blocks, enable_caching)
        self.req_to_blocks: dict[str, list[KVCacheBlock]] = {}  # request id -> its block table
        self.num_cached_block: dict[str, int] = {}  # request id -> how many of its blocks are cached

    @property
    def usage(self) -> float:
        """The fraction of the pool's blocks in use, the null block left out (as vLLM's usage)."""
        return self.block_pool.get_usage()

    def _update_block_hashes(self, request) -> None:
        """Make ``request.block_hashes`` the keys of all its full blocks (recomputed only when a block
        has filled since). Call it before reading the keys: tokens appended by decoding have none yet."""
        if len(request.block_hashes) < request.num_tokens // self.block_size:
            request.block_hashes = hash_request_tokens(request.all_token_ids, self.block_size)

    def _check_allocate(self, request, num_new_tokens, num_new_computed_tokens, new_computed_blocks, req_blocks):
        """ValueError for arguments ``allocate_slots`` cannot honour."""
        # A bool is an int to Python, and True passes as 1: a count of tokens is never a bool.
        if isinstance(num_new_tokens, bool) or not isinstance(num_new_tokens, int) or num_new_tokens < 1:
            raise ValueError(f"num_new_tokens must be a positive integer, got {num_new_tokens!r}")
        if new_computed_blocks and req_blocks:
            raise ValueError(f"request {request.request_id!r} already has blocks: prefix-cache hits are only "
                             f"for a new request")
        # Not an int (a numpy integer, 8.0, False) would pass the comparison below (False == 0) and reach
        # the pool only after the hits were touched: refused here, before anything changes, like num_new_tokens.
        if isinstance(num_new_computed_tokens, bool) or not isinstance(num_new_computed_tokens, int):
            raise ValueError(f"num_new_computed_tokens must be an integer, got {num_new_computed_tokens!r}")
        if num_new_computed_tokens != len(new_computed_blocks) * self.block_size:
            raise ValueError(f"num_new_computed_tokens={num_new_computed_tokens} but new_computed_blocks hold "
                             f"{len(new_computed_blocks)} blocks of {self.block_size} tokens")
        if request.num_computed_tokens + num_new_computed_tokens + num_new_tokens > request.num_tokens:
            raise ValueError(f"request {request.request_id!r} has {request.num_tokens} tokens: it cannot compute "
                             f"{num_new_tokens} more after {request.num_computed_tokens + num_new_computed_tokens}")
