"""Lab 02-05, your work: the KV-cache manager, over lab 02-01's block pool.

The manager keeps each request's block table and speaks the scheduler's language: how many of a
new request's tokens are already in the prefix cache (``get_computed_blocks``), room for the tokens
it computes next (``allocate_slots``, None when the pool cannot hold them), and the end of a request
(``free``). Names follow vLLM v0.22.1's ``vllm/v1/core/kv_cache_manager.py`` and
``single_type_kv_cache_manager.py`` (one KV-cache group, full attention).

Given, written once in this folder (read them, do not edit them): ``Request`` in ``_request.py``,
and in ``_manager_base.py`` lab 02-01's reference pool (whatever state your own 02-01 is in),
``cdiv`` and ``KVCacheManagerBase``, which ``KVCacheManager`` inherits: the constructor, ``usage``,
``_update_block_hashes`` and ``_check_allocate``. Write the methods below in the order of the
README's steps (1: get_computed_blocks, 2: allocate_slots, _cache_full_blocks and get_block_ids,
3: free), then run ``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-05-share-and-evict``.
"""

from __future__ import annotations

import _manager_base
import _request
from _manager_base import KVCacheManagerBase, cdiv  # noqa: F401  (cdiv: ceil(a / b) in integers)

# Given: the request, and lab 02-01's reference pool, block and keys (see _manager_base.py).
Request = _request.Request
BlockPool = _manager_base.BlockPool
KVCacheBlock = _manager_base.KVCacheBlock
hash_request_tokens = _manager_base.hash_request_tokens


class KVCacheManager(KVCacheManagerBase):
    """Block tables of the running requests, over one BlockPool of ``num_gpu_blocks`` blocks.

    Inherited (given): ``__init__(num_gpu_blocks, block_size, enable_caching=True)``, which sets
    ``block_size``, ``enable_caching``, ``block_pool``, ``req_to_blocks`` (request id -> block table)
    and ``num_cached_block`` (request id -> how many of its blocks are cached); ``usage``;
    ``_update_block_hashes(request)``; ``_check_allocate(...)``.
    """

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
        ValueError for bad arguments: a count that is not a Python int, 0 new tokens, hits for a
        request that holds blocks, a hit count that disagrees with the hits, more tokens than the
        request has).
        """
        raise NotImplementedError(
            "KVCacheManager.allocate_slots: not implemented yet (README step 2: count, check, touch the hits, "
            "take new blocks, cache the full ones)"
        )

    def _cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        """Cache the request's blocks that its first ``num_tokens`` tokens fill, beyond the
        ``num_cached_block[request_id]`` already cached (``block_pool.cache_full_blocks`` with the
        request's table and ``request.block_hashes``), and record the new count. When they are all
        cached already (a step planned smaller than one before it), there is nothing to do.

        Call ``self._update_block_hashes(request)`` first: only ``get_computed_blocks`` refreshes the
        keys otherwise, and a decode step never calls it, so the block that decoding just filled has
        no key yet (the pool then refuses: fewer keys than full blocks)."""
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
