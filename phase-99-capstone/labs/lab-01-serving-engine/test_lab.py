"""Lab 99-01: a serving engine over the course's paged cache, checked against transformers' ``generate``.

The truth is the same model run by transformers' own ``model.generate`` (greedy, its own dense KV
cache, eager attention), one request at a time, computed before the engine under test runs. The model
is built here from a config with random weights (nothing downloaded), float32 on the CPU, two layers:
small enough that every engine run takes a fraction of a second.

What is compared:
- tokens, one for one, for ragged batches (shared prefixes, chunked prefills, different output
  lengths, requests joining late, a pool too small for everyone);
- the logits of every output token, within ``LOGIT_ATOL`` (see there why);
- the engine's bookkeeping, against numbers worked out by hand or recomputed by brute force in the
  test: prefix-cache hits, tokens computed, every block back in the pool, the scheduler's invariants,
  and each step's batch (positions, slots, tables, offsets);
- the schedule itself, step by step (who runs, in which order, with how many tokens, who is preempted,
  both queues in order), against the README's rules worked out on token and block counts
  (``planned_schedule``): a wrong order recomputes the same tokens, so only the schedule shows it.

The block pool and KV-cache manager are labs 02-01 and 02-05's reference solutions: their state
(ref counts, free count, block tables) is trusted here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from labkit import triton_env
from labkit.testing import model_truth

torch, triton = triton_env.require_torch_and_triton()
# transformers 5 (tested: 5.0, 5.17, 5.24): its attention interface passes the engine's metadata to every layer.
transformers = pytest.importorskip("transformers", minversion="5.0",
                                   reason='needs transformers >= 5: pip install -e ".[model]"')

pytestmark = pytest.mark.triton

BS = 16  # tokens per block: the smallest the decode kernels take
# A Llama-shaped model: 2 layers, 4 query heads sharing 2 KV heads (grouped-query), head_dim 16. No
# special token (generation stops only at max_new_tokens). Weights drawn wider than the default 0.02, so
# a random model's next token depends on its context: a wrong key, position or slot changes the tokens.
CONFIG = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=256, initializer_range=0.1,
    bos_token_id=None, eos_token_id=None, pad_token_id=None, tie_word_embeddings=False,
)
MAX_MODEL_LEN = CONFIG["max_position_embeddings"]
VOCAB = CONFIG["vocab_size"]

# Logits: the engine and generate run the same float32 weights; they differ in how sums are ordered
# (attention over a paged cache, in float64 numpy for prefill chunks and float32 torch for decode
# tokens, against transformers' float32 softmax; matrix products over a batch of another shape). Each
# logit sits at the end of ~10 float32 reductions of at most 128 terms of magnitude ~3: a few units of
# 128 * 2**-24 * 3 ~ 2e-5 at worst, 2e-6 measured. 1e-4 leaves room; a wrong position, slot or
# sequence length moves logits by ~0.1 to 1 (they spread over ~+-3).
LOGIT_ATOL = 1e-4


# --------------------------------------------------------------------------------------------
# The truth: transformers' generate on a twin of the model
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """One torch thread while this module runs (the model is tiny: a second thread only waits)."""
    with model_truth.one_torch_thread():
        yield


def make_model(seed: int = 0, dtype=torch.float32, device: str = "cpu"):
    """The model, built here (not by the lab): LlamaForCausalLM of ``CONFIG`` with weights from ``seed``."""
    return model_truth.make_model(CONFIG, seed, dtype, device)


@pytest.fixture(scope="module")
def model():
    """The model the engines run (each engine switches its attention to the lab's)."""
    return make_model()


@pytest.fixture(scope="module")
def truth(model):
    """``truth(prompt, n)``: (tokens, logits [n, vocab]) of ``generate`` on a dense twin of ``model``;
    a near-tie within ``2 * LOGIT_ATOL`` fails the truth itself."""
    return model_truth.greedy_truth(model, LOGIT_ATOL)


def prompts_of(seed: int, lengths) -> list[list[int]]:
    return model_truth.random_prompts(seed, lengths, VOCAB)


# A shared "system prompt" of 40 tokens: two full blocks (0-15, 16-31) and a partial one.
SYSTEM, ALPHA, BETA, GAMMA, DELTA = prompts_of(1, (40, 6, 20, 9, 50))
# A ragged batch: shared prefixes of 40, 40, 33 tokens and an identical prompt; prompts of 9 to 60
# tokens; 1 to 12 new tokens.
WORKLOAD = {
    "a": (SYSTEM + ALPHA, 7),
    "b": (SYSTEM + BETA, 3),
    "c": (GAMMA, 12),
    "d": (SYSTEM[:33] + [7, 9], 1),
    "e": (DELTA, 5),
    "f": (SYSTEM + ALPHA, 4),  # the same prompt as "a"
}


def expected_outputs(truth, workload) -> dict[str, list[int]]:
    return {rid: truth(prompt, n)[0] for rid, (prompt, n) in workload.items()}


# --------------------------------------------------------------------------------------------
# Driving an engine step by step, recording what each step did
# --------------------------------------------------------------------------------------------


@dataclass
class StepRecord:
    step: int
    output: object  # the SchedulerOutput
    inputs: object  # engine.last_inputs: the batch that ran (None when nothing ran)
    before: dict  # request id -> (num_computed_tokens, token ids, number of outputs, status name) before it
    after: dict  # request id -> (status name, num_computed_tokens, runner's block table, number of outputs)
    tables_after: dict  # request id -> its block table in the KV-cache manager after the step
    shared_after: set  # ids of the blocks held by more than one request after the step
    waiting: list  # request ids, after the step
    running: list
    finished: list


def new_engine(lab, model, **settings):
    settings = {"num_gpu_blocks": 64, "block_size": BS, "max_num_seqs": 8, "max_num_batched_tokens": 24,
                **settings}
    return lab.Engine(model, **settings)


def drive(engine, workload=None, arrivals=None, max_steps=300) -> list[StepRecord]:
    """Add ``workload`` ({id: (prompt, n)}) now and ``arrivals`` ({step: workload}) before those steps;
    step until every request is finished. Fails, instead of hanging, after ``max_steps`` steps."""
    for rid, (prompt, n) in (workload or {}).items():
        engine.add_request(rid, prompt, n)
    arrivals = dict(arrivals or {})
    records = []
    while engine.has_unfinished_requests() or arrivals:
        step = len(records)
        for rid, (prompt, n) in arrivals.pop(step, {}).items():
            engine.add_request(rid, prompt, n)
        assert step < max_steps, f"still unfinished after {max_steps} steps: {len(engine.waiting)} waiting, " \
                                 f"{len(engine.running)} running"
        before = {rid: (r.num_computed_tokens, list(r.all_token_ids), len(r.output_token_ids), r.status.name)
                  for rid, r in engine.requests.items()}
        output = engine.step()
        mgr = engine.kv_manager
        records.append(StepRecord(
            step, output, engine.last_inputs if output.scheduled_requests else None, before,
            {rid: (r.status.name, r.num_computed_tokens, list(r.block_ids), len(r.output_token_ids))
             for rid, r in engine.requests.items()},
            {rid: mgr.get_block_ids(rid) for rid in engine.requests},
            {b.block_id for b in mgr.block_pool.blocks if b.ref_cnt > 1},
            [r.request_id for r in engine.waiting], [r.request_id for r in engine.running], list(engine.finished),
        ))
    return records


def outputs(engine) -> dict[str, list[int]]:
    return {rid: list(r.output_token_ids) for rid, r in engine.requests.items()}


def assert_tokens_equal(engine, expected):
    got = outputs(engine)
    for rid in expected:
        assert got[rid] == expected[rid], (f"request {rid!r}: the engine generated {got[rid]}, generate "
                                           f"{expected[rid]}")


def assert_pool_whole(engine):
    """Every block is back: free count = pool size - the null block; every ref count 0; no table left."""
    pool = engine.kv_manager.block_pool
    held = [b.block_id for b in pool.blocks if b.ref_cnt != 0 and not b.is_null]
    assert held == [], f"blocks still held after the last request finished: {held}"
    assert pool.get_num_free_blocks() == pool.num_gpu_blocks - 1, \
        f"{pool.get_num_free_blocks()} free blocks, expected {pool.num_gpu_blocks - 1}"
    tables = {rid: engine.kv_manager.get_block_ids(rid) for rid in engine.requests}
    assert all(t == [] for t in tables.values()), f"block tables left behind: {tables}"


# --------------------------------------------------------------------------------------------
# Tokens and logits
# --------------------------------------------------------------------------------------------


def test_tokens_match_generate(lab, model, truth):
    """Six requests at once (shared prefixes, an identical prompt, prompts longer than the token budget
    of 24, 1 to 12 new tokens) give, token for token, what ``generate`` gives each alone.

    Catches: anything that changes what the model sees: a position restarting at 0, a slot in the wrong
    block, a stale block table, a decode that does not see its own token, a sample taken from the wrong
    row or from a partial prefill chunk, hits whose blocks are recomputed wrongly."""
    expected = expected_outputs(truth, WORKLOAD)
    engine = new_engine(lab, model)
    drive(engine, WORKLOAD)
    assert_tokens_equal(engine, expected)


def test_logits_match_generate_within_float32_tolerance(lab, model, truth):
    """The logits behind every output token are ``generate``'s within LOGIT_ATOL (module docstring of
    the constant: float32 sums in other orders); the largest difference seen here is ~2e-6.

    Catches: errors too small to flip a token on this run, and the same bugs as the token test."""
    expected = {rid: truth(prompt, n)[1] for rid, (prompt, n) in WORKLOAD.items()}
    engine = new_engine(lab, model, keep_logits=True)
    drive(engine, WORKLOAD)
    for rid, want in expected.items():
        got = engine.requests[rid].logits
        assert len(got) == len(want), f"request {rid!r}: {len(got)} sampled logits rows, expected {len(want)}"
        diff = (torch.stack(got) - want).abs().max().item()
        assert diff <= LOGIT_ATOL, f"request {rid!r}: logits differ from generate's by {diff:.3g} > {LOGIT_ATOL}"


@pytest.mark.parametrize("budget", [5, 16, 256])
def test_chunk_size_changes_nothing(lab, model, truth, budget):
    """Token budgets of 5 (every prompt in chunks, several requests per step), 16 (one block per step)
    and 256 (every prompt at once): the same tokens. Chunking changes when tokens are computed, never
    what comes out.

    Catches: a chunk whose positions restart at 0, a chunk that samples before its prompt is complete,
    a budget check that drops or repeats tokens at a chunk boundary."""
    expected = expected_outputs(truth, WORKLOAD)
    engine = new_engine(lab, model, max_num_batched_tokens=budget)
    records = drive(engine, WORKLOAD)
    assert_tokens_equal(engine, expected)
    totals = [(r.step, r.output.total_num_scheduled_tokens) for r in records]
    over = [(step, total) for step, total in totals if total > budget]
    assert not over, f"budget {budget}: steps (step, tokens scheduled) {over} computed more than the budget"


# --------------------------------------------------------------------------------------------
# Prefix caching and blocks
# --------------------------------------------------------------------------------------------


def test_prefix_cache_hits_as_predicted(lab, model, truth):
    """Hits, worked out by hand (blocks of 16; SYSTEM is 40 tokens, so its blocks 0 and 1 are shareable):

    - step 0, A = SYSTEM + 6 (46 tokens): empty cache, 0 hits. Its full blocks 0, 1 are cached.
    - step 1, B = SYSTEM + 20 (60): blocks 0, 1 hit (32 tokens); its block 2 mixes SYSTEM and B's own
      tokens: a miss. C = A's prompt (46): its full blocks are 0, 1: 32; a hit never covers the last
      prompt token (its logits give the first output). D = 30 other tokens: 0.
    - step 8 (A, B, C, D finished; their blocks free but still cached, the pool is roomy):
      E = SYSTEM + 3 (43): 32. F = B's prompt (60): blocks 0, 1, 2 (48 tokens; 59 // 16 = 3 allowed).
    Tokens computed = sum of (prompt - hits) + (new tokens - 1) decodes. The same run without prefix
    caching computes every prompt token, and gives the same tokens.

    Catches: hits not looked up, hits counted but recomputed (more tokens computed than predicted),
    hits not shared (B's first two blocks are A's), a full hit that skips the last prompt token."""
    a, b, c, d, e, f = (SYSTEM + ALPHA, SYSTEM + BETA, SYSTEM + ALPHA, GAMMA + DELTA[:21], SYSTEM[:40] + [5, 6, 7],
                        SYSTEM + BETA)
    n = {"A": 4, "B": 3, "C": 5, "D": 2, "E": 3, "F": 2}
    arrivals = {0: {"A": (a, n["A"])}, 1: {"B": (b, n["B"]), "C": (c, n["C"]), "D": (d, n["D"])},
                8: {"E": (e, n["E"]), "F": (f, n["F"])}}
    hits = {"A": 0, "B": 32, "C": 32, "D": 0, "E": 32, "F": 48}
    lengths = {"A": 46, "B": 60, "C": 46, "D": 30, "E": 43, "F": 60}
    expected = {rid: truth(p, n[rid])[0] for wave in arrivals.values() for rid, (p, _) in wave.items()}

    for caching in (True, False):
        engine = new_engine(lab, model, max_num_batched_tokens=256, enable_prefix_caching=caching)
        records = drive(engine, arrivals=arrivals)
        preempted = {rid: engine.requests[rid].num_preemptions for rid in n if engine.requests[rid].num_preemptions}
        assert not preempted, f"prefix caching {caching}: preemptions {preempted} in a pool roomy for everyone"
        got_hits = {rid: engine.requests[rid].num_cached_tokens for rid in n}
        want_hits = hits if caching else dict.fromkeys(n, 0)
        assert got_hits == want_hits, f"prefix caching {caching}: hits {got_hits}, expected {want_hits}"
        computed = sum(r.output.total_num_scheduled_tokens for r in records)
        predicted = sum(lengths[r] - want_hits[r] + n[r] - 1 for r in n)
        assert computed == predicted, f"prefix caching {caching}: {computed} tokens computed, expected {predicted}"
        assert_tokens_equal(engine, expected)
        if caching:
            step1 = records[1].tables_after
            assert step1["B"][:2] == step1["A"][:2] == step1["C"][:2], f"blocks not shared at step 1: {step1}"


def test_every_block_returns_to_the_pool(lab, model, truth):
    """After the workload the pool is whole again: ``num_gpu_blocks - 1`` blocks free (block 0 is the null
    block), every ref count 0, no block table left; and each request's blocks leave the step it finishes.

    Catches: a finished request whose blocks are not freed (or freed only at the very end), a preempted
    request that keeps its blocks."""
    engine = new_engine(lab, model)
    records = drive(engine, WORKLOAD)
    for r in records:
        for rid in r.finished:
            assert r.tables_after[rid] == [], f"step {r.step}: finished request {rid!r} still holds blocks " \
                                              f"{r.tables_after[rid]}"
    assert_pool_whole(engine)
    assert_tokens_equal(engine, expected_outputs(truth, WORKLOAD))


# --------------------------------------------------------------------------------------------
# A pool too small for everyone
# --------------------------------------------------------------------------------------------

# Six requests of 30 to 40 prompt tokens and 10 to 20 new ones: each needs 3 or 4 blocks, 20 in all.
CROWD = {f"r{i}": (p, n) for i, (p, n) in enumerate(zip(prompts_of(2, (30, 38, 31, 40, 33, 35)),
                                                          (20, 12, 16, 10, 18, 14), strict=True))}


def test_small_pool_makes_requests_wait_not_fail(lab, model, truth):
    """A pool of 8 blocks (7 usable, 112 tokens) for requests that need 20 blocks in all: requests wait
    in the queue, running ones are preempted when the pool runs dry (and recomputed later), and every
    request still gets ``generate``'s tokens. Requests start in arrival order, and the pool is whole at
    the end. Up to the first preemption, every step is the one ``planned_schedule`` gives (prefix caching
    changes nothing before a preempted request comes back: the crowd's prompts share no block).

    Catches: a preempted request that keeps its computed-token count (its recomputed keys land after
    garbage), keeps its blocks or its block table; admission that skips the queue's head; waiting for
    blocks instead of preempting; a finished request's blocks not freed (the crowd then never fits: the
    run stops at its step limit)."""
    expected = expected_outputs(truth, CROWD)
    plan = planned_schedule(CROWD, None, num_gpu_blocks=8, max_num_seqs=8, budget=64)
    first_preemption = next((i for i, p in enumerate(plan) if p.preempted), None)
    assert first_preemption is not None and any(p.waiting and p.running for p in plan[:first_preemption]), \
        "the crowd must make requests wait while others run, then preempt (a test bug: the scenario, not the " \
        "engine under test)"
    engine = new_engine(lab, model, num_gpu_blocks=8, max_num_batched_tokens=64)
    records = drive(engine, CROWD)
    for r, want in zip(records[: first_preemption + 1], plan, strict=False):
        scheduled = [(q.request_id, r.output.num_scheduled_tokens[q.request_id]) for q in r.output.scheduled_requests]
        got = Planned(scheduled, list(r.output.preempted_req_ids), r.running, r.waiting)
        problem = schedule_difference(r.step, want, got, {rid: before[3] for rid, before in r.before.items()})
        if problem:
            pytest.fail(problem)
    first_step = {}
    for r in records:
        for req in r.output.scheduled_requests:
            first_step.setdefault(req.request_id, r.step)
    order = sorted(first_step, key=lambda rid: (first_step[rid], int(rid[1:])))
    if order != list(CROWD):
        pytest.fail(f"requests started in the order {order}, expected {list(CROWD)}: first come, first served (the "
                    f"request at the head of the queue that does not fit stops admission; nobody overtakes it)")
    assert_tokens_equal(engine, expected)
    assert_pool_whole(engine)

# --------------------------------------------------------------------------------------------
# The schedule itself, against the README's rules worked out on counts
# --------------------------------------------------------------------------------------------


@dataclass
class Planned:
    """One step of the schedule the README's rules give: who runs, in batch order, with how many tokens;
    who was preempted (in the order they were chosen); the queues after the step."""

    scheduled: list  # [(request id, tokens)]
    preempted: list  # request ids
    running: list  # request ids, after the step
    waiting: list  # request ids, after the step, head first


def planned_schedule(workload, arrivals, num_gpu_blocks, max_num_seqs, budget, block_size=BS) -> list[Planned]:
    """The schedule, step by step, from counts alone: prefix caching off, so a request holds exactly
    ceil(tokens in its cache / block_size) blocks, the pool has ``num_gpu_blocks - 1`` (block 0 is the null
    block), and the token ids never matter. The rules, as README steps 1 and 2 state them:

    - running requests in admission order, each computing ``min(tokens not computed, budget left)``;
      when the pool is short, the newest running request is preempted (blocks freed, progress reset, back
      to the head of the queue) and the allocation tried again; a request that preempted itself ends the
      running part;
    - then, only in a step that preempted nobody, the queue's head while budget, seats and blocks last
      (first come first served; the first one that does not fit stops admission);
    - afterwards each request advances by its tokens and, when that reached its last token, gets one
      output; with ``max_new_tokens`` outputs it finishes and frees its blocks."""
    length, max_new, computed, held, emitted = {}, {}, {}, {}, {}
    waiting, running, plan = [], [], []
    arrivals = dict(arrivals or {})

    def arrive(wave):
        for rid, (prompt, n) in wave.items():
            length[rid], max_new[rid], computed[rid], held[rid], emitted[rid] = len(prompt), n, 0, 0, 0
            waiting.append(rid)

    def blocks_missing(rid, n):  # blocks the request needs beyond those it holds, for n more tokens
        return max(-(-(computed[rid] + n) // block_size) - held[rid], 0)

    def free_blocks():
        return num_gpu_blocks - 1 - sum(held.values())

    arrive(workload)
    while waiting or running or arrivals:
        arrive(arrivals.pop(len(plan), {}))
        left, scheduled, preempted = budget, [], []
        for rid in list(running):
            if left == 0 or rid not in running:
                break
            n = min(length[rid] + emitted[rid] - computed[rid], left)
            while blocks_missing(rid, n) > free_blocks() and rid in running:
                victim = running.pop()
                held[victim] = computed[victim] = 0
                preempted.append(victim)
            if rid not in running:
                break
            held[rid] += blocks_missing(rid, n)
            scheduled.append((rid, n))
            left -= n
        waiting[:0] = reversed(preempted)  # each victim goes to the head: the oldest victim ends up first
        while waiting and left > 0 and len(running) < max_num_seqs and not preempted:
            rid = waiting[0]
            n = min(length[rid] + emitted[rid], left)
            if blocks_missing(rid, n) > free_blocks():
                break
            waiting.pop(0)
            running.append(rid)
            held[rid] += blocks_missing(rid, n)
            scheduled.append((rid, n))
            left -= n
        for rid, n in scheduled:
            computed[rid] += n
            if computed[rid] == length[rid] + emitted[rid]:
                emitted[rid] += 1
                if emitted[rid] == max_new[rid]:
                    running.remove(rid)
                    held[rid] = 0
        plan.append(Planned(scheduled, preempted, list(running), list(waiting)))
        assert len(plan) < 1000, "the planned schedule does not finish (a test bug)"
    return plan


def schedule_difference(step: int, want: Planned, got: Planned, before: dict) -> str | None:
    """The first way the engine's step differs from the planned one, in words, naming the classic mistake
    when the difference has the shape of one; None when they agree."""
    where = f"step {step}"
    admitted = [rid for rid, _ in got.scheduled if before[rid] != "RUNNING" or rid in got.preempted]
    if got.preempted and admitted:
        return (f"{where}: the engine preempted {got.preempted} and admitted {admitted} in the same step; a step "
                f"that had to preempt admits nobody (memory is short already); planned: {want.scheduled}")
    if got.preempted != want.preempted:
        return (f"{where}: preempted {got.preempted}, planned {want.preempted} (when a running request finds no "
                f"block, the newest running request is preempted, then the allocation is tried again)")
    overtook = [rid for rid in admitted if rid in want.waiting[1:] and want.waiting[0] not in dict(got.scheduled)]
    if overtook:
        return (f"{where}: the engine admitted {overtook} while {want.waiting[0]!r}, ahead of them in the queue, did "
                f"not fit: first come, first served; admission stops at the first request whose tokens do not fit "
                f"in the pool, it keeps its place, and nobody behind it is admitted (README step 2); planned: "
                f"{want.scheduled}")
    if got.scheduled != want.scheduled:
        return (f"{where}: scheduled (request, tokens) {got.scheduled}, planned {want.scheduled}: running requests "
                f"in order, each up to the budget left, then the queue's head while budget, seats and blocks last")
    if got.running != want.running:
        return f"{where}: running after the step {got.running}, planned {want.running}"
    if got.waiting != want.waiting:
        behind = [rid for rid in got.preempted if rid in got.waiting[len(got.preempted):]]
        named = (f": a preempted request ({behind}) goes back to the very head of the queue, ahead of everyone "
                 f"waiting, the requests preempted before it too (README step 1)") if behind else ""
        return f"{where}: waiting queue after the step (head first) {got.waiting}, planned {want.waiting}{named}"
    return None


# The crowd in a pool of 10 blocks (9 usable), 3 seats, a budget of 24 tokens, and two late arrivals
# that join while the crowd is preempting: requests outgrow their blocks while others wait.
SCHEDULE_RUN = dict(num_gpu_blocks=10, max_num_seqs=3, max_num_batched_tokens=24, enable_prefix_caching=False)
SCHEDULE_LATE = {4: {"x": (CROWD["r0"][0][:20], 9)}, 9: {"y": (CROWD["r2"][0][:25], 12)}}


def test_schedule_matches_brute_force_under_preemption(lab, model, truth):
    """Every step of a run that preempts while others wait, against the schedule the README's rules give
    (``planned_schedule``, worked out on token and block counts in this file): who runs, in which order,
    with how many tokens; who is preempted; the running list and the waiting queue, in order, after the
    step. Recomputation gives the same tokens whatever the order, so only the schedule shows these.

    Catches: admission in a step that preempted, a preempted request put at the back of the queue, a
    preemption that does not retry the allocation, a running request's chunk that ignores the budget,
    the seat limit off by one, a preemption not counted in the request's ``num_preemptions``."""
    settings = SCHEDULE_RUN
    plan = planned_schedule(CROWD, SCHEDULE_LATE, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"])
    events = [p for p in plan if p.preempted and p.waiting]
    assert len(events) >= 3, f"the workload must preempt while others wait (a test bug): {len(events)} such steps"
    engine = new_engine(lab, model, **settings)
    records = drive(engine, CROWD, arrivals=SCHEDULE_LATE, max_steps=len(plan) + 20)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected_outputs(truth, {**CROWD, **SCHEDULE_LATE[4], **SCHEDULE_LATE[9]}))


def assert_schedule_as_planned(engine, records, plan):
    """Each recorded step against the planned one, with the status of every waiting request, then the step
    count and each request's preemptions."""
    __tracebackhide__ = True
    victims = set()  # the requests the plan preempted so far
    for r, want in zip(records, plan, strict=False):
        scheduled = [(q.request_id, r.output.num_scheduled_tokens[q.request_id]) for q in r.output.scheduled_requests]
        got = Planned(scheduled, list(r.output.preempted_req_ids), r.running, r.waiting)
        problem = schedule_difference(r.step, want, got, {rid: before[3] for rid, before in r.before.items()})
        if problem:
            pytest.fail(problem)
        victims.update(want.preempted)
        status_problem = waiting_status_difference(r, victims)
        if status_problem:
            pytest.fail(status_problem)
    assert len(records) == len(plan), f"the engine took {len(records)} steps, the planned schedule {len(plan)}"
    want_counts = {rid: sum(p.preempted.count(rid) for p in plan) for rid in engine.requests}
    got_counts = {rid: request.num_preemptions for rid, request in engine.requests.items()}
    if got_counts != want_counts:
        wrong = {rid: got_counts[rid] for rid in got_counts if got_counts[rid] != want_counts[rid]}
        want = {rid: want_counts[rid] for rid in wrong}
        pytest.fail(f"num_preemptions {wrong}, expected {want}: the run preempted as planned, and _preempt counts "
                    f"every preemption on the request (README step 1)")


def waiting_status_difference(record, victims) -> str | None:
    """The waiting requests of ``record`` whose status is not the one the README gives, in words; None when
    all agree. Only a preemption sends a request that ran back to the queue, so a waiting request preempted
    at least once (``victims``, from the plan or the run's record) is PREEMPTED and any other is WAITING."""
    want = {rid: "PREEMPTED" if rid in victims else "WAITING" for rid in record.waiting}
    got = {rid: record.after[rid][0] for rid in record.waiting}
    if got == want:
        return None
    wrong = {rid: got[rid] for rid in got if got[rid] != want[rid]}
    expected = {rid: want[rid] for rid in wrong}
    return (f"step {record.step}: waiting requests with status {wrong}, expected {expected}: "
            f"_preempt sets a preempted request's status to PREEMPTED (README step 1), as vLLM does; a request "
            f"that never ran is WAITING")


# A pool of 5 blocks (4 usable): "big0" takes 3 of them; "big1", next in the queue, needs 3 and waits until
# big0 finishes; "small", behind it, would fit in the block left, and waits its turn too.
HEAD_OF_LINE = {rid: (p, n) for rid, p, n in zip(("big0", "big1", "small"), prompts_of(7, (40, 40, 5)), (6, 4, 3),
                                                  strict=True)}
HEAD_OF_LINE_RUN = dict(num_gpu_blocks=5, max_num_seqs=8, max_num_batched_tokens=64, enable_prefix_caching=False)


def test_admission_stops_at_the_first_request_that_does_not_fit(lab, model, truth):
    """A request at the head of the queue whose tokens do not fit in the pool keeps its place, and the
    requests behind it wait too, even one that would fit: every step against ``planned_schedule``, then
    ``generate``'s tokens.

    Catches: admission that skips a request that does not fit and admits the ones behind it (first come,
    first served broken: a large request can wait for ever while small ones overtake it)."""
    settings = HEAD_OF_LINE_RUN
    plan = planned_schedule(HEAD_OF_LINE, None, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"])
    assert plan[0].scheduled == [("big0", 40)] and plan[0].waiting == ["big1", "small"], \
        f"big1 must wait at the head of the queue with small behind it, in step 0 (a test bug): {plan[0]}"
    engine = new_engine(lab, model, **settings)
    records = drive(engine, HEAD_OF_LINE, max_steps=len(plan) + 20)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected_outputs(truth, HEAD_OF_LINE))


# Two requests in a pool of 4 blocks (3 usable) with a budget of 16 tokens. Step 0: s0's first 16 tokens
# (1 block). Step 1: s0's last prompt token (its 2nd block), s1's first 15 tokens (the 3rd). Step 2: s0's
# decode token fits in its 2nd block (its last: s0 finishes), s1's next 5 tokens need a block and none is
# free: the newest running request is s1 itself.
SELF_PREEMPTION = {rid: (p, n) for rid, p, n in zip(("s0", "s1"), prompts_of(3, (17, 20)), (2, 3), strict=True)}
SELF_PREEMPTION_RUN = dict(num_gpu_blocks=4, max_num_seqs=3, max_num_batched_tokens=16, enable_prefix_caching=False)


def test_a_request_that_preempts_itself_ends_the_running_part(lab, model, truth):
    """The last running request finds no block, and the newest running request, the one to preempt, is
    itself: it is preempted (back to the head of the queue) and the step's scheduling ends there, nobody
    admitted. Every step against ``planned_schedule``, then ``generate``'s tokens.

    Catches: the allocation retried for the request it just preempted (it is then scheduled while it
    waits, or the next preemption pops an empty running list), and a self-preempted request added to the
    batch with no blocks."""
    settings = SELF_PREEMPTION_RUN
    expected = expected_outputs(truth, SELF_PREEMPTION)
    plan = planned_schedule(SELF_PREEMPTION, None, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"])
    # Steps 1 and 2 as the comment above works them out: s0's 18th token fits in the block of its 17th, so
    # in step 2 only s1 lacks a block (a test bug otherwise).
    assert plan[1].scheduled == [("s0", 1), ("s1", 15)] and plan[2] == Planned([("s0", 1)], ["s1"], [], ["s1"]), \
        f"the workload must make s1 preempt itself in step 2 (a test bug): {plan[:3]}"
    engine = new_engine(lab, model, **settings)
    try:
        records = drive(engine, SELF_PREEMPTION, max_steps=len(plan) + 20)
    except NotImplementedError:
        raise
    except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
        pytest.fail(f"the engine raised {type(err).__name__}: {err}\n  in a run where s1 preempts itself in step 2 "
                    f"(planned: {plan[2]}): a request that preempted itself is not scheduled and not retried; "
                    f"the running part of the step ends there")
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected)


# Three requests in a pool of 6 blocks (5 usable) with a budget of 32 tokens. Step 0: a's 30 prompt tokens
# (2 blocks), b's first 2 (1 block). Step 1: a's decode token, b's last 28 (its 2nd block), c's first 3 (the
# 5th block). Step 2: c's other 14 tokens need a 2nd block and none is free: c, the newest, preempts itself.
# Step 3: a's 33rd token takes the free block; c (2 blocks) does not fit and waits. Step 4: b's 33rd token
# needs a 3rd block and none is free: b preempts itself while c, the earlier victim, still waits.
SECOND_VICTIM = {rid: (p, n) for rid, p, n in zip(("a", "b", "c"), prompts_of(8, (30, 30, 17)), (6, 6, 1),
                                                   strict=True)}
SECOND_VICTIM_RUN = dict(num_gpu_blocks=6, max_num_seqs=8, max_num_batched_tokens=32, enable_prefix_caching=False)


def test_a_new_victim_goes_ahead_of_an_earlier_one_still_waiting(lab, model, truth):
    """A request preempted while an earlier victim still waits goes to the very head of the queue, ahead of
    that victim (README step 1: "back at the head of self.waiting"; it ran more recently than anyone in
    the queue). Every step against ``planned_schedule``, which puts each victim at the head: b preempted in
    step 4 leaves the queue [b, c], and b, not c, is admitted next, once a finishes. Then ``generate``'s tokens.

    Catches: a victim put behind the victims already waiting (in front of the requests that never ran), an
    order that only a queue holding two victims at once can show."""
    settings = SECOND_VICTIM_RUN
    plan = planned_schedule(SECOND_VICTIM, None, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"])
    # c preempted in step 2, still waiting when b is preempted in step 4 (a test bug otherwise).
    assert plan[2].preempted == ["c"] and plan[3].waiting == ["c"] and plan[4].preempted == ["b"], \
        f"b must be preempted in step 4 while c, preempted in step 2, still waits (a test bug): {plan[:5]}"
    assert plan[4].waiting == ["b", "c"], f"the plan must put b ahead of c (a test bug): {plan[4]}"
    engine = new_engine(lab, model, **settings)
    records = drive(engine, SECOND_VICTIM, max_steps=len(plan) + 20)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected_outputs(truth, SECOND_VICTIM))


# Two 3-token prompts and a budget of 2 tokens. Step 1: t0's last prompt token, then t1 admitted with the
# one token left. Step 2: t0's decode token, then t1, running, gets the budget's last token.
LAST_TOKEN = {rid: (p, n) for rid, p, n in zip(("t0", "t1"), prompts_of(4, (3, 3)), (2, 1), strict=True)}
LAST_TOKEN_RUN = dict(max_num_batched_tokens=2, enable_prefix_caching=False)


def test_the_budget_is_spent_to_its_last_token(lab, model, truth):
    """A running request whose turn comes with one token of budget left computes that token. Every step
    against ``planned_schedule``, then ``generate``'s tokens.

    Catches: the running requests' loop stopping while one token of budget is left (``budget > 1``), which
    delays t1 a step."""
    settings = {**LAST_TOKEN_RUN, "num_gpu_blocks": 64, "max_num_seqs": 8}
    expected = expected_outputs(truth, LAST_TOKEN)
    plan = planned_schedule(LAST_TOKEN, None, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"])
    assert plan[2].scheduled == [("t0", 1), ("t1", 1)], \
        f"t1 must get the budget's last token in step 2 (a test bug): {plan[:3]}"
    engine = new_engine(lab, model, **settings)
    records = drive(engine, LAST_TOKEN, max_steps=len(plan) + 20)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected)


# Three short prompts, admitted together in step 0; in step 1 the engine answers 0 tokens for "b".
ASKED = {rid: (p, 3) for rid, p in zip(("a", "b", "c"), prompts_of(5, (5, 6, 7)), strict=True)}


@pytest.mark.ungraded  # it subclasses your Engine
def test_schedule_asks_the_engine_for_each_running_request(lab, model, truth):
    """``schedule`` takes a running request's token count from ``self.num_new_tokens`` and its blocks
    from ``self.allocate_slots`` (given methods that lab 99-02's engine, built on this ``schedule``,
    answers its own way), and passes over a request that gets 0 tokens: here "b" in step 1 only. Step 1
    then schedules a and c, each asked for blocks once; b runs a step late with the same tokens.

    Catches: a request that gets 0 tokens still scheduled (or sent to the allocator with 0 tokens),
    and the count or the allocation written inline, so that an engine built on this one cannot change
    them."""
    asked = []

    class Engine(lab.Engine):
        def num_new_tokens(self, request, budget):
            if self.num_steps == 1 and request.request_id == "b":
                return 0
            return super().num_new_tokens(request, budget)

        def allocate_slots(self, request, num_new_tokens):
            asked.append((self.num_steps, request.request_id, num_new_tokens))
            return super().allocate_slots(request, num_new_tokens)

    expected = expected_outputs(truth, ASKED)
    engine = Engine(model, num_gpu_blocks=64, block_size=BS, max_num_seqs=8, max_num_batched_tokens=24,
                    enable_prefix_caching=False)
    records = drive(engine, ASKED, max_steps=20)
    got = [(r.request_id, records[1].output.num_scheduled_tokens[r.request_id])
           for r in records[1].output.scheduled_requests]
    assert got == [("a", 1), ("c", 1)], \
        f"step 1 scheduled {got}; num_new_tokens answered 0 for b, so expected [('a', 1), ('c', 1)]"
    step1 = [(rid, n) for step, rid, n in asked if step == 1]
    assert step1 == [("a", 1), ("c", 1)], \
        (f"in step 1 self.allocate_slots was called with {step1}, expected once for a and once for c, 1 token "
         f"each (a running request's blocks come through self.allocate_slots; b, passed over, asks for none)")
    assert_tokens_equal(engine, expected)


# Settings at the API's limits, prefix caching off: (settings, workload).
SMALL = {"s": (GAMMA, 3), "t": (SYSTEM[:5], 4)}  # each fits in one block of 16, alone
LIMITS = {
    "smallest": (dict(num_gpu_blocks=2, max_num_seqs=1, max_num_batched_tokens=1), SMALL),
    "blocks of 32": (dict(block_size=32, num_gpu_blocks=32), WORKLOAD),
}


@pytest.mark.parametrize("case", list(LIMITS))
def test_sizes_at_the_api_limits(lab, model, truth, case):
    """The engine at the limits of what its settings accept, prefix caching off: the smallest (a pool of 2
    blocks, one usable; one seat; a budget of one token: every prompt one token a step) and blocks of 32,
    the other size the kernels take. Every step against ``planned_schedule``, then ``generate``'s tokens
    and the pool whole.

    Catches: admission that stops with one token of budget left (under a budget of one, nobody ever
    starts), a slot computed with blocks of 16 whatever ``block_size`` says."""
    settings = {"num_gpu_blocks": 64, "block_size": BS, "max_num_seqs": 8, "max_num_batched_tokens": 24,
                **LIMITS[case][0], "enable_prefix_caching": False}
    work = LIMITS[case][1]
    plan = planned_schedule(work, None, settings["num_gpu_blocks"], settings["max_num_seqs"],
                            settings["max_num_batched_tokens"], settings["block_size"])
    engine = new_engine(lab, model, **settings)
    records = drive(engine, work, max_steps=len(plan) + 20)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected_outputs(truth, work))
    assert_pool_whole(engine)


# A model whose max_model_len, 88, is not a multiple of the block size: a request that reaches it ends in
# the middle of its sixth block.
SHORT_CONFIG = {**CONFIG, "max_position_embeddings": 88}
SHORT_WORK = {"mid": (prompts_of(60, [37])[0], 5), "edge": (prompts_of(61, [80])[0], 8),
              "full": (prompts_of(62, [50])[0], 38)}


def test_max_model_len_not_a_multiple_of_the_block_size(lab):
    """A model of ``max_model_len`` 88 (five and a half blocks of 16): two requests that reach it exactly
    (80 + 8 and 50 + 38 tokens) beside a shorter one, chunked by the budget of 24: ``generate``'s tokens,
    the pool whole; one token more is refused with a ValueError naming ``max_model_len``.

    Catches: a request that reaches ``max_model_len`` exactly refused or cut short, a last block that is
    only partly used read or written wrong."""
    short_model = model_truth.make_model(SHORT_CONFIG, 0)
    truth = model_truth.greedy_truth(short_model, LOGIT_ATOL)
    expected = {rid: truth(prompt, n)[0] for rid, (prompt, n) in SHORT_WORK.items()}
    engine = new_engine(lab, short_model)
    assert engine.max_model_len == 88
    with pytest.raises(ValueError, match="max_model_len"):
        engine.add_request("over", prompts_of(63, [81])[0], 8)
    drive(engine, SHORT_WORK)
    assert_tokens_equal(engine, expected)
    assert_pool_whole(engine)


def test_num_cached_tokens_counts_the_first_admission_only(lab, model, truth):
    """The crowd in a small pool with prefix caching on: a preempted request's own full blocks are often
    still cached when it comes back, so its readmission starts after hits. ``num_cached_tokens`` is the
    prefix-cache hits of the first admission, and the crowd's prompts share no block: it must stay 0 for
    every request, readmitted or not (with this schedule, three readmissions hit 32 tokens each).

    Catches: ``num_cached_tokens`` overwritten at every admission (it then counts a request's own
    recomputed blocks)."""
    engine = new_engine(lab, model, num_gpu_blocks=10, max_num_seqs=3, max_num_batched_tokens=20)
    records = drive(engine, CROWD)
    rehits = [(r.step, q.request_id) for r in records for q in r.output.scheduled_requests
              if r.before[q.request_id][3] == "PREEMPTED"
              and r.after[q.request_id][1] - r.output.num_scheduled_tokens[q.request_id] > 0]
    got = {rid: engine.requests[rid].num_cached_tokens for rid in CROWD}
    wrong = {rid: n for rid, n in got.items() if n != 0}
    if wrong:
        readmitted = (f". The readmissions (step, request) {rehits} hit the requests' own blocks, which it must not "
                      f"count: it is set at the first admission only, never again at a readmission" if rehits else "")
        pytest.fail(f"num_cached_tokens {wrong}, expected 0 for each: the crowd's prompts share no block, so every "
                    f"first admission hit nothing{readmitted}")
    assert_tokens_equal(engine, expected_outputs(truth, CROWD))

# A pool of 7 blocks (6 usable), prefix caching on. Step 0: "cut" (32 tokens, 1 new) takes blocks 1, 2 and
# finishes, both full blocks cached; "long" (40 tokens, 30 new) takes 3, 4, 5. The free queue is [6, 2, 1].
# Step 1: "late" sends cut's 32 tokens and 30 more (62: 4 blocks): 2 hits on blocks 2 and 1, both free,
# and 2 new blocks: 4 > 3 free, so it waits. long's token 49 takes block 6 (step 9), its token 65 block
# 2 (step 25), evicting the key of cut's tokens 0-31. long finishes in step 29; in step 30 "late" is
# admitted with 1 hit (block 1, 16 tokens) and computes its other 46 tokens.
REFUSED_TRY_PROMPTS = prompts_of(9, (32, 30, 40))
REFUSED_TRY = {"cut": (REFUSED_TRY_PROMPTS[0], 1), "long": (REFUSED_TRY_PROMPTS[2], 30)}
REFUSED_TRY_LATE = {1: {"late": (REFUSED_TRY_PROMPTS[0] + REFUSED_TRY_PROMPTS[1], 2)}}


def test_num_cached_tokens_is_the_hits_of_the_admission_that_succeeds(lab, model, truth):
    """A request whose first try at admission is refused (its blocks do not fit) keeps waiting while the
    hits it found are evicted; ``num_cached_tokens`` is the hits of the admission that succeeds, 16 tokens
    (worked out above ``REFUSED_TRY``), not the 32 of the refused try, and the admission computes the
    other 46 prompt tokens. Then ``generate``'s tokens.

    Catches: ``num_cached_tokens`` recorded right after the lookup, before ``allocate_slots`` answers
    (a request that waits reports hits that were never used)."""
    engine = new_engine(lab, model, num_gpu_blocks=7, max_num_batched_tokens=80)
    records = drive(engine, REFUSED_TRY, arrivals=REFUSED_TRY_LATE)
    waited = [r.step for r in records if "late" in r.waiting]
    assert waited == list(range(1, 30)), f"'late' waited in steps {waited}, expected 1..29 (the pool is short)"
    admitted = records[30].output.num_scheduled_tokens.get("late")
    assert admitted == 46, f"step 30: 'late' computes {admitted} tokens, expected 62 - 16 hit tokens = 46"
    got = engine.requests["late"].num_cached_tokens
    assert got == 16, (f"num_cached_tokens of 'late': {got}, expected 16, the hits of the admission in step 30 "
                       f"(its refused try in step 1 found 32, since evicted): record it once the admission succeeds")
    assert_tokens_equal(engine, expected_outputs(truth, {**REFUSED_TRY, **REFUSED_TRY_LATE[1]}))


# --------------------------------------------------------------------------------------------
# Bad requests
# --------------------------------------------------------------------------------------------


def test_bad_requests_rejected_and_engine_stays_usable(lab, model, truth):
    """Each bad request raises a ValueError naming what is wrong and leaves the queues as they were;
    then the engine serves good requests (including one with a rejected request's id) correctly. Bad
    settings (pool, block size, seats, budget, backend) are refused the same way, by name, before any
    engine exists.

    Catches: a bad request that half-enters the engine (queued, or its id taken) or breaks it."""
    prompt, n = WORKLOAD["c"]
    expected = truth(prompt, n)[0]
    engine = new_engine(lab, model, num_gpu_blocks=8)  # 7 usable blocks: 112 tokens
    engine.add_request("ok", prompt, n)
    bad = [
        (("empty", [], 3), "prompt_token_ids"),
        (("long", [1] * (MAX_MODEL_LEN - 2), 3), "max_model_len"),  # 254 + 3 > 256
        (("zero", [1, 2, 3], 0), "max_new_tokens"),
        (("neg", [1, 2, 3], -1), "max_new_tokens"),
        (("vocab", [1, VOCAB], 3), "prompt_token_ids"),
        (("text", "hello", 3), "prompt_token_ids"),
        (("huge", [1] * 100, 20), "blocks"),  # 119 tokens to cache need 8 blocks; 7 exist
        (("ok", [1, 2, 3], 2), "request_id"),  # already taken
        ((7, [1, 2, 3], 2), "request_id"),
    ]
    bad_settings = [
        ({"num_gpu_blocks": 1}, "num_gpu_blocks"),
        ({"block_size": 24}, "block_size"),
        ({"max_num_seqs": 0}, "max_num_seqs"),
        ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
        ({"backend": "cuda"}, "backend"),
    ]
    for settings, word in bad_settings:
        with pytest.raises(ValueError, match=word):
            new_engine(lab, model, **settings)
    for args, word in bad:
        with pytest.raises(ValueError, match=word):
            engine.add_request(*args)
        assert [r.request_id for r in engine.waiting] == ["ok"] and not engine.running, f"{args[0]!r} was queued"
    engine.add_request("empty", prompt, n)  # the id of a rejected request is still free
    drive(engine)
    assert_tokens_equal(engine, {"ok": expected, "empty": expected})
    assert_pool_whole(engine)


# --------------------------------------------------------------------------------------------
# The scheduler's invariants and each step's batch
# --------------------------------------------------------------------------------------------

# A busy run: the crowd, plus late arrivals that share the crowd's prefixes, a pool that preempts, a
# budget of 20 tokens that chunks every prompt, at most 3 requests running.
LATE = {7: {"x": (CROWD["r0"][0][:32] + [3, 1, 4], 6)}, 12: {"y": (CROWD["r1"][0], 5), "z": ([11] * 17, 9)}}


def busy_run(lab, model):
    engine = new_engine(lab, model, num_gpu_blocks=10, max_num_seqs=3, max_num_batched_tokens=20)
    return engine, drive(engine, CROWD, arrivals=LATE)


def test_scheduling_invariants_hold_every_step(lab, model, truth):
    """After every step of a busy run (preemptions, chunked prompts, late arrivals):

    - the step computed at most ``max_num_batched_tokens`` tokens, at least one per scheduled request,
      and at most ``max_num_seqs`` requests run; a step that preempted admitted nobody;
    - every request added is in exactly one of waiting, running, finished, with the matching status (a
      waiting request is PREEMPTED once it has been preempted, WAITING before it first runs);
    - a waiting request has computed nothing and holds no block; a running one's block table (the
      runner's copy) is the KV-cache manager's;
    - a running request advanced by exactly its scheduled tokens, and every scheduled request emitted a
      token exactly when its chunk reached its last token.

    Catches: the budget exceeded, the seat limit ignored, a finished request left running, a preempted
    request that keeps its progress or blocks or is left WAITING, a block table not extended, a token
    sampled from a partial prefill chunk or not sampled at all. (Admission in a step that preempted is
    checked here too, but this run seldom offers the chance:
    ``test_schedule_matches_brute_force_under_preemption`` does.)"""
    engine, records = busy_run(lab, model)
    queue_status = {"waiting": {"WAITING", "PREEMPTED"}, "running": {"RUNNING"}, "finished": {"FINISHED"}}
    victims = set()  # the requests the run preempted so far
    for r in records:
        where = f"step {r.step}"
        sched = r.output.num_scheduled_tokens
        assert sum(sched.values()) <= engine.max_num_batched_tokens, \
            f"{where}: {sum(sched.values())} tokens scheduled, budget {engine.max_num_batched_tokens}: {sched}"
        assert all(v >= 1 for v in sched.values()), f"{where}: a request scheduled with no token: {sched}"
        assert len(r.running) <= engine.max_num_seqs, \
            f"{where}: {len(r.running)} requests running {r.running}, max_num_seqs {engine.max_num_seqs}"
        if r.output.preempted_req_ids:  # memory is short: nobody gets in, the victims least of all
            admitted = [q.request_id for q in r.output.scheduled_requests
                        if r.before[q.request_id][3] != "RUNNING" or q.request_id in r.output.preempted_req_ids]
            assert not admitted, f"{where}: preempted {r.output.preempted_req_ids} and admitted {admitted}"
        queues = {"waiting": r.waiting, "running": r.running, "finished": r.finished}
        seen = [rid for ids in queues.values() for rid in ids]
        assert sorted(seen) == sorted(r.before), f"{where}: every request in exactly one queue, got {queues}"
        for queue, ids in queues.items():
            for rid in ids:
                status, computed, runner_table, _ = r.after[rid]
                assert status in queue_status[queue], f"{where}: {rid!r} is {status} in the {queue} queue"
                if queue == "waiting":
                    assert computed == 0 and r.tables_after[rid] == [], \
                        f"{where}: waiting {rid!r} has {computed} computed tokens, blocks {r.tables_after[rid]}"
                if queue == "running":
                    assert runner_table == r.tables_after[rid], \
                        f"{where}: {rid!r}'s block table {runner_table} is not the manager's {r.tables_after[rid]}"
        victims.update(r.output.preempted_req_ids)
        status_problem = waiting_status_difference(r, victims)
        assert status_problem is None, status_problem
        for req in r.output.scheduled_requests:
            rid, n = req.request_id, sched[req.request_id]
            computed, tokens, emitted, _ = r.before[rid]
            _, computed_after, _, emitted_after = r.after[rid]
            if computed:  # it was running with a cache: it advances by its chunk
                assert computed_after == computed + n, f"{where}: {rid!r} computed {computed} + {n}, " \
                                                       f"reports {computed_after}"
            reached_end = computed_after == len(tokens)
            assert emitted_after == emitted + reached_end, \
                f"{where}: {rid!r} emitted {emitted_after - emitted} tokens; its chunk " \
                f"{'did' if reached_end else 'did not'} reach its last token"
    assert_tokens_equal(engine, expected_outputs(truth, {**CROWD, **LATE[7], **LATE[12]}))


def test_step_inputs_match_brute_force(lab, model, truth):
    """Every step's batch, recomputed from the request's tokens and the KV-cache manager's block table:
    sequences in the scheduled order, rows ``query_start_loc[s] .. query_start_loc[s + 1] - 1`` holding
    the request's tokens ``start .. start + n - 1`` at those positions, each written to slot
    ``table[p // 16] * 16 + p % 16``, ``seq_lens = start + n``, the last row of each chunk sampled. A slot
    is never in a block another request holds: shared blocks are full and cached, never rewritten.

    Catches: positions restarting at 0, the slot computed from the logical block, a block table not
    extended before the write, a decode reading the previous step's ``seq_len``, hits recomputed into
    shared blocks, sampling the chunk's first row."""
    engine, records = busy_run(lab, model)
    for r in records:
        if r.inputs is None:
            continue
        inputs, where = r.inputs, f"step {r.step}"
        loc = [0]
        for req in r.output.scheduled_requests:
            loc.append(loc[-1] + r.output.num_scheduled_tokens[req.request_id])
        assert list(inputs.query_start_loc) == loc, f"{where}: query_start_loc {inputs.query_start_loc}, want {loc}"
        assert list(inputs.logits_indices) == [x - 1 for x in loc[1:]], \
            f"{where}: logits_indices {inputs.logits_indices}, want each chunk's last row {[x - 1 for x in loc[1:]]}"
        for s, req in enumerate(r.output.scheduled_requests):
            rid, n = req.request_id, r.output.num_scheduled_tokens[req.request_id]
            computed, tokens, _, _ = r.before[rid]
            start = r.after[rid][1] - n  # after the step the request has computed start + n tokens
            if computed:  # it was running: the chunk continues where its cache ended
                assert start == computed, f"{where}: {rid!r} starts at {start}, its cache ended at {computed}"
            rows = slice(loc[s], loc[s + 1])
            assert inputs.positions[rows] == list(range(start, start + n)), \
                f"{where}: {rid!r} positions {inputs.positions[rows]}, want {start}..{start + n - 1}"
            assert inputs.input_ids[rows] == tokens[start:start + n], \
                f"{where}: {rid!r} input_ids {inputs.input_ids[rows]}, want its tokens {start}..{start + n - 1}: " \
                f"{tokens[start:start + n]}"
            assert inputs.seq_lens[s] == start + n, f"{where}: {rid!r} seq_len {inputs.seq_lens[s]}, want {start + n}"
            table = r.tables_after[rid]
            if not table:
                continue  # finished in this step: its table is gone (checked in the other steps)
            assert list(inputs.block_tables[s]) == table, \
                f"{where}: {rid!r} block table {inputs.block_tables[s]}, the KV-cache manager's is {table}"
            want = [table[p // BS] * BS + p % BS for p in range(start, start + n)]
            assert inputs.slot_mapping[rows] == want, \
                f"{where}: {rid!r} slots {inputs.slot_mapping[rows]}, want {want} (positions {start}.., table {table})"
            shared = sorted({slot // BS for slot in want} & r.shared_after)
            assert not shared, f"{where}: {rid!r} writes into blocks {shared}, which other requests hold"


def test_requests_join_and_leave_between_steps(lab, model, truth):
    """Requests arriving while others decode join the very next step, in the same batch as the decodes
    (a step mixes one-token decodes and prefill chunks), and a request leaves the batch the step it
    finishes; every request still gets ``generate``'s tokens.

    Catches: a scheduler that drains the running batch before admitting (static batching), a finished
    request that keeps running, arrivals that disturb the running requests' caches."""
    first = {"p": (GAMMA, 12), "q": (SYSTEM + ALPHA, 3)}
    arrivals = {3: {"s": (SYSTEM + BETA, 4)}, 5: {"t": (DELTA[:17], 6), "u": (SYSTEM[:20], 2)}}
    expected = expected_outputs(truth, {**first, **arrivals[3], **arrivals[5]})
    engine = new_engine(lab, model, max_num_batched_tokens=64)
    records = drive(engine, first, arrivals=arrivals)
    for step, wave in arrivals.items():
        scheduled = {req.request_id for req in records[step].output.scheduled_requests}
        assert set(wave) <= scheduled, f"step {step}: arrivals {sorted(wave)} not scheduled (got {sorted(scheduled)})"
        assert "p" in scheduled and records[step].output.num_scheduled_tokens["p"] == 1, \
            f"step {step}: the decoding request 'p' is not in the arrivals' batch"
    for r in records:
        for rid in r.finished:
            later = [x.step for x in records[r.step + 1:] if rid in x.output.num_scheduled_tokens]
            assert not later, f"request {rid!r} finished at step {r.step} but ran again at steps {later}"
            assert rid not in r.running, f"step {r.step}: finished request {rid!r} is still running"
    assert_tokens_equal(engine, expected)


def test_update_from_output_returns_the_requests_it_finished(lab, model):
    """One step driven by hand (``schedule``, ``prepare_inputs``, ``update_from_output``; no forward pass,
    the sampled ids are made up): two prompts computed whole, "a" wanting 1 new token and "b" 2. The
    update returns the requests finished in its step: exactly "a".

    Catches: an ``update_from_output`` that finishes and frees the requests but returns nothing (the given
    ``step`` ignores the value, so no other test sees it)."""
    engine = new_engine(lab, model)
    engine.add_request("a", prompts_of(5, (5,))[0], 1)
    engine.add_request("b", prompts_of(6, (6,))[0], 2)
    output = engine.schedule()
    engine.prepare_inputs(output)
    scheduled = [req.request_id for req in output.scheduled_requests]
    assert scheduled == ["a", "b"], f"schedule: expected 'a' and 'b' (11 tokens, budget 24), got {scheduled}"
    got = engine.update_from_output(output, [11, 12])
    if not isinstance(got, list | tuple):
        pytest.fail(f"update_from_output returned {got!r}; it returns the list of requests finished in its step "
                    f"(here ['a']: its one new token came) (README step 4)")
    got_ids = [str(getattr(req, "request_id", req)) for req in got]
    assert got_ids == ["a"], (f"update_from_output returned the requests {got_ids}; 'a' (1 of 1 new tokens) "
                              f"finished in this step, 'b' (1 of 2) did not (README step 4)")

# --------------------------------------------------------------------------------------------
# The Triton kernels: through the interpreter on a CPU, on the GPU for real
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(triton_env.device() == "cuda", reason="with a GPU, Triton runs no interpreter: the kernels run "
                    "for real in test_gpu_kernels_match_generate")
def test_triton_kernels_through_the_interpreter(lab, model, truth):
    """The runner's Triton backend (lab 04-03's prefill and lab 04-06's decode kernels, the write as
    an indexed copy) on a tiny batch, float32: ``generate``'s tokens and logits. Slow in the
    interpreter, so two short requests.

    Catches: the engine's batch (offsets, lengths, tables) in a form the kernels read differently
    from the CPU references (a query_start_loc that does not start at 0...)."""
    work = {"i": (GAMMA, 3), "j": (SYSTEM[:18], 2)}
    expected = {rid: truth(p, n) for rid, (p, n) in work.items()}
    engine = new_engine(lab, model, backend="triton", max_num_batched_tokens=64, keep_logits=True)
    drive(engine, work, max_steps=12)  # 4 steps suffice: an engine that never finishes fails in seconds, not minutes
    assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
    for rid, (_, logits) in expected.items():
        diff = (torch.stack(engine.requests[rid].logits) - logits).abs().max().item()
        assert diff <= LOGIT_ATOL, f"request {rid!r}: logits differ by {diff:.3g}"


@pytest.mark.gpu
def test_gpu_kernels_match_generate(lab, truth):
    """On a GPU, float32: the Triton kernels behind the whole workload and the crowd give ``generate``'s
    tokens (computed on the CPU twin), and logits within 1e-3 (cuBLAS and the kernels order their float32
    sums differently again; no TF32: full-precision dots)."""
    gpu_model = make_model(device="cuda")
    for work, settings in ((WORKLOAD, {}), (CROWD, {"num_gpu_blocks": 8, "max_num_batched_tokens": 64})):
        expected = {rid: truth(p, n) for rid, (p, n) in work.items()}
        engine = new_engine(lab, gpu_model, keep_logits=True, **settings)
        assert engine.runner.backend == "triton", f"on a GPU the runner's backend is {engine.runner.backend!r}"
        drive(engine, work)
        assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
        for rid, (_, logits) in expected.items():
            diff = (torch.stack(engine.requests[rid].logits).cpu() - logits).abs().max().item()
            assert diff <= 1e-3, f"request {rid!r}: logits differ by {diff:.3g}"
        assert_pool_whole(engine)


@pytest.mark.gpu
def test_gpu_cuda_graphs_match_generate(lab, truth):
    """On a GPU, float32, decode-only steps replayed from CUDA graphs captured for batches of 1, 2 and 4
    (a batch of 3 replays the graph of 4, its padding row writing into the null block and reading
    nothing), those of 5 to 8 sequences, wider than the largest graph, run eagerly: ``generate``'s
    tokens, logits within 1e-3, and exactly the decode-only steps of at most 4 sequences replayed."""
    gpu_model = make_model(device="cuda")
    work = {**WORKLOAD, **CROWD}
    expected = {rid: truth(p, n) for rid, (p, n) in work.items()}
    engine = new_engine(lab, gpu_model, num_gpu_blocks=128, max_num_batched_tokens=256, keep_logits=True)
    engine.runner.capture_decode_graphs([1, 2, 4])
    records = drive(engine, work)
    decodes = [r.inputs.num_seqs for r in records if r.inputs is not None and r.inputs.num_tokens == r.inputs.num_seqs]
    assert any(n > 4 for n in decodes), f"no decode-only step wider than the largest graph ran: {decodes}"
    replayable = sum(1 for n in decodes if n <= 4)
    assert engine.runner.num_graph_replays == replayable, \
        f"{engine.runner.num_graph_replays} steps replayed a graph, expected the {replayable} decode-only steps " \
        f"of at most 4 sequences (decode-only steps of {decodes} sequences)"
    assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
    for rid, (_, logits) in expected.items():
        diff = (torch.stack(engine.requests[rid].logits).cpu() - logits).abs().max().item()
        assert diff <= 1e-3, f"request {rid!r}: logits differ by {diff:.3g}"
    assert_pool_whole(engine)


@pytest.mark.gpu
def test_gpu_graph_padding_writes_only_the_null_block(lab, truth):
    """On a GPU, one request's decode steps replayed from the graph of 2 sequences (one padding row):
    each replay writes the request's new key and value in its own slot, the padding row's only in the
    null block (block 0, which no table reads), and no other row of any cache changes; the tokens are
    ``generate``'s.

    Catches: the graph's padding rows given the slot -1 (tensor indexing takes it for the cache's last
    row: another block's key and value overwritten), a replay that never copies the step's slots in."""
    expected = truth(GAMMA, 3)[0]
    engine = new_engine(lab, make_model(device="cuda"), num_gpu_blocks=8)
    engine.runner.capture_decode_graphs([2])
    engine.add_request("x", GAMMA, 3)
    engine.step()  # GAMMA's 9 tokens: a prefill, run eagerly
    for step in (1, 2):
        before = [cache.clone() for pair in engine.runner.kv_caches for cache in pair]
        engine.step()
        assert engine.runner.num_graph_replays == step, f"step {step}, a decode of one sequence: no graph replayed"
        slots = set(engine.last_inputs.slot_mapping)
        allowed = slots | set(range(BS))  # the request's new row, and the null block's rows
        for i, (old, new) in enumerate(zip(before, (c for pair in engine.runner.kv_caches for c in pair),
                                           strict=True)):
            changed = set((old != new).reshape(old.shape[0] * old.shape[1], -1).any(-1).nonzero()[:, 0].tolist())
            what = f"step {step}, layer {i // 2}'s {'values' if i % 2 else 'keys'}"
            assert slots <= changed, f"{what}: the request's slots {sorted(slots)} not written (rows {sorted(changed)})"
            assert changed <= allowed, f"{what}: rows {sorted(changed - allowed)} written outside the request's " \
                                       f"slots {sorted(slots)} and the null block (a padding row's slot?)"
    assert list(engine.requests["x"].output_token_ids) == expected, \
        f"the engine generated {list(engine.requests['x'].output_token_ids)}, generate {expected}"


# --------------------------------------------------------------------------------------------
# The given half of the engine, where the lab's mutants showed no test reached it: generate, the
# settings and their defaults, add_request at its edges, the runner's backends, build_model
# --------------------------------------------------------------------------------------------


def test_generate_serves_each_prompt_to_its_end(lab, model, truth):
    """``Engine.generate`` queues every prompt and steps until nothing is left: ``max_new_tokens`` per
    request (a dict) or one for all (16 by default) give ``generate``'s tokens; ``num_steps`` counts the
    steps (5 here: both prompts in step 0, then g2's 4 decodes), ``last_inputs`` is the last step's
    batch (g2 alone, position 23), and ``max_steps`` stops a run that needs more steps with a
    RuntimeError, not one that needs exactly that many.

    Catches: the given ``generate`` not queueing, not stepping or not returning; a step counter that
    does not count; a run stopped one step early."""
    work = {"g1": (GAMMA, 3), "g2": (SYSTEM[:20], 5)}
    expected = expected_outputs(truth, work)
    prompts, limits = {rid: p for rid, (p, _) in work.items()}, {rid: n for rid, (_, n) in work.items()}
    engine = new_engine(lab, model, max_num_batched_tokens=64)
    got = engine.generate(prompts, limits, max_steps=5)
    assert got == expected, f"generate({list(prompts)}, {limits}): {got}, expected {expected}"
    assert engine.num_steps == 5, f"num_steps after the run: {engine.num_steps}, expected 5 (1 prefill, 4 decodes)"
    last = engine.last_inputs
    assert last is not None and list(last.positions) == [23], (
        f"last_inputs after the run: positions {None if last is None else list(last.positions)}, expected [23] "
        f"(g2's last decode: 20 prompt tokens + 4 outputs - 1)")
    with pytest.raises(RuntimeError, match="4 steps"):
        new_engine(lab, model, max_num_batched_tokens=64).generate(prompts, limits, max_steps=4)
        pytest.fail("generate(..., max_steps=4) of a run that needs 5 steps: no RuntimeError")
    default = new_engine(lab, model, max_num_batched_tokens=64).generate({"d": GAMMA})
    assert default == {"d": truth(GAMMA, 16)[0]}, "generate({'d': GAMMA}): 16 new tokens by default"
    # max_steps counts the engine's steps, 100,000 by default: one step left runs, none left raises.
    engine = new_engine(lab, model)
    engine.num_steps = 99_999
    engine.generate({"z": ALPHA}, 1)
    engine.num_steps = 100_000
    with pytest.raises(RuntimeError, match="100000 steps"):
        engine.generate({"z2": ALPHA}, 1)
        pytest.fail("generate with 100,000 steps behind it: no RuntimeError (max_steps is 100,000 by default)")


def test_generate_refuses_a_bad_batch_and_queues_none_of_it(lab, model, truth):
    """``Engine.generate`` refuses, with a ValueError naming the argument, prompts given as a list (the
    docstring asks for a dict by request id), a batch with a prompt that ``add_request`` refuses (an empty
    one, after a good one) and a ``max_new_tokens`` dict without a limit for one of the prompts; none
    queues any request. The good prompts then run as usual: ``generate``'s tokens.

    Catches: a list of prompts taken without a check (an AttributeError on ``.items()`` from deep inside),
    a dict's missing limit looked up as it comes (a KeyError once the prompts before it are queued), and
    prompts queued one by one and left queued when a later one is refused (the caller's retry of the
    batch then fails on ids already taken)."""
    work = {"g1": (GAMMA, 2), "g2": (SYSTEM[:20], 3)}
    prompts, limits = {rid: p for rid, (p, _) in work.items()}, {rid: n for rid, (_, n) in work.items()}
    expected = expected_outputs(truth, work)
    engine = new_engine(lab, model)
    bad = [
        ("a list of the two prompts", (list(prompts.values()), 2), "prompts"),
        ("g1, g2 and an empty prompt", ({**prompts, "empty": []}, 2), "prompt_token_ids"),
        ("g1, g2 with max_new_tokens={'g1': 2}", (prompts, {"g1": 2}), "max_new_tokens"),
        ("g1, g2 with max_new_tokens 0 for g2", (prompts, {**limits, "g2": 0}), "max_new_tokens"),
    ]
    for what, args, word in bad:
        with pytest.raises(ValueError, match=word):
            engine.generate(*args)
            pytest.fail(f"generate of {what}: no ValueError naming {word}")
        queued = (list(engine.requests), [r.request_id for r in engine.waiting])
        assert queued == ([], []), (f"generate of {what} raised a ValueError but left the requests {queued[0]} "
                                    f"(waiting: {queued[1]}): a refused batch queues none of its prompts")
    got = engine.generate(prompts, limits)
    assert got == expected, f"generate({list(prompts)}, {limits}) after the refused batches: {got}, expected {expected}"


def test_add_request_accepts_and_refuses_at_its_edges(lab, model, truth):
    """``add_request`` returns the queued request (16 new tokens by default), accepts a request at each
    edge (token ids 0 and vocab_size - 1; prompt + max_new_tokens = max_model_len; a request whose
    cached tokens fill the pool to its last block) and refuses one past it, naming why; a negative
    token id is refused wherever it is. The accepted requests are then served.

    Catches: bounds off by one (``>=`` for ``>``), the blocks a request needs counted with its last
    output token (whose K/V is never written) or without its last prompt token, the null block counted
    as usable or twice, the token check run on the largest id only."""
    engine = new_engine(lab, model, num_gpu_blocks=17)  # 16 usable blocks of 16: 256 tokens
    request = engine.add_request("default", [5, 6, 7])
    assert request is engine.requests["default"] and request.max_new_tokens == 16, (
        f"add_request('default', [5, 6, 7]) returned {request!r}: the queued Request, with 16 new tokens by default")
    engine.add_request("ids", [0, VOCAB - 1], 1)
    engine.add_request("model-edge", [3] * (MAX_MODEL_LEN - 6), 6)  # 256 = max_model_len; 255 tokens: 16 blocks
    for args, word in [(("past-model", [3] * (MAX_MODEL_LEN - 6), 7), "max_model_len"),
                       (("negative", [5, -1], 1), "prompt_token_ids")]:
        with pytest.raises(ValueError, match=word):
            engine.add_request(*args)
            pytest.fail(f"add_request{args[:1]}: no ValueError naming {word}")
    small = new_engine(lab, model, num_gpu_blocks=8)  # 7 usable blocks: 112 tokens
    small.add_request("pool-edge", [4] * 100, 13)  # 112 tokens cached (the last output's K/V is never written)
    with pytest.raises(ValueError, match="blocks"):
        small.add_request("past-pool", [4] * 100, 14)
        pytest.fail("add_request of 100 + 14 tokens (113 cached: 8 blocks of 16) in a pool of 7: no ValueError")
    drive(engine, max_steps=400)
    assert_tokens_equal(engine, {"ids": truth([0, VOCAB - 1], 1)[0]})


def test_numpy_integers_are_integers_and_a_bool_is_no_token_id(lab, model, truth):
    """Settings, token ids and ``max_new_tokens`` read out of numpy arrays are ints, as the signatures
    mean them: an engine built with numpy settings holds them as Python ints, and a prompt of np.int64
    token ids with an np.int32 limit gets ``generate``'s tokens. ``True`` in a prompt is refused,
    naming prompt_token_ids: Python counts it as 1, but a bool among token ids is a slip (a mask
    passed for the ids), never the token 1.

    Catches: a token check that takes whatever ``__index__`` takes (``bool_taken_as_token_1``), and
    the settings and limits checked as Python ints only (``settings_checked_as_python_ints``), which
    refuses a numpy integer with a ValueError about a valid value."""
    prompt, n = WORKLOAD["c"]
    expected = truth(prompt, n)[0]  # the truth first, before any engine runs
    try:
        engine = lab.Engine(model, num_gpu_blocks=np.int64(64), block_size=np.int64(BS), max_num_seqs=np.int32(8),
                            max_num_batched_tokens=np.int64(24))
    except ValueError as err:
        raise AssertionError(f"Engine with numpy integer settings was refused: {err} (numpy integers are "
                             "integers)") from None
    got = (engine.block_size, engine.max_num_seqs, engine.max_num_batched_tokens)
    assert got == (BS, 8, 24) and all(type(v) is int for v in got), (
        f"Engine(block_size=np.int64({BS}), max_num_seqs=np.int32(8), max_num_batched_tokens=np.int64(24)) holds "
        f"{got!r}, expected the Python ints ({BS}, 8, 24)")
    with pytest.raises(ValueError, match="prompt_token_ids"):
        engine.add_request("bool", [5, True, 7], 2)
        pytest.fail("add_request('bool', [5, True, 7], 2): no ValueError naming prompt_token_ids (True is no "
                    "token id)")
    assert not engine.waiting and "bool" not in engine.requests, "a refused request was queued"
    try:
        engine.add_request("numpy", np.asarray(prompt, dtype=np.int64), np.int32(n))
    except ValueError as err:
        raise AssertionError(f"add_request with np.int64 token ids and max_new_tokens=np.int32({n}) was refused: "
                             f"{err} (numpy integers are integers)") from None
    drive(engine)
    assert_tokens_equal(engine, {"numpy": expected})


def test_engine_settings_their_defaults_and_bad_values(lab, model, truth):
    """An engine built with ``num_gpu_blocks`` alone has the signature's defaults (blocks of 16, 8
    sequences, 64 tokens a step, prefix caching on, logits not kept, no step and no last batch yet;
    CUDA graphs refused without a GPU) and serves a request; a
    ``Request`` made without them has 16 new tokens to go, -1 cached tokens and status WAITING. Each
    setting is refused one below its smallest value, and accepted at it; block sizes that are not a
    power of two >= 16 and a float64 model on the reference backend are refused, naming the argument;
    on the Triton backend a float64 model gets float64 caches, one pair per layer.

    Catches: a default changed; a bound off by one; the checks joined with ``and`` (a value refused
    only when every condition fails)."""
    engine = lab.Engine(model, num_gpu_blocks=4)
    got = (engine.block_size, engine.max_num_seqs, engine.max_num_batched_tokens,
           engine.kv_manager.enable_caching, engine.keep_logits)
    assert got == (16, 8, 64, True, False), (
        f"Engine(model, num_gpu_blocks=4): (block_size, max_num_seqs, max_num_batched_tokens, prefix caching, "
        f"keep_logits) = {got}, expected the signature's defaults (16, 8, 64, True, False)")
    assert (engine.num_steps, engine.last_inputs) == (0, None), "a new engine: no step yet, no last batch"
    if triton_env.device() != "cuda":
        with pytest.raises(ValueError, match="CUDA graphs"):
            engine.runner.capture_decode_graphs([1])
            pytest.fail("capture_decode_graphs on a CPU runner: no ValueError (graphs need a CUDA device)")
    assert engine.generate({"x": ALPHA}, 2) == {"x": truth(ALPHA, 2)[0]}
    request = lab.Request("r", [1, 2])
    got = (request.max_new_tokens, request.num_cached_tokens, request.status.name, request.num_preemptions)
    assert got == (16, -1, "WAITING", 0), f"Request('r', [1, 2]): {got}, expected (16, -1, 'WAITING', 0)"
    for name, low in (("num_gpu_blocks", 2), ("max_num_seqs", 1), ("max_num_batched_tokens", 1)):
        settings = {"num_gpu_blocks": 4, name: low}
        lab.Engine(model, **settings)  # the smallest valid value
        with pytest.raises(ValueError, match=name):
            lab.Engine(model, **{**settings, name: low - 1})
            pytest.fail(f"Engine({name}={low - 1}): no ValueError naming {name}")
    lab.Engine(model, num_gpu_blocks=4, block_size=32)
    for block_size in (8, 48, True):
        with pytest.raises(ValueError, match="block_size"):
            lab.Engine(model, num_gpu_blocks=4, block_size=block_size)
            pytest.fail(f"Engine(block_size={block_size!r}): no ValueError naming block_size")
    wide = make_model(dtype=torch.float64)
    with pytest.raises(ValueError, match="float32"):
        lab.Engine(wide, num_gpu_blocks=4, backend="reference")
        pytest.fail("Engine(a float64 model, backend='reference'): no ValueError (the reference runs float32 only)")
    caches = lab.Engine(wide, num_gpu_blocks=4, backend="triton").runner.kv_caches
    assert len(caches) == 2 and caches[0][0].dtype == caches[0][1].dtype == torch.float64, (
        f"the runner of a float64 model: {len(caches)} layers of caches in {caches[0][0].dtype}, expected 2 in "
        f"float64 (the model's dtype)")


def test_a_model_whose_head_dim_is_not_hidden_size_over_heads(lab, truth):
    """A model with head_dim 32 while hidden_size / num_attention_heads is 16: the runner's caches take
    the config's head_dim, and the engine gives ``generate``'s tokens.

    Catches: head_dim taken from hidden_size / num_attention_heads when the config names its own."""
    wide = model_truth.make_model({**CONFIG, "head_dim": 32}, 3)
    wide_truth = model_truth.greedy_truth(wide, LOGIT_ATOL)
    engine = new_engine(lab, wide)
    assert engine.runner.kv_caches[0][0].shape[-1] == 32, "the runner's caches: head_dim 32, from the config"
    work = {"w": (BETA, 4)}
    drive(engine, work)
    assert_tokens_equal(engine, {"w": wide_truth(BETA, 4)[0]})


@pytest.mark.ungraded  # it checks the given attention's guard
def test_the_engines_model_refuses_a_generate_of_its_own(lab, model, truth):
    """Once an engine has taken the model over, its attention runs inside the runner only:
    ``model.generate`` raises a RuntimeError that says so (and how to switch back), instead of failing
    deep inside the attention on a missing argument. The engine itself still serves.

    Catches: the given attention's guard on its metadata removed."""
    engine = new_engine(lab, model)
    with pytest.raises(RuntimeError, match="execute_model"):
        model.generate(torch.tensor([ALPHA]), max_new_tokens=1, do_sample=False)
        pytest.fail("model.generate on the engine's model: no RuntimeError")
    assert engine.generate({"x": ALPHA}, 2) == {"x": truth(ALPHA, 2)[0]}


def after_a_first_step(engine, first):
    """``engine`` with request ``x`` (GAMMA, 3 new tokens) served one step: its 9 prompt tokens in one
    chunk, and ``first``, generate's first token, checked. The step a broken step comes after."""
    engine.add_request("x", GAMMA, 3)
    engine.step()
    assert list(engine.requests["x"].output_token_ids) == first, \
        f"step 0: output {list(engine.requests['x'].output_token_ids)}, generate's first token {first}"
    return engine


@pytest.mark.ungraded  # it checks the given step's check, on a subclass of the engine
def test_a_batch_that_is_not_a_step_inputs_stops_the_step(lab, model, truth):
    """The given ``step`` checks what ``prepare_inputs`` returns before anything reads it: a batch handed
    back as a dict of its fields (not a ``StepInputs``) stops the step with an ``EngineStateError`` that
    names the step, ``prepare_inputs`` and the type it returned. The step before it served as usual.

    Catches: the given check of the batch's type removed (the check then reads ``inputs.input_ids`` of a
    dict: an AttributeError that names neither the step nor ``prepare_inputs``)."""
    first = truth(GAMMA, 1)[0]

    class Engine(lab.Engine):
        def prepare_inputs(self, scheduler_output):
            inputs = super().prepare_inputs(scheduler_output)
            return vars(inputs) if self.num_steps == 1 else inputs

    engine = after_a_first_step(Engine(model, num_gpu_blocks=64, block_size=BS, max_num_seqs=8,
                                       max_num_batched_tokens=24), first)
    with pytest.raises(lab.EngineStateError, match="step 1, after prepare_inputs: prepare_inputs returned dict"):
        engine.step()
        pytest.fail("prepare_inputs returned a dict: no EngineStateError")


def test_requests_finished_in_one_step_free_their_blocks_in_batch_order(lab, model):
    """Two requests that finish in the same step give their blocks back in the step's batch order, each
    table from its last block to its first (lab 02-05's ``free``), as vLLM's ``update_from_output`` frees
    each stopped request when its loop over the batch reaches it. The order is observable: the pool's
    free queue follows it, and a request that comes next in a full pool gets its block ids from the
    queue's head. A pool of 4 usable blocks; ``a`` and ``b`` (16 prompt tokens each, 2 new tokens) take
    them all and finish in step 1; then ``c`` (48 tokens) gets the first 3 of ``a``'s blocks reversed
    followed by ``b``'s reversed.

    Catches: the finished requests freed in the reverse of the batch's order (a loop that removes them
    from ``running`` back to front), or in the order of a set."""
    engine = new_engine(lab, model, num_gpu_blocks=5, max_num_batched_tokens=64)
    engine.add_request("a", [3] * BS, 2)
    engine.add_request("b", [4] * BS, 2)
    engine.step()  # both prompts, one block each: their first tokens
    output = engine.step()  # both decode into a second block, and finish
    batch = [r.request_id for r in output.scheduled_requests]
    tables = [list(map(int, table)) for table in engine.last_inputs.block_tables]
    assert sorted(engine.finished) == ["a", "b"], f"after step 1: finished {sorted(engine.finished)}, expected a and b"
    freed = [block for table in tables for block in reversed(table)]  # the free queue, head first
    engine.add_request("c", [6] * (3 * BS), 2)
    engine.step()  # c's prompt: 3 blocks from the head of the free queue
    got = engine.kv_manager.get_block_ids("c")
    assert got == freed[:3], (
        f"c got the blocks {got}; the step that finished {batch} (tables {tables}, in batch order) should have "
        f"freed them as {freed}, each request in batch order and each table last block first, so c takes "
        f"{freed[:3]}")


@pytest.mark.ungraded  # it checks the given step's check, on a subclass of the engine
def test_a_schedule_that_leaves_a_request_in_two_queues_stops_the_step(lab, model, truth):
    """The given ``step`` checks the queues right after ``schedule``, before the batch is built: a schedule
    that leaves the running request in the waiting queue too stops the step with an ``EngineStateError``
    that names the step, the phase (after schedule) and the request. The step before it served as usual.

    Catches: the queues checked only after ``update_from_output`` (the step then builds the batch, runs
    the model and updates the request before the error, which names the wrong phase)."""
    first = truth(GAMMA, 1)[0]

    class Engine(lab.Engine):
        def schedule(self):
            output = super().schedule()
            if self.num_steps == 1:
                self.waiting.append(self.running[0])  # the running request, queued twice
            return output

    engine = after_a_first_step(Engine(model, num_gpu_blocks=64, block_size=BS, max_num_seqs=8,
                                       max_num_batched_tokens=24), first)
    with pytest.raises(lab.EngineStateError, match="step 1, after schedule: request 'x' is in waiting"):
        engine.step()
        pytest.fail("a schedule that left 'x' running and waiting: no EngineStateError")


@pytest.mark.ungraded  # it checks the given runner's input check
def test_the_runner_refuses_a_batch_that_cannot_run(lab, model, truth):
    """The given ``execute_model`` checks its ``StepInputs`` before the model runs (``check_step_inputs``):
    a one-token batch built by hand gives ``generate``'s logits, and each inconsistent variant of it,
    and an empty batch, raises a ValueError naming what is wrong. The engine serves first.

    Catches: the given check's empty-batch branch removed (an empty ``StepInputs`` then fails in
    ``min()`` of no slot, a ValueError that names nothing of the batch)."""
    expected = truth(ALPHA, 2)[0]
    _, first = truth(ALPHA[:1], 1)  # the logits after ALPHA's first token alone, at position 0
    engine = new_engine(lab, model)
    assert engine.generate({"x": ALPHA}, 2) == {"x": expected}
    base = dict(input_ids=ALPHA[:1], positions=[0], slot_mapping=[BS], block_tables=[[1]], query_start_loc=[0, 1],
                seq_lens=[1], logits_indices=[0])  # block 1's first row: the engine has finished, nothing is held
    logits = engine.runner.execute_model(lab.StepInputs(**base))
    diff = (logits - first).abs().max().item()
    assert logits.shape == (1, VOCAB) and diff <= LOGIT_ATOL, \
        f"a one-token batch by hand: logits {tuple(logits.shape)} differing by {diff:.3g} from generate's"
    bad = [
        ({key: [] if key != "query_start_loc" else [0] for key in base}, "empty batch"),
        ({"positions": []}, "positions"),
        ({"query_start_loc": [0, 2]}, "query_start_loc"),
        ({"seq_lens": [BS + 1]}, "seq_lens"),
        ({"slot_mapping": [engine.runner.num_blocks * BS]}, "slot_mapping"),
        ({"logits_indices": [1]}, "logits_indices"),
    ]
    for change, word in bad:
        with pytest.raises(ValueError, match=word):
            engine.runner.execute_model(lab.StepInputs(**{**base, **change}))
            pytest.fail(f"execute_model of a batch with {change}: no ValueError naming {word!r}")


@pytest.mark.ungraded  # it checks the given tiny_config and build_model
def test_build_model_is_seeded_and_leaves_the_random_state(lab):
    """The given ``tiny_config`` and ``build_model``, which the demos and the benchmark serve: two
    layers, head_dim 16, grouped-query heads, no special token, 256 positions (not transformers' 2048),
    weights wider than transformers' 0.02,
    under a million parameters, and ``overrides`` applied; the same seed gives the same weights
    (another seed others; seed 0 by default), in float32 by default or the dtype asked, in eval mode,
    without touching the global random state. The engine serves the model built.

    Catches: a config that ignores its overrides or leaves out its 256 positions, an unseeded model (the
    demos' tokens change every run), a model left in training mode or in another dtype, a global random
    state consumed."""
    config = lab.tiny_config()
    got = (config.num_hidden_layers, config.head_dim, config.num_key_value_heads < config.num_attention_heads,
           config.bos_token_id, config.eos_token_id, config.pad_token_id, config.max_position_embeddings)
    assert got == (2, 16, True, None, None, None, 256), \
        f"tiny_config(): {got}, expected (layers, head_dim, grouped-query, bos, eos, pad, max_model_len) " \
        f"(2, 16, True, None, None, None, 256)"
    assert lab.tiny_config(vocab_size=300).vocab_size == 300, "tiny_config(vocab_size=300) ignores the override"
    assert config.initializer_range > 0.02, "tiny_config: weights drawn wider than transformers' default 0.02"
    state = torch.random.get_rng_state()
    a, b, c = (lab.build_model(config, seed=s) for s in (3, 3, 4))
    assert torch.equal(torch.random.get_rng_state(), state), "build_model changed the global random state"
    wa, wb, wc = (next(m.parameters()).detach() for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc), "build_model: seed 3 twice must agree, seed 4 differ"
    assert wa.dtype == torch.float32 and not a.training, f"build_model: {wa.dtype}, training={a.training}"
    d = lab.build_model(config, seed=3, dtype=torch.float64)
    assert next(d.parameters()).dtype == torch.float64, "build_model(dtype=torch.float64): not float64"
    default, zero = (next(m.parameters()) for m in (lab.build_model(config), lab.build_model(config, seed=0)))
    assert torch.equal(default, zero), "build_model(config) must be build_model(config, seed=0)"
    size = sum(p.numel() for p in a.parameters())
    assert size < 1_000_000, f"the tiny model has {size:,} parameters: small enough for a CPU test means well under 1M"
    engine = lab.Engine(a, num_gpu_blocks=8)
    twin = model_truth.greedy_truth(a, LOGIT_ATOL)
    assert engine.generate({"x": [1, 2, 3]}, 3) == {"x": twin([1, 2, 3], 3)[0]}


@pytest.mark.skipif(triton_env.device() == "cuda", reason="with a GPU, Triton runs no interpreter: the kernels run "
                    "for real in test_gpu_kernels_match_generate")
def test_triton_kernels_on_a_batch_of_decodes_and_a_prefill(lab, model, truth):
    """The runner's Triton backend through the interpreter on a step that holds both kinds of
    sequence: "i" decodes while "k", arriving a step later, prefills. The decode kernel takes the
    leading one-token sequences, the prefill kernel the rest: ``generate``'s tokens and logits.

    Catches: the split between the two kernels off by one (a decode row given to the prefill kernel or
    the other way round), the prefill kernel called without the batch's longest chunk."""
    work = {"i": (GAMMA, 3)}
    late = {1: {"k": (SYSTEM[:18], 2)}}
    expected = {rid: truth(p, n) for rid, (p, n) in {**work, **late[1]}.items()}
    engine = new_engine(lab, model, backend="triton", max_num_batched_tokens=64, keep_logits=True)
    records = drive(engine, work, arrivals=late, max_steps=12)
    mixed = records[1].output.num_scheduled_tokens
    assert mixed == {"i": 1, "k": 18}, f"step 1 should hold i's decode and k's prefill (a test bug): {mixed}"
    assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
    for rid, (_, logits) in expected.items():
        diff = (torch.stack(engine.requests[rid].logits) - logits).abs().max().item()
        assert diff <= LOGIT_ATOL, f"request {rid!r}: logits differ by {diff:.3g}"
