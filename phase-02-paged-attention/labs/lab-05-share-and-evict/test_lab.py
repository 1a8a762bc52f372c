"""Tests of lab 02-05: the KV-cache manager driven through serving-like sequences.

The tests play the scheduler: they admit a request (``get_computed_blocks`` then
``allocate_slots`` for the rest of its prompt), run decode steps (one new token, one
``allocate_slots``) and finish requests (``free``). Every block id, hit count, ref count and free
queue order they check is predicted by hand in the test, with the arithmetic in a comment; the
random workload at the end compares every step with a brute-force model that keys cached blocks by
the token prefix they complete (a tuple of token ids), not by any hash.

The block pool is lab 02-01's reference solution (``labkit.load_reference("02-01")``), so its own
methods (the free queue's ``get_all_free_blocks``, ``get_cached_block``) are trusted here.
Conventions: blocks of 4 tokens; a pool of N blocks hands out 1, 2, ..., N - 1 in that order at first
(block 0 is the null block).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import labkit

BS = 4  # block size of every hand-computed test


# --- helpers: the scheduler's side, and what the tests read -----------------------------------


def _allocate(mgr, req, num_new, num_hit=0, hits=None):
    """``mgr.allocate_slots(...)``; a ValueError that lab 02-01's pool raises from inside it is
    reported in this lab's terms (what the manager handed the pool, and why that is wrong)."""
    __tracebackhide__ = True
    hits = hits or []
    try:
        return mgr.allocate_slots(req, num_new, num_hit, hits) if hits else mgr.allocate_slots(req, num_new)
    except ValueError as err:
        text = str(err)
        num_full = (req.num_computed_tokens + num_hit + num_new) // mgr.block_size
        call = f"allocate_slots({req.request_id!r}, {num_new}" + (f", {num_hit}, <{len(hits)} hits>)" if hits else ")")
        if "full-block hashes" in text and len(req.block_hashes) < num_full:
            raise AssertionError(
                f"{call} raised inside lab 02-01's pool ({text}): after this step the request's tokens fill "
                f"{num_full} blocks, but request.block_hashes holds only {len(req.block_hashes)} of their keys. Only "
                f"get_computed_blocks refreshed the keys, and a decode step never calls it: _cache_full_blocks "
                f"must call self._update_block_hashes(request) before caching (README step 2)") from err
        if "already cached" in text:
            raise AssertionError(
                f"{call} raised inside lab 02-01's pool ({text}): the manager asked the pool to cache a block "
                f"that is cached already. num_cached_block[{req.request_id!r}] counts the request's blocks that are "
                f"cached: for a new request it starts at the number of its prefix-cache hits (cached already), and "
                f"after each caching it becomes the number of full blocks, so that the next call starts after them "
                f"(README step 2)") from err
        raise


def _lookup(mgr, req):
    """``mgr.get_computed_blocks(req)``; a hit of every token is reported at once: the scheduler has
    nothing left to compute for the request, and would call ``allocate_slots`` with 0 new tokens."""
    __tracebackhide__ = True
    hits, num_hit = mgr.get_computed_blocks(req)
    if num_hit >= req.num_tokens:
        raise AssertionError(
            f"get_computed_blocks({req.request_id!r}) hit {num_hit} tokens of a request of {req.num_tokens}: the last "
            f"token is always computed (its forward pass gives the logits of the next token), so a lookup takes at "
            f"most (num_tokens - 1) // block_size = {(req.num_tokens - 1) // mgr.block_size} blocks (README step 1)")
    return hits, num_hit


def _prefill(mgr, req):
    """Admit a request in one step: look up its cached prefix, allocate the rest of its tokens, and
    (if it fits) mark them computed, as the scheduler does. Returns (hit ids, hit tokens, new ids or None)."""
    hits, num_hit = _lookup(mgr, req)
    new = _allocate(mgr, req, req.num_tokens - num_hit, num_hit, hits)
    if new is not None:
        req.num_computed_tokens = req.num_tokens
    return _ids(hits), num_hit, None if new is None else _ids(new)


def _decode(mgr, req, token):
    """One decode step: the sampled token joins the request and needs a slot. Returns the new ids or None."""
    req.append_output_token_ids([token])
    new = _allocate(mgr, req, 1)
    if new is not None:
        req.num_computed_tokens += 1
    return None if new is None else _ids(new)


def _expect(got, want, what: str) -> None:
    """``got == want``, or a failure that says what was compared, what came and what was expected."""
    __tracebackhide__ = True
    if got != want:
        raise AssertionError(f"{what}: got {got}, expected {want}")


def _admit(mgr, req, want, what: str) -> None:
    """``_prefill(mgr, req)`` must give ``want`` = (hit ids, hit tokens, new ids or None)."""
    __tracebackhide__ = True
    got = _prefill(mgr, req)
    taken_back = sorted(set(got[0]) & set(got[2] or []))
    if taken_back:
        raise AssertionError(
            f"{what}: admitting {req.request_id} ({req.num_tokens} tokens) gave hits {got[0]} and new blocks {got[2]}: "
            f"block(s) {taken_back} came back as the request's own new block. A hit that waits in the free queue "
            f"is free until it is touched: touch the hits first, then take the new blocks (README step 2)")
    if got != want:
        raise AssertionError(
            f"{what}: admitting {req.request_id} ({req.num_tokens} tokens) gave hits {got[0]} ({got[1]} tokens) and "
            f"new blocks {got[2]}; expected hits {want[0]} ({want[1]} tokens) and new blocks {want[2]} "
            f"(None: it does not fit)")


def _ids(blocks):
    return [b.block_id for b in blocks]


def _queue(mgr):
    return _ids(mgr.block_pool.free_block_queue.get_all_free_blocks())


def _refs(mgr, ids):
    return [mgr.block_pool.blocks[i].ref_cnt for i in ids]


def _hashed(mgr, ids):
    return [mgr.block_pool.blocks[i].block_hash is not None for i in ids]


def _request(lab, rid, tokens):
    return lab.Request(rid, list(tokens))


def _state(mgr, rids=()) -> dict:
    """What a refusal or a lookup must leave as it was: tables, ref counts, the queue, the cached blocks."""
    return {
        "tables": {rid: mgr.get_block_ids(rid) for rid in rids},
        "ref_cnt per block": [b.ref_cnt for b in mgr.block_pool.blocks],
        "free queue": _queue(mgr),
        "cached blocks": [b.block_id for b in mgr.block_pool.blocks if b.block_hash is not None],
    }


def _changes(before: dict, after: dict) -> str:
    return "; ".join(f"{name} {before[name]} -> {after[name]}" for name in before if before[name] != after[name])


# --- step 1: prefix-cache hits and allocation --------------------------------------------------


def test_first_request_misses_and_caches_its_full_blocks(lab):
    """A 10-token prompt on an empty cache: no hit; ceil(10 / 4) = 3 blocks, [1, 2, 3]; the two full
    blocks (tokens 0-7) are cached at once, the partial third (tokens 8-9) is not.

    Catches: caching the partial block, caching late or never, allocating floor(10 / 4) = 2 blocks."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _admit(mgr, a, ([], 0, [1, 2, 3]), "an empty cache, pool of 10")
    _expect(mgr.get_block_ids("A"), [1, 2, 3], "get_block_ids('A')")
    _expect(_hashed(mgr, [1, 2, 3]), [True, True, False],
            "blocks 1, 2, 3 cached? (tokens 0-7 fill blocks 1 and 2, cached in the step that computes them; "
            "block 3 holds 2 tokens, never cached)")
    _expect(_refs(mgr, [1, 2, 3]), [1, 1, 1], "ref_cnt of blocks 1, 2, 3")
    _expect(_queue(mgr), [4, 5, 6, 7, 8, 9], "the free queue")
    _expect(mgr.get_block_ids("nobody"), [], "get_block_ids of an unknown request")


def test_identical_prompts_share_physical_blocks(lab):
    """B sends A's 10-token prompt while A runs: B's first two blocks are A's blocks 1 and 2 (8
    tokens hit, ref_cnt 2 each); its partial third block is its own (block 4), never shared.

    Catches: not touching the hits (ref_cnt stays 1: when A finishes, the blocks go back to the
    free queue while B reads them), leaving the hits out of B's block table, sharing the partial
    block."""
    mgr = lab.KVCacheManager(10, BS)
    a, b = _request(lab, "A", range(10)), _request(lab, "B", range(10))
    _prefill(mgr, a)  # [1, 2, 3]
    # B: max hit = 10 - 1 = 9 tokens -> 9 // 4 = 2 blocks; ceil(10 / 4) = 3 blocks - 2 hits = 1 new
    _admit(mgr, b, ([1, 2], 8, [4]), "B sends A's 10-token prompt while A runs")
    _expect(mgr.get_block_ids("B"), [1, 2, 4], "B's block table (its hits, then its new block)")
    _expect(_refs(mgr, [1, 2, 3, 4]), [2, 2, 1, 1], "ref_cnt of blocks 1-4 (1 and 2 shared by A and B)")
    _expect(_queue(mgr), [5, 6, 7, 8, 9], "the free queue")
    mgr.free(a)  # B still holds 1 and 2
    _expect(_refs(mgr, [1, 2]), [1, 1], "ref_cnt of blocks 1 and 2 after A finishes (B still holds them)")
    _expect(_queue(mgr), [5, 6, 7, 8, 9, 3], "the free queue after A finishes (only its private block 3 joins)")


def test_shared_system_prompt_is_held_until_the_last_user_leaves(lab):
    """Three users send one 8-token system prompt followed by their own 5-token question (13
    tokens): all three tables start with blocks 1 and 2 (ref_cnt 3); the questions' blocks are
    private. Finishing A, B, C in turn frees each one's private blocks tail first, and the shared
    prefix last, at the very back of the free queue.

    Catches: freeing head first (the shared prefix would be evicted before the private tails), a
    ref count that is not decremented per request."""
    mgr = lab.KVCacheManager(10, BS)
    system = [7, 7, 1, 2, 3, 4, 5, 6]
    users = [_request(lab, rid, system + [10 * k + j for j in range(5)]) for k, rid in enumerate("ABC", 1)]
    _admit(mgr, users[0], ([], 0, [1, 2, 3, 4]), "user A, first")
    # B and C: block 2 (tokens 8-11) holds their own question tokens: only 2 blocks hit, 2 new each
    _admit(mgr, users[1], ([1, 2], 8, [5, 6]), "user B, same system prompt")
    _admit(mgr, users[2], ([1, 2], 8, [7, 8]), "user C, same system prompt")
    _expect(_refs(mgr, [1, 2]), [3, 3], "ref_cnt of the system prompt's blocks 1 and 2 (three users)")
    _expect(_queue(mgr), [9], "the free queue")
    mgr.free(users[0])  # 4, 3 go back; 2, 1 drop to ref_cnt 2
    _expect(_queue(mgr), [9, 4, 3], "the free queue after A finishes (its private blocks, tail first)")
    _expect(_refs(mgr, [1, 2]), [2, 2], "ref_cnt of blocks 1 and 2 after A finishes")
    mgr.free(users[1])
    mgr.free(users[2])
    _expect(_queue(mgr), [9, 4, 3, 6, 5, 8, 7, 2, 1],
            "the free queue after B and C finish (each table freed tail first; the shared prefix last)")
    _expect(mgr.get_block_ids("A"), [], "get_block_ids('A') after A finished")
    _expect(_refs(mgr, range(1, 10)), [0] * 9, "ref_cnt of blocks 1-9")


def test_a_fully_cached_prompt_recomputes_its_last_block(lab):
    """vLLM v0.22.1 caps a hit at num_tokens - 1 tokens, because the last prompt token must run
    through the model to give the logits of the first output token, and the cap works in whole
    blocks: an 8-token prompt that is entirely cached hits 1 block (7 // 4), not 2, and computes
    its second block again in a new block (3), cached under the same key as block 2 (two copies).
    A 9-token prompt whose two full blocks are cached hits both (8 // 4) and computes 1 token.

    Catches: hitting every cached block (no token left to compute: allocate_slots gets 0 new
    tokens, and the request never produces logits), capping at num_tokens instead of num_tokens - 1."""
    mgr = lab.KVCacheManager(10, BS)
    a, b = _request(lab, "A", range(8)), _request(lab, "B", range(8))
    _admit(mgr, a, ([], 0, [1, 2]), "A, 8 tokens")
    _admit(mgr, b, ([1], 4, [3]), "B, the same 8 tokens (a hit is capped at (8 - 1) // 4 = 1 block)")
    key = mgr.block_pool.blocks[2].block_hash
    if not (key is not None and mgr.block_pool.blocks[3].block_hash == key):
        raise AssertionError(
            "B's recomputed block 3 must be cached too, under the key of block 2 (the same tokens 4-7)")
    _expect(sorted(mgr.block_pool.cached_block_hash_to_block.get(key, {})), [2, 3],
            "the blocks cached under the key of tokens 0-7 (two copies)")

    c = _request(lab, "C", list(range(8)) + [50])
    _admit(mgr, c, ([1, 2], 8, [4]), "C, those 8 tokens and one more")


def test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full(lab):
    """A 6-token prompt holds blocks [1, 2]; decode tokens 7 and 8 fit in block 2 (no new block);
    the step that computes token 8 fills block 2, which is cached in that same step (a newcomer
    with those 8 tokens and one more hits both blocks); token 9 takes block 3.

    Catches: caching only at prefill (blocks filled by decoding are never shared), caching one step
    late, caching the partial block, a new block every step."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", [3, 1, 4, 1, 5, 9])
    _admit(mgr, a, ([], 0, [1, 2]), "A, 6 tokens")
    _expect(_hashed(mgr, [1, 2]), [True, False], "blocks 1 and 2 cached after the prefill (block 2 holds 2 tokens)")
    _expect(_decode(mgr, a, 2), [], "decode to 7 tokens: new blocks (block 2 still has room)")
    _expect(_decode(mgr, a, 6), [], "decode to 8 tokens: new blocks (token 8 fills block 2)")
    _expect(_hashed(mgr, [1, 2]), [True, True], "blocks 1 and 2 cached in the step that fills block 2")
    b = _request(lab, "B", a.all_token_ids + [5])
    _expect(mgr.get_computed_blocks(b)[1], 8, "hit tokens of B (A's 8 tokens and one more)")
    _expect(_decode(mgr, a, 5), [3], "decode to 9 tokens: new blocks (token 9 starts block 3)")
    _expect(mgr.get_block_ids("A"), [1, 2, 3], "A's block table")
    _expect(a.num_tokens, 9, "A's num_tokens")


def test_a_long_decode_caches_every_block_it_fills(lab):
    """A 5-token prompt decodes 11 more tokens, one per step: block 1 is full at the prefill, and
    each decode step that fills a block caches it (block 2 at 8 tokens, 3 at 12, 4 at 16); new
    blocks are taken at 9 and 13 tokens only. A newcomer with the 16 tokens and one more then hits
    all four blocks.

    Catches: keys never refreshed for decoded tokens (the pool is asked to cache a block that has
    no key yet: only get_computed_blocks refreshed them, and decoding never calls it), a cached
    count that is not advanced (the same block cached twice), a new block taken at every step."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", [8, 6, 7, 5, 3])
    _admit(mgr, a, ([], 0, [1, 2]), "A, 5 tokens")
    new_blocks = []
    for token in range(11):  # 6 .. 16 tokens
        new_blocks += _decode(mgr, a, token) or []
    _expect(new_blocks, [3, 4], "the blocks taken while decoding from 5 to 16 tokens (one each time a block starts)")
    _expect(_hashed(mgr, [1, 2, 3, 4]), [True] * 4, "blocks 1-4 cached once 16 tokens fill them")
    b = _request(lab, "B", a.all_token_ids + [0])
    hits, num_hit = mgr.get_computed_blocks(b)
    _expect((_ids(hits), num_hit), ([1, 2, 3, 4], 16), "B's hits (A's 16 tokens and one more)")


# --- step 2: free, linger, evict tail first, revive ---------------------------------------------


def test_the_returned_blocks_are_the_callers_own_list(lab):
    """allocate_slots returns the blocks it took in a list of the caller's own, never the request's
    block table: A (6 tokens) gets [1, 2]; its decode steps to 7 and 8 tokens take nothing and the 9th
    takes block 3, so A's table is [1, 2, 3] while the list its first call returned still holds [1, 2].
    (Only the manager's side is checked: a test's own writes into a returned list do not reach the
    submission under ``labs grade``, whose calls run in a sandbox.)

    Catches: the first allocation's list kept as the table (``req_to_blocks[id] = new_blocks`` when the
    table is empty): the scheduler's list grows with later steps, and whatever the caller does to it
    (clearing it, sorting it) is done to the table."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(6))
    first = _allocate(mgr, a, 6)
    a.num_computed_tokens = 6
    _expect(_ids(first), [1, 2], "allocate_slots('A', 6) of a fresh pool")
    _expect([_decode(mgr, a, t) for t in (60, 61, 62)], [[], [], [3]], "A's decode steps to 7, 8 and 9 tokens")
    _expect(mgr.get_block_ids("A"), [1, 2, 3], "A's table at 9 tokens")
    _expect(_ids(first), [1, 2], "the list the first allocate_slots('A', 6) returned, after later steps took block 3 "
            "(it must be a list of its own, not A's block table)")


def test_freed_blocks_linger_and_a_newcomer_revives_them_from_the_middle(lab):
    """A (10 tokens, blocks [1, 2, 3]) finishes: its blocks join the free queue tail first
    (3, 2, 1) still cached. D (5 tokens) takes 4, 5 and finishes, queued behind them (5, 4). C sends
    A's prompt: its hits, blocks 1 and 2, sit in the middle of the free queue; C takes them out
    (ref_cnt 1) and one new block (6, the front). The next request that takes every free block never
    gets 1 or 2.

    Catches: hits left in the free queue (counted by hand instead of touched: they are handed out
    again while C reads them), hits not counted, free order not reversed."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _prefill(mgr, a)  # [1, 2, 3]
    mgr.free(a)
    _expect(_queue(mgr), [4, 5, 6, 7, 8, 9, 3, 2, 1], "the free queue after A finishes (its table, tail first)")
    _expect(_refs(mgr, [1, 2, 3]), [0, 0, 0], "ref_cnt of A's blocks after it finished")
    _expect(_hashed(mgr, [1, 2, 3]), [True, True, False], "A's blocks cached? (freeing keeps the cache)")
    d = _request(lab, "D", [40, 41, 42, 43, 44])
    _admit(mgr, d, ([], 0, [4, 5]), "D, 5 tokens of its own")
    mgr.free(d)
    _expect(_queue(mgr), [6, 7, 8, 9, 3, 2, 1, 5, 4], "the free queue after D finishes")

    c = _request(lab, "C", range(10))
    _admit(mgr, c, ([1, 2], 8, [6]), "C sends A's prompt: blocks 1 and 2 hit from the middle of the free queue")
    _expect(_queue(mgr), [7, 8, 9, 3, 5, 4], "the free queue after C revives 1 and 2 and takes 6")
    _expect(_refs(mgr, [1, 2]), [1, 1], "ref_cnt of the revived blocks 1 and 2")
    e = _request(lab, "E", [60] * 24)  # 6 blocks: everything still free
    _admit(mgr, e, ([], 0, [7, 8, 9, 3, 5, 4]), "E takes every free block")
    _expect(_queue(mgr), [], "the free queue")
    _expect(mgr.get_block_ids("C"), [1, 2, 6], "C's block table")


def test_eviction_takes_a_sequence_tail_before_its_prefix(lab):
    """A (13 tokens: blocks [1, 2, 3, 4], the first 3 full and cached) finishes; its blocks queue
    as 4, 3, 2, 1 behind the never-used 5-9. E needs 7 blocks (25 tokens): 5-9, then A's partial
    block 4, then block 3, whose key is evicted. F then sends A's prompt: blocks 1 and 2 are still
    cached (8 tokens hit), only the tail was lost.

    Catches: freeing a table head first (E would take 1 and 2: F, and every request sharing A's
    prefix, would hit nothing), eager eviction."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(13))
    _admit(mgr, a, ([], 0, [1, 2, 3, 4]), "A, 13 tokens")
    mgr.free(a)
    _expect(_queue(mgr), [5, 6, 7, 8, 9, 4, 3, 2, 1], "the free queue after A finishes (tail first: 4, 3, 2, 1)")
    e = _request(lab, "E", [90 + i % 3 for i in range(25)])
    _admit(mgr, e, ([], 0, [5, 6, 7, 8, 9, 4, 3]), "E needs 7 blocks")
    f = _request(lab, "F", range(13))
    hits, num_hit = mgr.get_computed_blocks(f)
    _expect((_ids(hits), num_hit), ([1, 2], 8), "F's hits on A's prompt after E evicted A's tail")


def test_lookup_stops_at_the_first_miss(lab):
    """A cached prefix with a gap: A's blocks 1, 2, 3 hold the keys of tokens 0-3, 0-7 and 0-11; the
    test makes block 2 alone be evicted (it holds blocks 1 and 3 through the pool itself, standing in
    for another user of the pool, while E takes every other free block). F then sends A's prompt:
    key 0 hits block 1, key 1 misses, and the lookup must stop there (1 block, 4 tokens), although
    block 3 still holds the key of tokens 0-11. The manager alone never makes such a gap (it frees
    tails first); a lookup must not count on that.

    Catches: a lookup that skips a miss and goes on (its hits would not be a prefix: tokens 4-7 would
    be missing from the cache while F believes tokens 0-11 are there)."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(13))
    _admit(mgr, a, ([], 0, [1, 2, 3, 4]), "A, 13 tokens")
    mgr.free(a)  # queue 5 6 7 8 9 4 3 2 1, blocks 1-3 cached
    pool = mgr.block_pool
    pool.touch([pool.blocks[1], pool.blocks[3]])  # held elsewhere: queue 5 6 7 8 9 4 2
    e = _request(lab, "E", [90] * 27)  # 7 blocks, the last (block 2) partial: never cached
    _admit(mgr, e, ([], 0, [5, 6, 7, 8, 9, 4, 2]), "E needs 7 blocks: every free one, block 2 last")
    pool.free_blocks([pool.blocks[3], pool.blocks[1]])
    _expect(_hashed(mgr, [1, 2, 3]), [True, False, True], "blocks 1, 2, 3 cached? (the gap: block 2 was evicted)")
    f = _request(lab, "F", range(13))
    hits, num_hit = mgr.get_computed_blocks(f)
    _expect((_ids(hits), num_hit), ([1], 4),
            "F's hits on A's prompt when the key of tokens 0-7 misses but the key of tokens 0-11 is cached "
            "(a hit is a run of blocks from the start: stop at the first miss)")


def test_lookup_changes_nothing(lab):
    """get_computed_blocks only looks: after A finishes (its blocks free and cached), two lookups of
    B's prompt find the same 2 hits and leave every ref count, the free queue and the cache as they
    were. The hits are taken by allocate_slots, after its check, or never (when B does not fit).

    Catches: a lookup that touches its hits (ref_cnt 1 while nobody holds them, out of the free
    queue: if the scheduler then does not admit B, they are lost to the pool)."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _prefill(mgr, a)
    mgr.free(a)
    b = _request(lab, "B", range(10))
    before = _state(mgr)
    for attempt in (1, 2):
        hits, num_hit = mgr.get_computed_blocks(b)
        _expect((_ids(hits), num_hit), ([1, 2], 8), f"lookup {attempt} of B (A's prompt)")
        after = _state(mgr)
        if after != before:
            raise AssertionError(f"get_computed_blocks changed the pool ({_changes(before, after)}): a lookup only "
                                 f"looks; allocate_slots takes the hits")


def test_held_hits_cost_no_free_block(lab):
    """A pool of 5 blocks (4 to give). A (12 tokens) holds blocks 1, 2, 3: one block is free. B sends
    A's 12 tokens and one more: its 3 hits are held by A (ref_cnt 1), so they are not in the free
    queue and cost nothing; B needs ceil(13 / 4) = 4 blocks, 1 new, and 1 is free: it fits.

    Catches: every hit counted against the free blocks, held ones included (B is refused, and on a
    busy server every request that shares a running prefix waits for nothing)."""
    mgr = lab.KVCacheManager(5, BS)
    a = _request(lab, "A", range(12))
    _admit(mgr, a, ([], 0, [1, 2, 3]), "A, 12 tokens in a pool of 5")
    b = _request(lab, "B", list(range(12)) + [77])
    _admit(mgr, b, ([1, 2, 3], 12, [4]),
           "B shares A's 3 blocks while A runs (held hits take no free block: 1 new block, 1 free)")
    _expect(_refs(mgr, [1, 2, 3, 4]), [2, 2, 2, 1], "ref_cnt of blocks 1-4")


def test_a_preempted_request_comes_back_through_the_cache(lab):
    """A (10 tokens) decodes 2 tokens: at 12 tokens block 3 is full and cached. A is preempted
    (freed; the scheduler sets num_computed_tokens to 0) and readmitted: its first two blocks hit
    ((12 - 1) // 4 = 2), and the third is recomputed into a new block (4, the front of the queue),
    which is cached again under the key of block 3 (two copies).

    Catches: free that forgets num_cached_block (the readmitted request starts from its old count, 3,
    and never caches its new third block), free that keeps the table."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _admit(mgr, a, ([], 0, [1, 2, 3]), "A, 10 tokens")
    _decode(mgr, a, 50)
    _decode(mgr, a, 51)
    _expect(_hashed(mgr, [1, 2, 3]), [True, True, True], "A's blocks cached at 12 tokens")
    mgr.free(a)  # preempted
    a.num_computed_tokens = 0
    _expect(mgr.get_block_ids("A"), [], "A's table after free")
    _admit(mgr, a, ([1, 2], 8, [4]), "A readmitted with its 12 tokens")
    _expect(_hashed(mgr, [4]), [True], "A's new block 4 cached? (it holds tokens 8-11, full)")
    key = mgr.block_pool.blocks[3].block_hash
    _expect(sorted(mgr.block_pool.cached_block_hash_to_block.get(key, {})), [3, 4],
            "the blocks cached under the key of tokens 0-11 (the old copy, 3, and the recomputed one, 4)")


def test_a_preempted_request_hits_the_blocks_its_decoding_filled(lab):
    """A (10 tokens) decodes 3 tokens: block 3 fills and is cached at 12 tokens, the 13th takes block
    4. Preempted (freed tail first: the queue is 5 6 7 8 9 4 3 2 1) and readmitted with its 13
    tokens, it hits (13 - 1) // 4 = 3 blocks, [1, 2, 3] (12 tokens), among them the block that
    decoding filled, and takes one new block for its 13th token: 5, the queue's front.

    Catches: the hit capped by the prompt's length (``len(prompt_token_ids) - 1``) instead of the
    request's (``num_tokens - 1``, decoded tokens included): (10 - 1) // 4 = 2 hits, and block 3's
    tokens recomputed into a second new block."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _admit(mgr, a, ([], 0, [1, 2, 3]), "A, 10 tokens")
    _expect([_decode(mgr, a, t) for t in (50, 51, 52)], [[], [], [4]], "A's decode steps to 11, 12 and 13 tokens")
    _expect(_hashed(mgr, [1, 2, 3, 4]), [True, True, True, False], "A's blocks cached at 13 tokens")
    mgr.free(a)  # preempted
    a.num_computed_tokens = 0
    _expect(_queue(mgr), [5, 6, 7, 8, 9, 4, 3, 2, 1], "the free queue after A was preempted")
    _admit(mgr, a, ([1, 2, 3], 12, [5]),
           "A readmitted with its 13 tokens, 3 of them decoded (the hit is capped at num_tokens - 1 = 12 tokens, "
           "every token of the request counted, not only the 10 of its prompt)")


def test_a_hit_at_the_front_of_the_free_queue_is_not_taken_back(lab):
    """vLLM's ``test_computed_blocks_not_evicted``, by hand. A pool of 3 blocks (2 to give): A (tokens
    0-3) takes block 1 and B (tokens 4-7) block 2, both full and cached; both finish, so the free
    queue is [1, 2], A's block at its front. C sends tokens 0-7: block 1 hits ((8 - 1) // 4 = 1 block
    looked up), and C needs one new block. Block 1 must leave the queue before the new block is taken:
    the new block is 2 (B's key is evicted), never block 1 a second time. C's table is [1, 2], each
    held once, and block 2 is cached under C's key of tokens 0-7.

    Catches: new blocks taken before the hits are touched (get_new_blocks pops the hit at the front of
    the queue, evicts its key and hands it back as the request's own new block: the table [1, 1])."""
    mgr = lab.KVCacheManager(3, BS)
    a, b = _request(lab, "A", range(4)), _request(lab, "B", range(4, 8))
    _admit(mgr, a, ([], 0, [1]), "A, tokens 0-3")
    _admit(mgr, b, ([], 0, [2]), "B, tokens 4-7")
    mgr.free(a)
    mgr.free(b)
    _expect(_queue(mgr), [1, 2], "the free queue after A then B finish")
    c = _request(lab, "C", range(8))
    _admit(mgr, c, ([1], 4, [2]), "C, tokens 0-7: block 1 hits from the front of the free queue, 1 new block")
    _expect(mgr.get_block_ids("C"), [1, 2], "C's block table (its hit, then its new block: never the hit twice)")
    _expect(_refs(mgr, [1, 2]), [1, 1], "ref_cnt of blocks 1 and 2")
    _expect(_queue(mgr), [], "the free queue")
    d = _request(lab, "D", list(range(8)) + [9])
    hits, num_hit = mgr.get_computed_blocks(d)
    _expect((_ids(hits), num_hit), ([1, 2], 8), "D's hits on tokens 0-7 (block 2 now holds C's tokens 4-7)")
    e = _request(lab, "E", [4, 5, 6, 7, 9])
    _expect(mgr.get_computed_blocks(e)[1], 0, "hit tokens of E, which sends B's tokens (block 2 was evicted)")


def test_a_refused_request_leaves_the_free_queue_in_its_order(lab):
    """A pool of 6 blocks (5 to give). A (8 tokens: blocks 1, 2) and B (4 tokens: block 3) finish:
    the free queue is [4, 5, 2, 1, 3], A's hits in its middle with B's block behind them. C sends A's
    8 tokens and 13 more (21 tokens, 6 blocks): 2 revived hits + 4 new blocks > 5 free, so None, and
    the queue is exactly as it was, order included: the hits are not moved to its back. C2 (A's 8
    tokens and 9 more, 5 blocks) fits exactly: hits [1, 2], new blocks [4, 5, 3] in the queue's order.

    Catches: a check made after touching the hits and undone by freeing them again (the counts come
    out right, but the refused request's hits rejoin the queue at its back: the eviction order
    changes, and a prefix that should go last is kept longest or lost first)."""
    mgr = lab.KVCacheManager(6, BS)
    a, b = _request(lab, "A", range(8)), _request(lab, "B", range(50, 54))
    _admit(mgr, a, ([], 0, [1, 2]), "A, 8 tokens")
    _admit(mgr, b, ([], 0, [3]), "B, 4 tokens")
    mgr.free(a)
    mgr.free(b)
    _expect(_queue(mgr), [4, 5, 2, 1, 3], "the free queue after A then B finish")
    before = _state(mgr, ["C"])
    c = _request(lab, "C", list(range(8)) + [70 + i for i in range(13)])
    # hits: (21 - 1) // 4 = 5 keys looked up, the first 2 match; 6 - 2 = 4 new + 2 revived > 5 free
    _admit(mgr, c, ([1, 2], 8, None), "C, 21 tokens: 4 new blocks + 2 revived hits > 5 free")
    after = _state(mgr, ["C"])
    if after != before:
        raise AssertionError(f"allocate_slots refused C (None) but changed the pool ({_changes(before, after)}): check "
                             "before touching anything, so that a refusal leaves the free queue in its order")
    c2 = _request(lab, "C2", list(range(8)) + [70 + i for i in range(9)])
    _admit(mgr, c2, ([1, 2], 8, [4, 5, 3]), "C2, 17 tokens: 3 new blocks + 2 revived hits = 5 free")
    _expect(mgr.get_block_ids("C2"), [1, 2, 4, 5, 3], "C2's block table")


def test_a_chunked_prefill_caches_only_what_it_has_computed(lab):
    """A 10-token prompt computed in two chunks of 5 (``allocate_slots(A, 5)`` twice, the scheduler
    advancing num_computed_tokens in between). After the first chunk A holds blocks [1, 2] and only
    block 1 is cached: tokens 4-7 of block 2 are not all computed yet (token 4 is), so a newcomer
    sending A's prompt hits block 1 alone. The second chunk takes block 3 and caches block 2.

    Catches: caching the blocks that all of the request's tokens will fill (``request.num_tokens``)
    instead of those the tokens computed so far, this step's included, fill: a newcomer would hit a
    block whose KV is not written yet."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    new = _allocate(mgr, a, 5)
    _expect(None if new is None else _ids(new), [1, 2], "A's first chunk of 5 tokens: new blocks")
    a.num_computed_tokens = 5
    _expect(_hashed(mgr, [1, 2]), [True, False],
            "blocks 1 and 2 cached after the first chunk? (5 tokens computed: block 1 is full, block 2 holds 1)")
    b = _request(lab, "B", range(10))
    hits, num_hit = mgr.get_computed_blocks(b)
    _expect((_ids(hits), num_hit), ([1], 4), "B's hits on A's prompt while A has computed 5 of its 10 tokens")
    new = _allocate(mgr, a, 5)
    _expect(None if new is None else _ids(new), [3], "A's second chunk of 5 tokens: new blocks")
    a.num_computed_tokens = 10
    _expect(_hashed(mgr, [1, 2, 3]), [True, True, False], "blocks 1, 2, 3 cached after the second chunk")
    _expect(mgr.get_computed_blocks(b)[1], 8, "B's hit tokens on A's prompt once A has computed all 10")


def test_exact_pool_never_over_allocates(lab):
    """A pool of 5 blocks has 4 to give. A 16-token prompt takes exactly 4; its 17th token needs a
    5th block: allocate_slots returns None and changes nothing. After A finishes (queue 4, 3, 2, 1,
    all cached), a 17-token prompt sharing A's first 12 tokens would hit 3 blocks that sit in the
    free queue and need 2 more: 5 > 4 free, so None, and the 3 hits stay free and cached. With 16
    tokens it needs 1 more: 3 revived + 1 new = 4, exactly the pool.

    Catches: forgetting that reviving a free hit uses up a free block (the check passes, the pool
    then runs dry halfway: hits touched, no room for the new blocks), touching hits before the
    check, one block too many for a prompt that ends on a block boundary."""
    mgr = lab.KVCacheManager(5, BS)
    a = _request(lab, "A", range(16))
    _admit(mgr, a, ([], 0, [1, 2, 3, 4]), "A, 16 tokens in a pool of 5")
    _expect(_queue(mgr), [], "the free queue")
    _expect(_decode(mgr, a, 99), None, "decode to 17 tokens with no free block (None: it does not fit)")
    _expect(mgr.get_block_ids("A"), [1, 2, 3, 4], "A's table after the refused decode")
    _expect(_refs(mgr, [1, 2, 3, 4]), [1, 1, 1, 1], "ref_cnt of A's blocks after the refused decode")
    _admit(mgr, _request(lab, "B", [5]), ([], 0, None), "B, 1 token, with no free block")
    mgr.free(a)
    _expect(_queue(mgr), [4, 3, 2, 1], "the free queue after A finishes")
    _expect(_hashed(mgr, [1, 2, 3, 4]), [True] * 4, "A's blocks cached?")

    c = _request(lab, "C", list(range(12)) + [70, 71, 72, 73, 74])  # 17 tokens: 5 blocks
    # hits: (17 - 1) // 4 = 4 blocks looked up, the first 3 match; 5 - 3 = 2 new + 3 revived > 4 free
    _admit(mgr, c, ([1, 2, 3], 12, None), "C, 17 tokens: 2 new blocks + 3 revived hits > 4 free")
    _expect(_queue(mgr), [4, 3, 2, 1], "the free queue after C was refused")
    _expect(_refs(mgr, [1, 2, 3]), [0, 0, 0], "ref_cnt of C's hits after C was refused")
    _expect(mgr.get_block_ids("C"), [], "C's table after it was refused")
    _expect(_hashed(mgr, [1, 2, 3, 4]), [True] * 4, "blocks 1-4 cached after C was refused")

    c2 = _request(lab, "C2", list(range(12)) + [70, 71, 72, 73])  # 16 tokens: 4 blocks
    # hits: 15 // 4 = 3 blocks; 1 new + 3 revived = 4 = every free block
    _admit(mgr, c2, ([1, 2, 3], 12, [4]), "C2, 16 tokens: 1 new block + 3 revived hits = 4 free")
    _expect(_queue(mgr), [], "the free queue")
    _expect(mgr.get_block_ids("C2"), [1, 2, 3, 4], "C2's table")


def test_caching_disabled_never_hits(lab):
    """With enable_caching=False the manager still allocates, grows and frees, but a lookup is
    always ([], 0) and no block is ever cached: B sends A's 10-token prompt while A runs and gets 3
    blocks of its own, [4, 5, 6]; after A finishes, C sends it again and gets [7, 8, 9].

    Catches: a lookup that answers a disabled cache with a bare ``return`` (None, which the
    scheduler cannot unpack) or with a token count other than 0."""
    mgr = lab.KVCacheManager(10, BS, enable_caching=False)
    a, b, c = (_request(lab, rid, range(10)) for rid in "ABC")
    # A then B (while A runs) then C (after A finished) send the same prompt: 3 new blocks each.
    for req, new_ids in ((a, [1, 2, 3]), (b, [4, 5, 6]), (c, [7, 8, 9])):
        got = mgr.get_computed_blocks(req)
        _expect(None if got is None else (_ids(got[0]), got[1]), ([], 0),
                f"get_computed_blocks({req.request_id!r}) of the 10-token prompt with caching disabled (no hits: "
                f"an empty list of blocks and 0 tokens)")
        _admit(mgr, req, ([], 0, new_ids), f"{req.request_id} sends the 10-token prompt, caching disabled")
        if req is b:
            mgr.free(a)  # queue 7 8 9 3 2 1
    _expect(_hashed(mgr, range(1, 10)), [False] * 9, "blocks 1-9 cached? (caching disabled: never)")


def test_bad_input_is_a_clear_error_and_changes_nothing(lab):
    """allocate_slots refuses, with a ValueError and no change: zero new tokens, prefix hits for a
    request that already has blocks, a hit count that disagrees with the hit blocks, and more tokens
    than the request has; hits for a request that holds blocks, even before any of its tokens is
    computed. Freeing a request twice, or one that never got blocks, is a no-op.

    Catches: a request that computes no token (the full-hit bug's symptom), hits appended to a
    running request's table (or to a request's whose first chunk has blocks but no computed token
    yet: the check is on the blocks it holds), a second free that double-frees its blocks."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _prefill(mgr, a)  # [1, 2, 3]
    b = _request(lab, "B", range(10))
    hits, num_hit = mgr.get_computed_blocks(b)  # [1, 2], 8
    c = _request(lab, "C", range(100, 120))
    _allocate(mgr, c, 4)  # [4]: C holds a block whose tokens are not computed yet (its first chunk runs)

    before = _state(mgr, ["A", "B", "C"])
    bad = {
        "zero new tokens": lambda: mgr.allocate_slots(b, 0, num_hit, hits),
        "hits for a running request": lambda: mgr.allocate_slots(a, 1, num_hit, hits),
        "hits for a request that holds a block, nothing computed yet": lambda: mgr.allocate_slots(c, 4, num_hit, hits),
        "8 hit tokens with 1 hit block": lambda: mgr.allocate_slots(b, 2, num_hit, hits[:1]),
        "more tokens than the request has": lambda: mgr.allocate_slots(b, 3, num_hit, hits),
    }
    for what, call in bad.items():
        with pytest.raises(ValueError):
            call()
            pytest.fail(f"{what}: no ValueError")
        after = _state(mgr, ["A", "B", "C"])
        if after != before:
            raise AssertionError(f"{what}: the ValueError came after the manager had changed "
                                 f"({_changes(before, after)}); call _check_allocate before changing anything")
    mgr.free(b)  # never allocated
    mgr.free(c)
    mgr.free(a)
    mgr.free(a)  # twice
    _expect(_refs(mgr, range(10)), [0] * 10, "ref_cnt of every block after A was freed twice (the second is a no-op)")
    _expect(_queue(mgr), [5, 6, 7, 8, 9, 4, 3, 2, 1], "the free queue after A was freed twice")


@pytest.mark.parametrize("count", ["numpy int64", "float"])
@pytest.mark.parametrize("argument", ["num_new_computed_tokens", "num_new_tokens"])
def test_counts_that_are_not_python_ints_are_refused_before_any_change(lab, argument, count):
    """allocate_slots takes its token counts as Python ints: a numpy int64 or a float of the same value
    (8 hit tokens, 2 new tokens) is refused with a ValueError naming the argument, before the hits are
    touched. The same call with ints then admits B as A's prompt predicts: hits [1, 2], new block [4].

    Catches: a hit count that is only compared with the hit blocks (np.int64(8) == 8 and 8.0 == 8 pass):
    it reaches lab 02-01's pool after the hits were touched and B's table extended, and the pool's
    error names its own num_blocks, leaving B holding two blocks it was refused."""
    mgr = lab.KVCacheManager(10, BS)
    a, b = _request(lab, "A", range(10)), _request(lab, "B", range(10))
    _prefill(mgr, a)  # [1, 2, 3]
    hits, num_hit = mgr.get_computed_blocks(b)  # [1, 2], 8: B needs ceil(10 / 4) - 2 = 1 new block, 4
    counts = {"num_new_computed_tokens": num_hit, "num_new_tokens": b.num_tokens - num_hit}
    counts[argument] = np.int64(counts[argument]) if count == "numpy int64" else float(counts[argument])
    before = _state(mgr, ["A", "B"])
    labkit.assert_refused(lambda: mgr.allocate_slots(b, counts["num_new_tokens"], counts["num_new_computed_tokens"],
                                                     hits),
                          argument, what=f"allocate_slots('B') with {argument}={counts[argument]!r}",
                          hint="check that each count is an int before touching anything")
    after = _state(mgr, ["A", "B"])
    if after != before:
        raise AssertionError(f"allocate_slots('B') with {argument}={counts[argument]!r} changed the manager before "
                             f"refusing ({_changes(before, after)})")
    _admit(mgr, b, ([1, 2], 8, [4]), "B, A's 10-token prompt with int counts, after the refusal")


def test_a_bool_is_no_count(lab):
    """A bool is refused wherever a count goes, with a ValueError naming the argument, before anything
    changes: Python counts True as 1 and False as 0, so ``allocate_slots(B, True, 8, hits)`` would
    compute one token, ``num_new_computed_tokens=False`` would pass as no hit, and
    ``KVCacheManager(10, True)`` would have blocks of one token. A bool there is a slip (a flag passed
    in a count's place), never a count. The same calls with ints then admit B as A's prompt predicts:
    hits [1, 2], new block [4].

    Catches: counts checked with ``isinstance(n, int)`` alone (``bools_taken_as_counts``), which a bool
    passes."""
    labkit.assert_refused(lambda: lab.KVCacheManager(10, True), "block_size",
                          what="KVCacheManager(10, block_size=True)")
    mgr = lab.KVCacheManager(10, BS)
    a, b, c = _request(lab, "A", range(9)), _request(lab, "B", range(9)), _request(lab, "C", range(100, 104))
    _prefill(mgr, a)  # [1, 2, 3]
    hits, num_hit = mgr.get_computed_blocks(b)  # [1, 2], 8: B has 1 token left to compute
    before = _state(mgr, ["A", "B", "C"])
    calls = {
        "allocate_slots('B', num_new_tokens=True, 8, hits)": (lambda: mgr.allocate_slots(b, True, num_hit, hits),
                                                               "num_new_tokens"),
        "allocate_slots('C', 4, num_new_computed_tokens=False)": (lambda: mgr.allocate_slots(c, 4, False, []),
                                                                  "num_new_computed_tokens"),
    }
    for what, (call, argument) in calls.items():
        labkit.assert_refused(call, argument, what=what, hint="a bool is an int to Python: refuse it first")
        after = _state(mgr, ["A", "B", "C"])
        if after != before:
            raise AssertionError(f"{what} changed the manager before refusing ({_changes(before, after)})")
    _admit(mgr, b, ([1, 2], 8, [4]), "B, A's 9-token prompt with int counts, after the refusals")


@pytest.mark.parametrize("enable_caching", [False, True], ids=["caching_off", "caching_on"])
def test_a_request_that_holds_more_blocks_than_its_next_tokens_need(lab, enable_caching):
    """A scheduler may plan a request's step smaller than the room it took before (a step re-planned
    before it ran): the request's blocks already hold the tokens, so allocate_slots takes nothing from
    the pool and returns [], the table, the queue and the cached blocks unchanged. With caching on, the
    blocks the first plan filled are cached already and stay so (vLLM's cache_blocks returns at once
    when they are): a plan is never taken back.

    Catches: the number of new blocks not clamped at 0 (a negative count handed to the pool, which
    refuses it); _cache_full_blocks handing the pool fewer full blocks than are cached (the pool
    refuses), or lowering the cached count."""
    mgr = lab.KVCacheManager(10, BS, enable_caching=enable_caching)
    c = _request(lab, "C", range(20))
    _expect(_ids(_allocate(mgr, c, 8)), [1, 2], "allocate_slots('C', 8): the blocks for 8 tokens")
    before = _state(mgr, ["C"])
    _expect(_ids(_allocate(mgr, c, 1)), [], "allocate_slots('C', 1) after room for 8 (none computed yet): no new block")
    after = _state(mgr, ["C"])
    _expect(after, before, "the manager after allocate_slots('C', 1), which needs no block")
    if enable_caching:
        # The count of cached blocks is still 2: the next step that fills a third block caches it alone.
        _expect(_ids(_allocate(mgr, c, 12)), [3], "allocate_slots('C', 12) after the smaller plan: one block more")
        _expect(mgr.num_cached_block["C"], 3, "num_cached_block['C'] after a plan that fills 3 blocks")


def test_block_sizes_from_one_and_the_usage(lab):
    """A block of one token is a block size like any other (every token its own block); a block size
    of 0, below, or not an integer is refused with a ValueError naming it. ``usage`` is the fraction
    of the blocks that can be handed out (all but the null block) that are in use.

    Catches: a block size check that refuses 1, or that lets 0 or 2.0 through (its conditions joined
    with ``and``); usage counting the null block as one that could be handed out."""
    mgr = lab.KVCacheManager(8, 1)
    r = _request(lab, "R", [5, 6, 7])
    _expect(_ids(_allocate(mgr, r, 3)), [1, 2, 3], "allocate_slots('R', 3) with blocks of 1 token")
    usage = mgr.usage
    if not isinstance(usage, float) or abs(usage - 3 / 7) > 1e-12:
        raise AssertionError(f"usage with 3 of the 7 blocks that can be handed out in use: got {usage!r}, expected "
                             f"3 / 7 = {3 / 7:.6f} (the null block is never handed out: it does not count)")
    mgr.free(r)
    _expect(mgr.usage, 0.0, "usage once every request is freed")
    for bad in (0, -4, 2.0, "4"):
        with pytest.raises(ValueError, match="block_size"):
            lab.KVCacheManager(8, bad)
            pytest.fail(f"KVCacheManager(8, block_size={bad!r}): no ValueError naming block_size")


# --- everything at once: a random workload against a brute-force model ------------------------


class _Model:
    """The manager as plain data. A cached block is keyed by the token prefix it completes (a tuple
    of every token up to its end), so the model needs no hash function at all."""

    def __init__(self, num_blocks, block_size):
        self.bs = block_size
        self.free = list(range(1, num_blocks))
        self.ref = dict.fromkeys(range(num_blocks), 0)
        self.key = dict.fromkeys(range(num_blocks))  # block id -> token prefix tuple, or None
        self.index: dict[tuple, list[int]] = {}  # token prefix -> block ids in the order cached
        self.tables: dict[str, list[int]] = {}
        self.num_cached: dict[str, int] = {}

    def hits(self, tokens):
        ids = []
        for i in range((len(tokens) - 1) // self.bs):
            prefix = tuple(tokens[:(i + 1) * self.bs])
            if prefix not in self.index:
                break
            ids.append(self.index[prefix][0])
        return ids

    def allocate(self, rid, tokens, num_computed, num_new, hits):
        table = self.tables.get(rid, [])
        need = max(-(-(num_computed + num_new) // self.bs) - len(hits) - len(table), 0)
        if need + sum(self.ref[i] == 0 for i in hits) > len(self.free):
            return None
        for i in hits:
            if self.ref[i] == 0:
                self.free.remove(i)
            self.ref[i] += 1
        table = self.tables.setdefault(rid, [])
        table += hits
        self.num_cached.setdefault(rid, len(hits))
        new, self.free = self.free[:need], self.free[need:]
        for i in new:
            if self.key[i] is not None:
                self.index[self.key[i]].remove(i)
                if not self.index[self.key[i]]:
                    del self.index[self.key[i]]
                self.key[i] = None
            self.ref[i] = 1
        table += new
        num_full = (num_computed + num_new) // self.bs
        for j in range(self.num_cached[rid], num_full):
            prefix = tuple(tokens[:(j + 1) * self.bs])
            self.key[table[j]] = prefix
            self.index.setdefault(prefix, []).append(table[j])
        self.num_cached[rid] = num_full
        return new

    def free_(self, rid):
        self.num_cached.pop(rid, None)
        for i in reversed(self.tables.pop(rid, [])):
            self.ref[i] -= 1
            if self.ref[i] == 0:
                self.free.append(i)


def _check_against_model(mgr, model, requests, where):
    _expect(_queue(mgr), model.free, f"{where}: the free queue")
    blocks = mgr.block_pool.blocks
    refs, expected_refs = [b.ref_cnt for b in blocks], [model.ref[i] for i in range(len(blocks))]
    wrong = [f"block {i}: {got} (expected {want})"
             for i, (got, want) in enumerate(zip(refs, expected_refs, strict=True)) if got != want]
    if wrong:
        raise AssertionError(f"{where}: ref counts differ: " + ", ".join(wrong))
    for req in requests:
        _expect(mgr.get_block_ids(req.request_id), model.tables.get(req.request_id, []),
                f"{where}: request {req.request_id}'s block table")
    for b in blocks:
        cached, should = b.block_hash is not None, model.key[b.block_id] is not None
        if cached != should:
            prefix = list(model.key[b.block_id] or ())
            raise AssertionError(
                f"{where}: block {b.block_id} is {'cached' if cached else 'not cached'}, expected "
                f"{f'cached (it completes tokens {prefix})' if should else 'not cached'}")
    cached = [b for b in blocks if b.block_hash is not None]
    for x in cached:
        for y in cached:
            same = model.key[x.block_id] == model.key[y.block_id]
            if (x.block_hash == y.block_hash) != same:
                raise AssertionError(
                    f"{where}: blocks {x.block_id} and {y.block_id} complete {'the same' if same else 'different'} "
                    f"token prefixes but their keys are {'different' if same else 'equal'}")


@pytest.mark.parametrize("seed", range(4))
def test_random_workload_matches_a_brute_force_model(lab, seed):
    """A seeded serving workload of a few hundred steps on a small pool: requests arrive (often
    repeating part of an earlier prompt), wait when the pool is full, decode one token at a time,
    are preempted (freed, to be recomputed later) when a decode step finds no block, and finish.
    After every step the manager must equal the model: every lookup (hit blocks and tokens), every
    allocation (ids, or None), every block table, the free queue, every ref count, and which blocks
    are cached under equal keys.

    Catches: the gallery's bugs in combinations the directed tests do not reach (a preempted request
    re-admitted over its own cached blocks, hits on blocks another request is still filling)."""
    rng = random.Random(seed)
    block_size, num_blocks = rng.choice([(2, 12), (4, 9), (4, 16), (3, 14)])
    mgr, model = lab.KVCacheManager(num_blocks, block_size), _Model(num_blocks, block_size)
    waiting, running, prompts, names = [], [], [[rng.randrange(3) for _ in range(10)]], iter(range(10**6))

    for step in range(300):
        action = rng.choice(["arrive", "admit", "admit", "decode", "decode", "decode", "finish"])
        if action == "arrive":
            base = rng.choice(prompts)
            tokens = base[:rng.randrange(len(base) + 1)] + [rng.randrange(3) for _ in range(rng.randrange(1, 9))]
            prompts.append(tokens)
            waiting.append(lab.Request(f"r{next(names)}", tokens))
        elif action == "admit" and waiting:
            req = waiting[0]
            hits, num_hit = _lookup(mgr, req)
            expected_hits = model.hits(req.all_token_ids)
            _expect((_ids(hits), num_hit), (expected_hits, len(expected_hits) * block_size),
                    f"seed {seed}, step {step}: get_computed_blocks({req.request_id}) (hit ids, hit tokens)")
            new = _allocate(mgr, req, req.num_tokens - num_hit, num_hit, hits)
            expected = model.allocate(req.request_id, req.all_token_ids, num_hit, req.num_tokens - num_hit,
                                      expected_hits)
            _expect(None if new is None else _ids(new), expected,
                    f"seed {seed}, step {step}: admitting {req.request_id}, the new blocks (None: it does not fit)")
            if new is not None:
                req.num_computed_tokens = req.num_tokens
                running.append(waiting.pop(0))
        elif action == "decode" and running:
            req = rng.choice(running)
            req.append_output_token_ids([rng.randrange(3)])
            new = _allocate(mgr, req, 1)
            expected = model.allocate(req.request_id, req.all_token_ids, req.num_computed_tokens, 1, [])
            _expect(None if new is None else _ids(new), expected,
                    f"seed {seed}, step {step}: a decode step of {req.request_id}, the new blocks (None: no room)")
            if new is None:  # preempted: its blocks go back, and it will be recomputed from its cache hits
                mgr.free(req)
                model.free_(req.request_id)
                req.num_computed_tokens = 0
                running.remove(req)
                waiting.append(req)
            else:
                req.num_computed_tokens += 1
        elif action == "finish" and running:
            req = running.pop(rng.randrange(len(running)))
            mgr.free(req)
            model.free_(req.request_id)
        _check_against_model(mgr, model, running + waiting, f"seed {seed}, step {step} ({action})")
