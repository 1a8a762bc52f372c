"""Lab 02-05, your work: the KV-cache manager, over lab 02-01's block pool.

The manager keeps each request's block table and speaks the scheduler's language: how many of a
new request's tokens are already in the prefix cache (``get_computed_blocks``), room for the tokens
it computes next (``allocate_slots``, None when the pool cannot hold them), and the end of a request
(``free``). Names follow vLLM v0.10.1's ``vllm/v1/core/kv_cache_manager.py`` and
``single_type_kv_cache_manager.py`` (one KV-cache group, full attention).

The block pool, the block and the hashes are lab 02-01's reference solution, whatever state your
own 02-01 is in. ``Request``, ``KVCacheManager.__init__`` and the helpers whose names start with ``_``
are given, except ``_cache_full_blocks``; write the rest in the order of the README's steps
(1: get_computed_blocks, 2: allocate_slots, _cache_full_blocks and get_block_ids, 3: free), then run
``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-05-share-and-evict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import labkit

_allocator = labkit.load_reference("02-01")
BlockPool = _allocator.BlockPool
KVCacheBlock = _allocator.KVCacheBlock
hash_request_tokens = _allocator.hash_request_tokens


@dataclass(eq=False)
class Request:
    """What the manager needs to know about a request (given: vLLM's ``vllm/v1/request.py`` has more).

    ``num_computed_tokens`` belongs to the scheduler: it counts the tokens whose KV is in the cache
    (or is written by the step being scheduled); the manager reads it and never changes it.
    ``block_hashes`` holds the keys of the request's full blocks, kept up to date by the manager.
    """

    request_id: str
    prompt_token_ids: list[int]
    output_token_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0
    block_hashes: list[bytes] = field(default_factory=list)

    @property
    def all_token_ids(self) -> list[int]:
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    def append_output_token_ids(self, token_ids: list[int]) -> None:
        self.output_token_ids.extend(token_ids)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KVCacheManager:
    """Block tables of the running requests, over one BlockPool of ``num_gpu_blocks`` blocks (given)."""

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_caching: bool = True) -> None:
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.block_pool = BlockPool(num_gpu_blocks, enable_caching)
        self.req_to_blocks: dict[str, list[KVCacheBlock]] = {}  # request id -> its block table
        self.num_cached_block: dict[str, int] = {}  # request id -> how many of its blocks are cached

    @property
    def usage(self) -> float:
        """The fraction of the pool's blocks in use (the null block counts as used)."""
        return self.block_pool.get_usage()

    def _update_block_hashes(self, request: Request) -> None:
        """Make ``request.block_hashes`` the keys of all its full blocks (only when one was added)."""
        if len(request.block_hashes) < request.num_tokens // self.block_size:
            request.block_hashes = hash_request_tokens(request.all_token_ids, self.block_size)

    def get_computed_blocks(self, request: Request) -> tuple[list[KVCacheBlock], int]:
        """The request's prefix-cache hits: ``(blocks, num_tokens)``.

        ``blocks`` are the cached blocks of the request's first full blocks, in order, up to the
        first miss (call ``_update_block_hashes`` first, then look each key up in the pool).
        Look up at most ``(request.num_tokens - 1) // block_size`` blocks: the last token is always
        computed. ``num_tokens`` is ``len(blocks) * block_size``. ``([], 0)`` when caching is off.
        Nothing changes: no ref count, no queue.
        """
        raise NotImplementedError(
            "KVCacheManager.get_computed_blocks: not implemented yet (README step 1: look up "
            "request.block_hashes in the pool, at most (num_tokens - 1) // block_size, stop at the first miss)"
        )

    def allocate_slots(
        self,
        request: Request,
        num_new_tokens: int,
        num_new_computed_tokens: int = 0,
        new_computed_blocks: list[KVCacheBlock] | None = None,
    ) -> list[KVCacheBlock] | None:
        """Room in the cache for the request's next ``num_new_tokens`` tokens, after its
        ``request.num_computed_tokens`` computed ones and, for a new request, the prefix-cache hits
        ``new_computed_blocks`` (``num_new_computed_tokens`` tokens) found by get_computed_blocks.

        The request needs ``ceil((computed + hit + new tokens) / block_size)`` blocks in all. If the
        new blocks it lacks, plus the hits that wait in the free queue (``ref_cnt == 0``), are more
        than the pool's free blocks, return None and change nothing. Otherwise touch the hits, append
        them and then the new blocks to the request's table (``req_to_blocks``; start
        ``num_cached_block`` at the number of hits for a new request), cache the blocks that
        ``computed + hit + new`` tokens fill (``_cache_full_blocks``, when caching is on), and return
        the new blocks ([] if none were needed). Call ``_check_allocate`` first (it raises
        ValueError for bad arguments).
        """
        raise NotImplementedError(
            "KVCacheManager.allocate_slots: not implemented yet (README step 2: count, check, touch the hits, "
            "take new blocks, cache the full ones)"
        )

    def _check_allocate(self, request, num_new_tokens, num_new_computed_tokens, new_computed_blocks, req_blocks):
        """ValueError for arguments allocate_slots cannot honour (given)."""
        if not isinstance(num_new_tokens, int) or num_new_tokens < 1:
            raise ValueError(f"num_new_tokens must be a positive integer, got {num_new_tokens!r}")
        if new_computed_blocks and req_blocks:
            raise ValueError(f"request {request.request_id!r} already has blocks: prefix-cache hits are only "
                             f"for a new request")
        if num_new_computed_tokens != len(new_computed_blocks) * self.block_size:
            raise ValueError(f"num_new_computed_tokens={num_new_computed_tokens} but new_computed_blocks hold "
                             f"{len(new_computed_blocks)} blocks of {self.block_size} tokens")
        if request.num_computed_tokens + num_new_computed_tokens + num_new_tokens > request.num_tokens:
            raise ValueError(f"request {request.request_id!r} has {request.num_tokens} tokens: it cannot compute "
                             f"{num_new_tokens} more after {request.num_computed_tokens + num_new_computed_tokens}")

    def _cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        """Cache the request's blocks that its first ``num_tokens`` tokens fill, beyond the
        ``num_cached_block[request_id]`` already cached (``block_pool.cache_full_blocks``), and
        record the new count."""
        raise NotImplementedError(
            "KVCacheManager._cache_full_blocks: not implemented yet (README step 2: num_tokens // block_size "
            "full blocks)"
        )

    def free(self, request: Request) -> None:
        """Give back a finished (or aborted) request's blocks and forget its table. Free them in
        reverse table order, so that the tail is evicted before the prefix. A request with no blocks
        is a no-op."""
        raise NotImplementedError(
            "KVCacheManager.free: not implemented yet (README step 3: pop the table, free it reversed)"
        )

    def get_block_ids(self, request_id: str) -> list[int]:
        """The request's block table: the ids of its blocks in logical order ([] if it has none)."""
        raise NotImplementedError("KVCacheManager.get_block_ids: not implemented yet (README step 2)")
