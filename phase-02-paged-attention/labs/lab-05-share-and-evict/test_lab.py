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

import pytest

BS = 4  # block size of every hand-computed test


# --- helpers: the scheduler's side, and what the tests read -----------------------------------


def _prefill(mgr, req):
    """Admit a request in one step: look up its cached prefix, allocate the rest of its tokens, and
    (if it fits) mark them computed, as the scheduler does. Returns (hit ids, hit tokens, new ids or None)."""
    hits, num_hit = mgr.get_computed_blocks(req)
    new = mgr.allocate_slots(req, req.num_tokens - num_hit, num_hit, hits)
    if new is not None:
        req.num_computed_tokens = req.num_tokens
    return _ids(hits), num_hit, None if new is None else _ids(new)


def _decode(mgr, req, token):
    """One decode step: the sampled token joins the request and needs a slot. Returns the new ids or None."""
    req.append_output_token_ids([token])
    new = mgr.allocate_slots(req, 1)
    if new is not None:
        req.num_computed_tokens += 1
    return None if new is None else _ids(new)


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


# --- step 1: prefix-cache hits and allocation --------------------------------------------------


def test_first_request_misses_and_caches_its_full_blocks(lab):
    """A 10-token prompt on an empty cache: no hit; ceil(10 / 4) = 3 blocks, [1, 2, 3]; the two full
    blocks (tokens 0-7) are cached at once, the partial third (tokens 8-9) is not.

    Catches: caching the partial block, caching late or never, allocating floor(10 / 4) = 2 blocks."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    assert _prefill(mgr, a) == ([], 0, [1, 2, 3])
    assert mgr.get_block_ids("A") == [1, 2, 3]
    assert _hashed(mgr, [1, 2, 3]) == [True, True, False]
    assert _refs(mgr, [1, 2, 3]) == [1, 1, 1] and _queue(mgr) == [4, 5, 6, 7, 8, 9]
    assert mgr.get_block_ids("nobody") == []


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
    assert _prefill(mgr, b) == ([1, 2], 8, [4])
    assert mgr.get_block_ids("B") == [1, 2, 4]
    assert _refs(mgr, [1, 2, 3, 4]) == [2, 2, 1, 1]
    assert _queue(mgr) == [5, 6, 7, 8, 9]
    mgr.free(a)  # B still holds 1 and 2
    assert _refs(mgr, [1, 2]) == [1, 1] and _queue(mgr) == [5, 6, 7, 8, 9, 3]


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
    assert _prefill(mgr, users[0]) == ([], 0, [1, 2, 3, 4])
    # B and C: block 2 (tokens 8-11) holds their own question tokens: only 2 blocks hit, 2 new each
    assert _prefill(mgr, users[1]) == ([1, 2], 8, [5, 6])
    assert _prefill(mgr, users[2]) == ([1, 2], 8, [7, 8])
    assert _refs(mgr, [1, 2]) == [3, 3] and _queue(mgr) == [9]
    mgr.free(users[0])  # 4, 3 go back; 2, 1 drop to ref_cnt 2
    assert _queue(mgr) == [9, 4, 3] and _refs(mgr, [1, 2]) == [2, 2]
    mgr.free(users[1])
    mgr.free(users[2])
    assert _queue(mgr) == [9, 4, 3, 6, 5, 8, 7, 2, 1]
    assert mgr.get_block_ids("A") == [] and _refs(mgr, range(1, 10)) == [0] * 9


def test_a_fully_cached_prompt_recomputes_its_last_block(lab):
    """vLLM v0.10.1 caps a hit at num_tokens - 1 tokens, because the last prompt token must run
    through the model to give the logits of the first output token, and the cap works in whole
    blocks: an 8-token prompt that is entirely cached hits 1 block (7 // 4), not 2, and computes
    its second block again in a new block (3), cached under the same key as block 2 (two copies).
    A 9-token prompt whose two full blocks are cached hits both (8 // 4) and computes 1 token.

    Catches: hitting every cached block (no token left to compute: allocate_slots gets 0 new
    tokens, and the request never produces logits), capping at num_tokens instead of num_tokens - 1."""
    mgr = lab.KVCacheManager(10, BS)
    a, b = _request(lab, "A", range(8)), _request(lab, "B", range(8))
    assert _prefill(mgr, a) == ([], 0, [1, 2])
    assert _prefill(mgr, b) == ([1], 4, [3])
    key = mgr.block_pool.blocks[2].block_hash
    assert mgr.block_pool.blocks[3].block_hash == key, "B's recomputed block must be cached too"
    assert sorted(mgr.block_pool.cached_block_hash_to_block[key]) == [2, 3]

    c = _request(lab, "C", list(range(8)) + [50])
    assert _prefill(mgr, c) == ([1, 2], 8, [4])


def test_decode_takes_a_block_at_a_boundary_and_caches_it_when_full(lab):
    """A 6-token prompt holds blocks [1, 2]; decode tokens 7 and 8 fit in block 2 (no new block);
    the step that computes token 8 fills block 2, which is cached in that same step (a newcomer
    with those 8 tokens and one more hits both blocks); token 9 takes block 3.

    Catches: caching only at prefill (blocks filled by decoding are never shared), caching one step
    late, caching the partial block, a new block every step."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", [3, 1, 4, 1, 5, 9])
    assert _prefill(mgr, a) == ([], 0, [1, 2])
    assert _hashed(mgr, [1, 2]) == [True, False]
    assert _decode(mgr, a, 2) == []  # 7 tokens
    assert _decode(mgr, a, 6) == []  # 8 tokens: block 2 is full now
    assert _hashed(mgr, [1, 2]) == [True, True]
    b = _request(lab, "B", a.all_token_ids + [5])
    assert mgr.get_computed_blocks(b)[1] == 8
    assert _decode(mgr, a, 5) == [3]  # 9 tokens
    assert mgr.get_block_ids("A") == [1, 2, 3] and a.num_tokens == 9


# --- step 2: free, linger, evict tail first, revive ---------------------------------------------


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
    assert _queue(mgr) == [4, 5, 6, 7, 8, 9, 3, 2, 1]
    assert _refs(mgr, [1, 2, 3]) == [0, 0, 0] and _hashed(mgr, [1, 2, 3]) == [True, True, False]
    d = _request(lab, "D", [40, 41, 42, 43, 44])
    assert _prefill(mgr, d) == ([], 0, [4, 5])
    mgr.free(d)
    assert _queue(mgr) == [6, 7, 8, 9, 3, 2, 1, 5, 4]

    c = _request(lab, "C", range(10))
    assert _prefill(mgr, c) == ([1, 2], 8, [6])
    assert _queue(mgr) == [7, 8, 9, 3, 5, 4] and _refs(mgr, [1, 2]) == [1, 1]
    e = _request(lab, "E", [60] * 24)  # 6 blocks: everything still free
    assert _prefill(mgr, e) == ([], 0, [7, 8, 9, 3, 5, 4])
    assert _queue(mgr) == [] and mgr.get_block_ids("C") == [1, 2, 6]


def test_eviction_takes_a_sequence_tail_before_its_prefix(lab):
    """A (13 tokens: blocks [1, 2, 3, 4], the first 3 full and cached) finishes; its blocks queue
    as 4, 3, 2, 1 behind the never-used 5-9. E needs 7 blocks (25 tokens): 5-9, then A's partial
    block 4, then block 3, whose key is evicted. F then sends A's prompt: blocks 1 and 2 are still
    cached (8 tokens hit), only the tail was lost.

    Catches: freeing a table head first (E would take 1 and 2: F, and every request sharing A's
    prefix, would hit nothing), eager eviction."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(13))
    assert _prefill(mgr, a) == ([], 0, [1, 2, 3, 4])
    mgr.free(a)
    assert _queue(mgr) == [5, 6, 7, 8, 9, 4, 3, 2, 1]
    e = _request(lab, "E", [90 + i % 3 for i in range(25)])
    assert _prefill(mgr, e) == ([], 0, [5, 6, 7, 8, 9, 4, 3])
    f = _request(lab, "F", range(13))
    hits, num_hit = mgr.get_computed_blocks(f)
    assert (_ids(hits), num_hit) == ([1, 2], 8)


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
    assert _prefill(mgr, a) == ([], 0, [1, 2, 3, 4])
    assert _queue(mgr) == []
    assert _decode(mgr, a, 99) is None
    assert mgr.get_block_ids("A") == [1, 2, 3, 4] and _refs(mgr, [1, 2, 3, 4]) == [1, 1, 1, 1]
    assert _prefill(mgr, _request(lab, "B", [5])) == ([], 0, None)
    mgr.free(a)
    assert _queue(mgr) == [4, 3, 2, 1] and _hashed(mgr, [1, 2, 3, 4]) == [True] * 4

    c = _request(lab, "C", list(range(12)) + [70, 71, 72, 73, 74])  # 17 tokens: 5 blocks
    # hits: (17 - 1) // 4 = 4 blocks looked up, the first 3 match; 5 - 3 = 2 new + 3 revived > 4 free
    assert _prefill(mgr, c) == ([1, 2, 3], 12, None)
    assert _queue(mgr) == [4, 3, 2, 1] and _refs(mgr, [1, 2, 3]) == [0, 0, 0]
    assert mgr.get_block_ids("C") == [] and _hashed(mgr, [1, 2, 3, 4]) == [True] * 4

    c2 = _request(lab, "C2", list(range(12)) + [70, 71, 72, 73])  # 16 tokens: 4 blocks
    # hits: 15 // 4 = 3 blocks; 1 new + 3 revived = 4 = every free block
    assert _prefill(mgr, c2) == ([1, 2, 3], 12, [4])
    assert _queue(mgr) == [] and mgr.get_block_ids("C2") == [1, 2, 3, 4]


def test_bad_input_is_a_clear_error_and_changes_nothing(lab):
    """allocate_slots refuses, with a ValueError and no change: zero new tokens, prefix hits for a
    request that already has blocks, a hit count that disagrees with the hit blocks, and more tokens
    than the request has. Freeing a request twice, or one that never got blocks, is a no-op.

    Catches: a request that computes no token (the full-hit bug's symptom), hits appended to a
    running request's table, a second free that double-frees its blocks."""
    mgr = lab.KVCacheManager(10, BS)
    a = _request(lab, "A", range(10))
    _prefill(mgr, a)  # [1, 2, 3]
    b = _request(lab, "B", range(10))
    hits, num_hit = mgr.get_computed_blocks(b)  # [1, 2], 8

    def state():
        return mgr.get_block_ids("A"), mgr.get_block_ids("B"), _refs(mgr, range(10)), _queue(mgr)

    before = state()
    bad = {
        "zero new tokens": lambda: mgr.allocate_slots(b, 0, num_hit, hits),
        "hits for a running request": lambda: mgr.allocate_slots(a, 1, num_hit, hits),
        "8 hit tokens with 1 hit block": lambda: mgr.allocate_slots(b, 2, num_hit, hits[:1]),
        "more tokens than the request has": lambda: mgr.allocate_slots(b, 3, num_hit, hits),
    }
    for what, call in bad.items():
        with pytest.raises(ValueError):
            call()
            pytest.fail(f"{what}: no ValueError")
        assert state() == before, f"{what}: the ValueError came after the manager had changed"
    mgr.free(b)  # never allocated
    mgr.free(a)
    mgr.free(a)  # twice
    assert _refs(mgr, range(10)) == [0] * 10 and _queue(mgr) == [4, 5, 6, 7, 8, 9, 3, 2, 1]


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
    assert _queue(mgr) == model.free, f"{where}: free queue {_queue(mgr)}, expected {model.free}"
    blocks = mgr.block_pool.blocks
    assert [b.ref_cnt for b in blocks] == [model.ref[i] for i in range(len(blocks))], f"{where}: ref counts"
    for req in requests:
        got, expected = mgr.get_block_ids(req.request_id), model.tables.get(req.request_id, [])
        assert got == expected, f"{where}: request {req.request_id} has blocks {got}, expected {expected}"
    for b in blocks:
        assert (b.block_hash is None) == (model.key[b.block_id] is None), (
            f"{where}: block {b.block_id} is {'' if b.block_hash is None else 'not '}cached, the model says otherwise")
    cached = [b for b in blocks if b.block_hash is not None]
    for x in cached:
        for y in cached:
            same = model.key[x.block_id] == model.key[y.block_id]
            assert (x.block_hash == y.block_hash) == same, (
                f"{where}: blocks {x.block_id} and {y.block_id} hold {'the same' if same else 'different'} "
                f"token prefixes but their keys disagree")


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
            hits, num_hit = mgr.get_computed_blocks(req)
            expected_hits = model.hits(req.all_token_ids)
            assert (_ids(hits), num_hit) == (expected_hits, len(expected_hits) * block_size), (
                f"seed {seed}, step {step}: get_computed_blocks({req.request_id})")
            new = mgr.allocate_slots(req, req.num_tokens - num_hit, num_hit, hits)
            expected = model.allocate(req.request_id, req.all_token_ids, num_hit, req.num_tokens - num_hit,
                                      expected_hits)
            assert (None if new is None else _ids(new)) == expected, f"seed {seed}, step {step}: admit"
            if new is not None:
                req.num_computed_tokens = req.num_tokens
                running.append(waiting.pop(0))
        elif action == "decode" and running:
            req = rng.choice(running)
            req.append_output_token_ids([rng.randrange(3)])
            new = mgr.allocate_slots(req, 1)
            expected = model.allocate(req.request_id, req.all_token_ids, req.num_computed_tokens, 1, [])
            assert (None if new is None else _ids(new)) == expected, f"seed {seed}, step {step}: decode"
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
