"""Lab 02-05, reference solution: the KV-cache manager, over lab 02-01's block pool.

The manager keeps each request's block table and speaks the scheduler's language: how many of a
new request's tokens are already in the prefix cache (``get_computed_blocks``), room for the tokens
it computes next (``allocate_slots``, None when the pool cannot hold them), and the end of a request
(``free``). Names follow vLLM v0.10.1's ``vllm/v1/core/kv_cache_manager.py`` and
``single_type_kv_cache_manager.py`` (one KV-cache group, full attention).

The block pool, the block and the hashes are lab 02-01's reference solution, whatever state the
learner's own 02-01 is in.
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
    """Block tables of the running requests, over one BlockPool of ``num_gpu_blocks`` blocks."""

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
        """The longest run of the request's first full blocks found in the prefix cache, and the
        number of tokens they hold. Nothing changes: the hits are taken by ``allocate_slots``."""
        if not self.enable_caching:
            return [], 0
        self._update_block_hashes(request)
        # The last prompt token must be computed whatever the cache holds: its forward pass gives the
        # logits of the first output token. The cap works in whole blocks, so a prompt that is
        # entirely cached recomputes its whole last block (as vLLM v0.10.1 does).
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
        num_required_blocks = _cdiv(num_computed_tokens + num_new_tokens, self.block_size)
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

    def _check_allocate(self, request, num_new_tokens, num_new_computed_tokens, new_computed_blocks, req_blocks):
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
        """Cache the request's blocks that the first ``num_tokens`` tokens fill, beyond those cached."""
        self._update_block_hashes(request)
        num_cached_blocks = self.num_cached_block[request.request_id]
        num_full_blocks = num_tokens // self.block_size
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
