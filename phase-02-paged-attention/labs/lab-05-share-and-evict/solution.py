"""Lab 02-05, reference solution: the KV-cache manager, over lab 02-01's block pool.

The manager keeps each request's block table and speaks the scheduler's language: how many of a
new request's tokens are already in the prefix cache (``get_computed_blocks``), room for the tokens
it computes next (``allocate_slots``, None when the pool cannot hold them), and the end of a request
(``free``). Names follow vLLM v0.22.1's ``vllm/v1/core/kv_cache_manager.py`` and
``single_type_kv_cache_manager.py`` (one KV-cache group, full attention).

Given, written once in this folder: ``Request`` (``_request.py``) and ``KVCacheManagerBase``
(``_manager_base.py``: the constructor, ``usage``, ``_update_block_hashes``, ``_check_allocate``,
over lab 02-01's reference pool, whatever state the learner's own 02-01 is in).
"""

from __future__ import annotations

import _manager_base
import _request
from _manager_base import KVCacheManagerBase, cdiv

# Given: the request, and lab 02-01's reference pool, block and keys (see _manager_base.py).
Request = _request.Request
BlockPool = _manager_base.BlockPool
KVCacheBlock = _manager_base.KVCacheBlock
hash_request_tokens = _manager_base.hash_request_tokens


class KVCacheManager(KVCacheManagerBase):
    """Block tables of the running requests, over one BlockPool of ``num_gpu_blocks`` blocks.

    Inherited (given): ``__init__(num_gpu_blocks, block_size, enable_caching=True)``, which sets
    ``block_size``, ``enable_caching``, ``block_pool``, ``req_to_blocks`` and ``num_cached_block``;
    ``usage``; ``_update_block_hashes(request)``; ``_check_allocate(...)``.
    """

    def get_computed_blocks(self, request: Request) -> tuple[list[KVCacheBlock], int]:
        """The longest run of the request's first full blocks found in the prefix cache, and the
        number of tokens they hold. Nothing changes: the hits are taken by ``allocate_slots``."""
        if not self.enable_caching:
            return [], 0
        self._update_block_hashes(request)
        # The last prompt token must be computed whatever the cache holds: its forward pass gives the
        # logits of the first output token. The cap works in whole blocks, so a prompt that is
        # entirely cached recomputes its whole last block (as vLLM v0.22.1 does).
        max_cache_hit_length = request.num_tokens - 1
        computed_blocks = []
        for block_hash in request.block_hashes[: max_cache_hit_length // self.block_size]:
            block = self.block_pool.get_cached_block(block_hash)
            if block is None:  # a chain: once a block misses, every later block misses too
                break
            computed_blocks.append(block)
        return computed_blocks, len(computed_blocks) * self.block_size

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

        Returns the blocks newly taken from the pool ([] when the request's last block has room),
        or None, changing nothing, when the pool does not have enough free blocks.
        """
        new_computed_blocks = list(new_computed_blocks or [])
        req_blocks = self.req_to_blocks.get(request.request_id, [])
        self._check_allocate(request, num_new_tokens, num_new_computed_tokens, new_computed_blocks, req_blocks)

        num_computed_tokens = request.num_computed_tokens + num_new_computed_tokens
        num_required_blocks = cdiv(num_computed_tokens + num_new_tokens, self.block_size)
        num_new_blocks = max(num_required_blocks - len(new_computed_blocks) - len(req_blocks), 0)
        # A hit that waits in the free queue (ref_cnt 0) leaves it when it is touched: it uses up a
        # free block just as a new block does.
        num_evictable_hits = sum(block.ref_cnt == 0 for block in new_computed_blocks)
        if num_new_blocks + num_evictable_hits > self.block_pool.get_num_free_blocks():
            return None  # checked before anything changes: the scheduler may simply try again later

        self.block_pool.touch(new_computed_blocks)
        req_blocks = self.req_to_blocks.setdefault(request.request_id, [])
        req_blocks.extend(new_computed_blocks)
        self.num_cached_block.setdefault(request.request_id, len(new_computed_blocks))
        new_blocks = self.block_pool.get_new_blocks(num_new_blocks)
        req_blocks.extend(new_blocks)

        if self.enable_caching:
            # The KV of these tokens is written by the step being scheduled: their full blocks can
            # be found by the requests that arrive from the next step on.
            self._cache_full_blocks(request, num_computed_tokens + num_new_tokens)
        return new_blocks

    def _cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        """Cache the request's blocks that the first ``num_tokens`` tokens fill, beyond those cached."""
        # A decode step never goes through get_computed_blocks: the block its tokens just filled has
        # no key yet. Refresh the keys before handing them to the pool.
        self._update_block_hashes(request)
        num_cached_blocks = self.num_cached_block[request.request_id]
        num_full_blocks = num_tokens // self.block_size
        if num_full_blocks <= num_cached_blocks:
            # A step planned smaller than one before it (re-planned before it ran): its blocks are
            # cached already, and a cached block is never taken back.
            return
        self.block_pool.cache_full_blocks(self.req_to_blocks[request.request_id], request.block_hashes,
                                          num_cached_blocks, num_full_blocks)
        self.num_cached_block[request.request_id] = num_full_blocks

    def free(self, request: Request) -> None:
        """Give back a finished (or aborted) request's blocks. They keep their cached contents; the
        table is freed in reverse so that its tail is evicted before its prefix. A request with no
        blocks is a no-op."""
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.num_cached_block.pop(request.request_id, None)
        self.block_pool.free_blocks(reversed(blocks))

    def get_block_ids(self, request_id: str) -> list[int]:
        """The request's block table: the ids of its blocks in logical order ([] if it has none)."""
        return [block.block_id for block in self.req_to_blocks.get(request_id, [])]
