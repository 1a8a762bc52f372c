"""Lab 99-02: lab 99-01's engine at GPU speed, checked against transformers' ``generate`` and lab 99-01.

Three kinds of truth, each computed before the code under test runs:

- transformers' own ``model.generate`` (greedy, eager attention, its dense cache), one request at a
  time, on a twin of the model: the tokens, one for one, and the logits within ``LOGIT_ATOL``;
- lab 99-01's reference engine on the same requests: the same tokens, a busy run with late arrivals,
  shared prefixes and preemptions;
- brute force in the test: the persistent batch rebuilt from the schedule, each step's inputs
  recomputed token by token from the requests and the KV-cache manager's tables, block hashes from
  lab 02-01's reference ``hash_request_tokens``.

The model is built here from a config with random weights (nothing downloaded), float32 on the CPU,
two layers. On a CPU the device's work runs through ``_device.Stream`` under both timings a GPU may
show: ``lazy`` (as late as possible: a token read before its step ran, or a host buffer rewritten
before its copy ran, shows as wrong tokens) and ``eager`` (at once). The KV caches start full of NaN:
a row read before it was written shows in the logits.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

import numpy as np
import pytest

import labkit
from labkit import triton_env
from labkit.testing import model_truth

torch, triton = triton_env.require_torch_and_triton()
# transformers 5 (tested: 5.17, 5.24): the model's modules, generate for the truth.
transformers = pytest.importorskip("transformers", minversion="5.0",
                                   reason='needs transformers >= 5: pip install -e ".[model]"')

pytestmark = pytest.mark.triton

BS = 16  # tokens per block: the smallest the decode kernels take
# A Llama-shaped model: 2 layers, 4 query heads sharing 2 KV heads, head_dim 16, no special token. Weights
# drawn wider than the default 0.02 so that a wrong key, position or slot changes the next token.
CONFIG = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=256, initializer_range=0.1,
    bos_token_id=None, eos_token_id=None, pad_token_id=None, tie_word_embeddings=False,
)
MAX_MODEL_LEN = CONFIG["max_position_embeddings"]
VOCAB = CONFIG["vocab_size"]
# Graph sizes for the tests: full graphs of 1 to 8 rows, piecewise graphs up to 64 tokens.
SIZES = [1, 2, 4, 8, 16, 24, 32, 48, 64]

# Logits: the engine and generate run the same float32 weights and add in other orders (attention over
# a paged cache as batched float32 matrix products against transformers' float32 softmax; projections
# over batches of other shapes). Each logit ends ~10 float32 reductions of at most 256 terms of size ~3:
# a few units of 256 * 2**-24 * 3 ~ 5e-5 at worst, ~2e-6 measured. A wrong position, slot or length
# moves logits by 0.1 to 1.
LOGIT_ATOL = 1e-4


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
    return make_model()


@pytest.fixture(scope="module")
def truth(model):
    """``truth(prompt, n)``: (tokens, logits [n, vocab]) of ``generate`` on a dense twin of ``model``;
    a near-tie within ``2 * LOGIT_ATOL`` fails the truth itself."""
    return model_truth.greedy_truth(model, LOGIT_ATOL)


def prompts_of(seed: int, lengths) -> list[list[int]]:
    return model_truth.random_prompts(seed, lengths, VOCAB)


# Lab 99-01's workloads. A shared 40-token "system prompt" (two full blocks and a partial one).
SYSTEM, ALPHA, BETA, GAMMA, DELTA = prompts_of(1, (40, 6, 20, 9, 50))
WORKLOAD = {
    "a": (SYSTEM + ALPHA, 7),
    "b": (SYSTEM + BETA, 3),
    "c": (GAMMA, 12),
    "d": (SYSTEM[:33] + [7, 9], 1),
    "e": (DELTA, 5),
    "f": (SYSTEM + ALPHA, 4),  # the same prompt as "a"
}
# Six requests needing 20 blocks in all, for pools of 7 to 10.
CROWD = {f"r{i}": (p, n) for i, (p, n) in enumerate(zip(prompts_of(2, (30, 38, 31, 40, 33, 35)),
                                                          (20, 12, 16, 10, 18, 14), strict=True))}


def expected_outputs(truth, workload) -> dict[str, list[int]]:
    return {rid: truth(prompt, n)[0] for rid, (prompt, n) in workload.items()}


# --------------------------------------------------------------------------------------------
# Driving an engine step by step, recording what each step did
# --------------------------------------------------------------------------------------------


@dataclass
class StepRecord:
    step: int
    output: object  # the SchedulerOutput of the step scheduled by this call
    before: dict  # request id -> (num_computed_tokens, known token ids, outputs, status, placeholders)
    after: dict  # request id -> (status, num_computed_tokens, outputs, placeholders)
    tables_after: dict  # request id -> its block table in the KV-cache manager
    shared_after: set  # blocks held by more than one request
    waiting: list
    running: list
    finished: list
    rows: list  # the runner's rows after the step (its batch, in order)
    inputs: dict | None  # the host buffers of the step launched by this call (with record_inputs)
    pending: int  # device work launched and not yet run, after the call (CPU)
    in_flight: bool
    log: tuple | None  # (start, end): the entries of the stream's log this call added (with record_log)
    run_plan: tuple | None  # the launched step's RunPlan (mode, num_tokens, num_reqs)


def new_engine(lab, model, **settings):
    settings = {"num_gpu_blocks": 64, "block_size": BS, "max_num_seqs": 8, "max_num_batched_tokens": 24,
                "cudagraph_capture_sizes": SIZES, **settings}
    engine = lab.Engine(model, **settings)
    engine.runner.fill_kv_caches(float("nan"))  # a row read before it is written poisons the logits
    return engine


def host_inputs(b, num_tokens: int, num_reqs: int, num_gathers: int) -> dict:
    """A step's inputs as the host tensors of ``StepBuffers`` ``b`` hold them (what the copies send)."""
    return {
        "input_ids": b.input_ids.host[:num_tokens].tolist(),
        "positions": b.positions.host[:num_tokens].tolist(),
        "slot_mapping": b.slot_mapping.host[:num_tokens].tolist(),
        "query_start_loc": b.query_start_loc.host[: num_reqs + 1].tolist(),
        "seq_lens": b.seq_lens.host[:num_reqs].tolist(),
        "logits_indices": b.logits_indices.host[:num_reqs].tolist(),
        "gathers": sorted(zip(b.gather_dst.host[:num_gathers].tolist(), b.gather_src.host[:num_gathers].tolist(),
                              strict=True)),
    }


def drive(engine, workload=None, arrivals=None, max_steps=400, record_inputs=False,
          record_log=False) -> list[StepRecord]:
    """Add ``workload`` ({id: (prompt, n)}) now and ``arrivals`` ({call: workload}) before those calls of
    ``engine.step()``; call it until every request is finished (failing, instead of hanging, after
    ``max_steps`` calls). ``record_log``: note where each call's entries of the stream's log begin and
    end (:func:`log_length`)."""
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
        before = {rid: (r.num_computed_tokens, list(r.all_token_ids), len(r.output_token_ids), r.status.name,
                        r.num_output_placeholders) for rid, r in engine.requests.items()}
        log_start = log_length(engine.runner.stream) if record_log else None
        output = engine.step()
        runner, mgr = engine.runner, engine.kv_manager
        rows = list(runner.input_batch.req_ids)
        inputs, run_plan = None, None
        if output.num_scheduled_tokens:
            run_plan = (runner.last_plan.mode, runner.last_plan.num_tokens, runner.last_plan.num_reqs)
        if record_inputs and output.num_scheduled_tokens:
            shape = runner.last_shape
            inputs = host_inputs(runner.buffers, shape.num_tokens, shape.num_reqs, shape.num_gathers)
        records.append(StepRecord(
            step, output, before,
            {rid: (r.status.name, r.num_computed_tokens, len(r.output_token_ids), r.num_output_placeholders)
             for rid, r in engine.requests.items()},
            {rid: mgr.get_block_ids(rid) for rid in engine.requests},
            {b.block_id for b in mgr.block_pool.blocks if b.ref_cnt > 1},
            [r.request_id for r in engine.waiting], [r.request_id for r in engine.running], list(engine.finished),
            rows, inputs, runner.stream.num_pending, engine.in_flight is not None,
            (log_start, log_length(runner.stream)) if record_log else None, run_plan,
        ))
    return records


def log_length(stream) -> int:
    """The entries of the stream's log, one per launch and one per wait, from its counters: the log
    itself grows at every launch, and under ``labs grade`` each read of it copies it whole.
    :func:`launched_steps` checks that the two agree."""
    return stream.num_launched + stream.num_waits


def outputs(engine) -> dict[str, list[int]]:
    return {rid: list(r.output_token_ids) for rid, r in engine.requests.items()}


def assert_tokens_equal(engine, expected, what="generate"):
    got = outputs(engine)
    for rid in expected:
        assert got[rid] == expected[rid], f"request {rid!r}: the engine generated {got[rid]}, {what} {expected[rid]}"


def assert_pool_whole(engine):
    """Every block is back: free count = pool size - the null block; every ref count 0; no table left."""
    pool = engine.kv_manager.block_pool
    held = [b.block_id for b in pool.blocks if b.ref_cnt != 0 and not b.is_null]
    assert held == [], f"blocks still held after the last request finished: {held}"
    assert pool.get_num_free_blocks() == pool.num_gpu_blocks - 1, \
        f"{pool.get_num_free_blocks()} free blocks, expected {pool.num_gpu_blocks - 1}"
    tables = {rid: engine.kv_manager.get_block_ids(rid) for rid in engine.requests}
    assert all(t == [] for t in tables.values()), f"block tables left behind: {tables}"


@pytest.fixture(params=["lazy", "eager"])
def timing(request):
    """The CPU stream's timing (``_device.Stream``). Every test that reads what the device computed runs
    under both: ``lazy`` (device work runs only when the host waits for an event after it: a read
    before that wait sees the host tensors' -1 and NaN, a pinned buffer rewritten before its copy ran
    sends the new values) and ``eager`` (device work runs at its launch: a read of a live device buffer
    sees what later steps wrote there). On a GPU the device decides, and both runs are alike."""
    return request.param


def assert_logits_match(engine, expected: dict, atol: float = LOGIT_ATOL) -> None:
    """``expected``: request id -> ``generate``'s logits ``[n, vocab]``. Each request kept one row of logits
    per output token (``keep_logits``), each within ``atol`` of ``generate``'s."""
    __tracebackhide__ = True
    for rid, want in expected.items():
        got = list(engine.requests[rid].logits)
        if len(got) != len(want):
            why = (" With keep_logits on, update_from_output keeps model_output.logits[row] in request.logits "
                   "for every token it hands to a request (README step 4)." if not got else "")
            pytest.fail(f"request {rid!r}: {len(got)} rows of logits kept, expected one per output token "
                        f"({len(want)}).{why}")
        got = torch.stack(got).float().cpu()
        if not bool(torch.isfinite(got).all()):
            pytest.fail(f"request {rid!r}: its kept logits hold NaN or inf at output tokens "
                        f"{sorted(set(torch.nonzero(~torch.isfinite(got))[:, 0].tolist()))}: read before the step "
                        f"that computed them ran (the host tensor holds NaN until its copy ran)")
        diff = (got - want).abs().max().item()
        assert diff <= atol, f"request {rid!r}: logits differ from generate's by {diff:.3g} > {atol}"


# --------------------------------------------------------------------------------------------
# Step 1: the persistent batch, against a rebuild from scratch
# --------------------------------------------------------------------------------------------

# A small batch for the unit tests: rows of 120 tokens, not a multiple of the blocks' 16 (a row's table
# has 8 entries, which hold 128): a token's place in the token table and its block's place in the block
# table are computed with their own widths.
MAX_REQS, MAX_LEN, MAX_BLOCKS = 6, 120, 8


def new_batch(lab):
    return lab.InputBatch(MAX_REQS, MAX_LEN, MAX_BLOCKS, lab.Stream("cpu"))


def random_schedules(lab, seed: int, num_steps: int = 80):
    """Scheduler outputs as an engine sends them, with the rows each must leave behind.

    Requests arrive, run chunks of their prompts and decode, get blocks as they grow, are left out of a
    step now and then, finish, or are preempted (their blocks and progress gone; they come back as new
    requests with every token the host knows), sometimes in a step that schedules nothing (the runner
    never hears of it: their stale rows are still there when they come back). Yields
    ``(scheduler_output, expected)``, ``expected`` mapping each scheduled request to (the tokens its row
    must hold, its computed tokens, its whole block table, its tokens this step)."""
    rng = random.Random(seed)
    block_ids = iter(range(1, 10**6))
    live: dict[str, dict] = {}
    in_batch: set[str] = set()
    row_tokens: dict[str, list[int]] = {}  # what the runner was sent when the request got its row
    count = 0
    for _ in range(num_steps):
        while len(live) < MAX_REQS + 2 and rng.random() < 0.6:
            live[f"q{count}"] = {"tokens": [rng.randrange(VOCAB) for _ in range(rng.randint(1, 40))], "computed": 0,
                                 "blocks": []}
            count += 1
        preempted = {rid for rid in live if rid in in_batch and rng.random() < 0.06}
        for rid in preempted:
            live[rid].update(computed=0, blocks=[])
        if preempted and rng.random() < 0.3:  # a step that preempts and schedules nothing: no runner call
            in_batch -= preempted  # the runner keeps their rows; they come back as new requests
            continue
        candidates = [rid for rid in live if rid not in preempted]
        rng.shuffle(candidates)
        chosen = candidates[: rng.randint(1, min(MAX_REQS, len(candidates)))] if candidates else []
        if not chosen:
            continue
        num_scheduled, new_reqs, expected = {}, [], {}
        cached_ids, cached_blocks, cached_computed = [], [], []  # the columns of CachedRequestData
        for rid in chosen:
            req = live[rid]
            left = len(req["tokens"]) - req["computed"]
            n = 1 if left <= 0 else rng.randint(1, left)  # left 0: a decode of a token still on the device
            needed = -(-(req["computed"] + n) // BS)
            new_blocks = [next(block_ids) for _ in range(needed - len(req["blocks"]))]
            req["blocks"] = req["blocks"] + new_blocks
            num_scheduled[rid] = n
            if rid in in_batch:
                cached_ids.append(rid)
                cached_blocks.append(new_blocks)
                cached_computed.append(req["computed"])
            else:
                row_tokens[rid] = list(req["tokens"])
                new_reqs.append(lab.NewRequestData(rid, list(req["tokens"]), list(req["blocks"]), req["computed"]))
            expected[rid] = (row_tokens[rid], req["computed"], list(req["blocks"]), n)
        cached = lab.CachedRequestData(cached_ids, cached_blocks, cached_computed)
        yield lab.SchedulerOutput(num_scheduled_tokens=num_scheduled, scheduled_new_reqs=new_reqs,
                                  scheduled_cached_reqs=cached), expected
        in_batch = set(chosen)
        for rid in chosen:  # the step ran: chunks advance, a chunk at the end samples a token
            req = live[rid]
            req["computed"] += num_scheduled[rid]
            if req["computed"] >= len(req["tokens"]):
                req["tokens"].append(rng.randrange(VOCAB))
            if len(req["tokens"]) >= MAX_LEN - 1 or rng.random() < 0.03:
                del live[rid]  # finished


def batch_rows(batch) -> dict:
    """The batch as the test reads it: request id -> (row, tokens, computed, block table)."""
    req_ids = list(batch.req_ids)
    token_ids, num_tokens = batch.token_ids, batch.num_tokens
    computed, table = batch.num_computed_tokens, batch.block_table
    table_np, num_blocks = table.np, table.num_blocks
    return {rid: (row, token_ids[row, : num_tokens[row]].tolist(), int(computed[row]),
                  table_np[row, : num_blocks[row]].tolist()) for row, rid in enumerate(req_ids)}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_persistent_batch_matches_a_rebuild_on_random_schedules(lab, seed):
    """After each ``update_states`` of a random stream of schedules, the batch holds exactly the scheduled
    requests in rows ``0 .. num_reqs - 1`` with no hole, ``req_id_to_index`` agrees with ``req_ids``, each
    row has the tokens it was sent, the computed-token count sent this step and the whole block table
    (what it was sent plus every block appended since), and the one-token rows come first.

    Catches: a stale row after a finish or a preemption, a hole left by a removal, a condensed row whose
    block table (or token ids, or computed tokens) was not moved, new blocks written over the table
    instead of after it, a resumed request that keeps its old row, decodes behind a prefill chunk."""
    batch = new_batch(lab)
    for step, (scheduler_output, expected) in enumerate(random_schedules(lab, seed)):
        lab.update_states(batch, scheduler_output)
        where = f"step {step}"
        req_ids = list(batch.req_ids)
        assert batch.num_reqs == len(expected) and sorted(req_ids) == sorted(expected), \
            f"{where}: rows {req_ids} (num_reqs {batch.num_reqs}), scheduled {sorted(expected)}"
        index = dict(batch.req_id_to_index)
        assert index == {rid: row for row, rid in enumerate(req_ids)}, \
            f"{where}: req_id_to_index {index} disagrees with req_ids {req_ids}"
        rows = batch_rows(batch)
        for rid, (tokens, computed, blocks, _) in expected.items():
            row, got_tokens, got_computed, got_blocks = rows[rid]
            assert got_tokens == tokens, f"{where}: {rid!r} (row {row}) holds tokens {got_tokens}, sent {tokens}"
            assert got_computed == computed, \
                f"{where}: {rid!r} (row {row}) has {got_computed} computed tokens, sent {computed}"
            assert got_blocks == blocks, \
                f"{where}: {rid!r} (row {row}) has block table {got_blocks}, expected {blocks}"
        ones = [expected[rid][3] == 1 for rid in req_ids]
        assert ones == sorted(ones, reverse=True), \
            f"{where}: the one-token rows must come first, rows compute {[expected[r][3] for r in req_ids]} tokens"


def test_add_request_returns_the_row_it_fills(lab):
    """``InputBatch.add_request`` returns the row it gave the request, as its docstring says: rows 0, 1 and
    2 for the first three requests; then, with the second gone, its hole 1 for the next, and a new row 3
    after it.

    Catches: an ``add_request`` that fills the row and returns nothing."""
    want = [0, 1, 2, 1, 3]  # d takes b's hole (the lowest), e a new row at the end
    batch = new_batch(lab)
    got = [batch.add_request(rid, [1, 2, 3], [i + 1], 0) for i, rid in enumerate("abc")]
    batch.remove_request("b")
    got += [batch.add_request(rid, [4, 5], [i + 4], 0) for i, rid in enumerate("de")]
    assert got == want, f"add_request returned the rows {got}, expected {want} (d fills b's hole 1)"
    assert list(batch.req_ids) == ["a", "d", "c", "e"], f"rows {list(batch.req_ids)}, expected ['a', 'd', 'c', 'e']"


def test_remove_request_returns_the_row_it_empties(lab):
    """``InputBatch.remove_request`` returns the row it emptied, and None for a request without a row, as
    its docstring says: with ``a``, ``b``, ``c`` in rows 0, 1, 2, removing ``b`` gives 1, removing it again
    or removing an id never added gives None and changes nothing, removing ``c`` gives 2; ``a`` keeps row 0.

    Catches: a ``remove_request`` that fails (a KeyError) for a request without a row, or that empties the
    row and returns nothing."""
    batch = new_batch(lab)
    for i, rid in enumerate("abc"):
        batch.add_request(rid, [1, 2, 3], [i + 1], 0)
    calls = [("b", 1), ("b", None), ("never added", None), ("c", 2)]
    for rid, want in calls:
        try:
            got = batch.remove_request(rid)
        except NotImplementedError:
            raise
        except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
            pytest.fail(f"remove_request({rid!r}) raised {type(err).__name__}: {err}; expected {want!r} (the row it "
                        f"emptied, None for a request without a row)")
        assert got == want, f"remove_request({rid!r}) returned {got!r}, expected {want!r}"
    assert dict(batch.req_id_to_index) == {"a": 0} and batch.num_reqs == 1, \
        f"after removing b and c: req_id_to_index {dict(batch.req_id_to_index)}, expected {{'a': 0}}"


def test_rows_stay_put_when_nothing_changes(lab):
    """The batch persists: steps that only advance its requests move no row; one finish moves one row
    (the last, into the hole), never rebuilds the rest.

    Catches: an ``update_states`` that rebuilds the batch every step (sorting, or re-adding every request),
    a condense that shifts every row after a hole down by one."""
    batch = new_batch(lab)
    ids = ["a", "b", "c", "d", "e"]
    prompt = {rid: prompts_of(10 + i, [20])[0] for i, rid in enumerate(ids)}
    first = lab.SchedulerOutput(num_scheduled_tokens=dict.fromkeys(ids, 20),
                                scheduled_new_reqs=[lab.NewRequestData(rid, prompt[rid], [i + 1, i + 10], 0)
                                                    for i, rid in enumerate(ids)])
    lab.update_states(batch, first)
    rows = dict(batch.req_id_to_index)
    for step in range(3):  # decodes of the sampled tokens: nothing but the computed counts changes
        cached = lab.CachedRequestData(list(ids), [[] for _ in ids], [20 + step] * len(ids))
        lab.update_states(batch, lab.SchedulerOutput(num_scheduled_tokens=dict.fromkeys(ids, 1),
                                                     scheduled_cached_reqs=cached))
        assert dict(batch.req_id_to_index) == rows, f"decode step {step}: rows moved from {rows} to " \
                                                    f"{dict(batch.req_id_to_index)}"
    gone = batch.req_ids[1]
    left = [rid for rid in ids if rid != gone]
    cached = lab.CachedRequestData(list(left), [[] for _ in left], [23] * len(left))
    lab.update_states(batch, lab.SchedulerOutput(num_scheduled_tokens=dict.fromkeys(left, 1),
                                                 scheduled_cached_reqs=cached))
    now = dict(batch.req_id_to_index)
    assert batch.num_reqs == len(left) and sorted(now) == sorted(left), \
        f"after {gone!r} finished: {batch.num_reqs} rows indexed as {now}, expected {sorted(left)}"
    moved = {rid: (rows[rid], now[rid]) for rid in left if now[rid] != rows[rid]}
    last = max(rows, key=rows.get)
    assert moved == {last: (rows[last], 1)}, f"after {gone!r} (row 1) finished, rows moved {moved}; expected only " \
                                             f"the last row, {last!r}, into row 1"


# --------------------------------------------------------------------------------------------
# Step 2: the step's inputs, against a token-by-token brute force
# --------------------------------------------------------------------------------------------


def new_buffers(lab, model):
    """A runner's buffers: 128 tokens, ``MAX_REQS`` rows."""
    return new_engine(lab, model, max_num_seqs=MAX_REQS, max_num_batched_tokens=128).runner.buffers


def brute_force_inputs(rows, block_size: int = BS) -> dict:
    """``rows``: per row, (host tokens, computed tokens, tokens now, block table, row in the previous step).
    Every token's id (None: on the device), position and slot, the offsets, lengths, sampled rows, and
    the (flat index, previous row) of each input still on the device, one token at a time."""
    out = {"input_ids": [], "positions": [], "slot_mapping": [], "query_start_loc": [0], "seq_lens": [],
           "logits_indices": [], "gathers": []}
    for tokens, computed, n, table, prev in rows:
        for p in range(computed, computed + n):
            out["positions"].append(p)
            out["slot_mapping"].append(table[p // block_size] * block_size + p % block_size)
            out["input_ids"].append(tokens[p] if p < len(tokens) else None)
        if computed + n > len(tokens):
            out["gathers"].append((out["query_start_loc"][-1] + n - 1, prev))
        out["query_start_loc"].append(out["query_start_loc"][-1] + n)
        out["seq_lens"].append(computed + n)
        out["logits_indices"].append(out["query_start_loc"][-1] - 1)
    return out


def check_inputs(got: dict, want: dict, where: str) -> None:
    for name in ("positions", "slot_mapping", "query_start_loc", "seq_lens", "logits_indices", "gathers"):
        assert got[name] == want[name], f"{where}: {name} is {got[name]}, expected {want[name]}"
    ids = [(i, g) for i, (g, w) in enumerate(zip(got["input_ids"], want["input_ids"], strict=True))
           if w is not None and g != w]
    assert not ids, f"{where}: input_ids wrong at (flat index, got): {ids[:8]} (expected {want['input_ids']})"


@pytest.mark.parametrize("block_size", [16, 32])
def test_prepare_inputs_matches_brute_force(lab, model, block_size):
    """Two steps of a batch in rows of 120 tokens (not a multiple of the block size), blocks of 16 and of 32:
    prompt chunks (from 0 and from the middle, some ending their prompts), then the next step after two
    requests left (a new chunk takes one hole, in a reused row with stale tokens and block ids past its
    own; the last row moves into the other) and the one-token rows went first: a prompt's last token (its
    input on the host) and two decodes of the tokens the first step sampled (still on the device:
    gathered from the rows they had then). Every buffer against the brute force, read from the host
    tensors (what the copies send), and the ``StepShape``. Before the second ``prepare_inputs``, each row's
    ``prev_step_row`` is the row its request had in the first step, -1 for the new chunk's.

    Catches: positions restarting at 0, a slot from the logical block number, ``query_start_loc``,
    ``seq_lens`` or ``logits_indices`` off by one chunk, token ids from the wrong row (a row of the token
    table taken as wide as the block table's blocks, or the block table's row as wide as
    ``max_model_len // block_size``), a decode input read from the host (where the runner never wrote
    it), any one-token row taken for a decode, a gather from the row the request has now instead of the
    one it had, arrays written somewhere the copies do not read, a new row that keeps its last occupant's
    ``prev_step_row``."""
    batch, buffers = new_batch(lab), new_buffers(lab, model)
    t = {rid: prompts_of(20 + i, [n])[0] for i, (rid, n) in enumerate((("r0", 17), ("r1", 40), ("r2", 5),
                                                                      ("r3", 33), ("r4", 12), ("r5", 20)))}
    tables = {"r0": [7, 3], "r1": [9, 4, 11], "r2": [2], "r3": [6, 12, 5, 8], "r4": [13], "r5": [14, 15]}
    first = {"r0": (0, 16), "r1": (0, 16), "r2": (0, 5), "r3": (16, 17), "r5": (0, 20)}  # (computed, tokens now)
    lab.update_states(batch, lab.SchedulerOutput(
        num_scheduled_tokens={rid: n for rid, (_, n) in first.items()},
        scheduled_new_reqs=[lab.NewRequestData(rid, t[rid], tables[rid], c) for rid, (c, _) in first.items()]))
    rows_a = list(batch.req_ids)
    want = brute_force_inputs([(t[rid], *first[rid], tables[rid], None) for rid in rows_a], block_size)
    shape = lab.prepare_inputs(batch, np.array([first[rid][1] for rid in rows_a], dtype=np.int32), buffers,
                               block_size)
    got = host_inputs(buffers, 74, 5, 0)
    check_inputs(got, want, f"first step (blocks of {block_size})")
    assert (shape.num_tokens, shape.num_reqs, shape.num_decodes, shape.max_query_len, shape.num_gathers) == \
        (74, 5, 0, 20, 0), f"first step: {shape}"

    # Second step: r1 and r2 are gone (two holes: r4 takes one, the last row moves into the other); r0
    # computes its prompt's last token, r3 and r5 decode the token the first step sampled for them.
    second = {"r0": (16, 1), "r3": (33, 1), "r5": (20, 1), "r4": (0, 12)}
    cached = lab.CachedRequestData(["r0", "r3", "r5"], [[], [10], []], [16, 33, 20])
    tables["r3"] = tables["r3"] + [10]
    lab.update_states(batch, lab.SchedulerOutput(
        num_scheduled_tokens={rid: n for rid, (_, n) in second.items()}, scheduled_cached_reqs=cached,
        scheduled_new_reqs=[lab.NewRequestData("r4", t["r4"], tables["r4"], 0)]))
    rows_b = list(batch.req_ids)
    assert sorted(rows_b) == sorted(second), f"second step: rows {rows_b}"
    prev_rows = [rows_a.index(rid) if rid in rows_a else -1 for rid in rows_b]
    got_prev = batch.prev_step_row[: len(rows_b)].tolist()
    assert got_prev == prev_rows, f"second step: prev_step_row {got_prev} for rows {rows_b}, expected {prev_rows} " \
                                  f"(each row's row in the first step, {rows_a}; -1 for a request not in it)"
    want = brute_force_inputs([(t[rid], *second[rid], tables[rid], rows_a.index(rid) if rid in rows_a else None)
                               for rid in rows_b], block_size)
    shape = lab.prepare_inputs(batch, np.array([second[rid][1] for rid in rows_b], dtype=np.int32), buffers,
                               block_size)
    got = host_inputs(buffers, 15, 4, shape.num_gathers)
    check_inputs(got, want, f"second step (rows {rows_b}, rows of the first step {rows_a}, blocks of {block_size})")
    assert (shape.num_tokens, shape.num_reqs, shape.num_decodes, shape.max_query_len, shape.num_gathers) == \
        (15, 4, 3, 12, 2), f"second step: {shape}"
    for name in ("input_ids", "positions", "slot_mapping", "logits_indices", "gather_dst", "gather_src"):
        dtype = getattr(buffers, name).host.dtype
        assert dtype == torch.int64, f"buffers.{name} became {dtype}"


# --------------------------------------------------------------------------------------------
# Step 3: graphs for every step
# --------------------------------------------------------------------------------------------


def test_choose_graph_picks_the_smallest_graph_that_fits(lab, model):
    """With ``max_num_seqs`` 12, a budget of 40 tokens and graphs captured for 1, 2, 4, 8, 16, 32 (full graphs:
    the sizes up to 12 rows; piecewise graphs: those up to 40 tokens): a decode-only step replays the
    smallest full graph with enough rows (8, the largest, included); any other step the smallest
    piecewise graph with enough tokens (rows: its tokens, at most ``max_num_seqs``; 32, the largest,
    included), and so does a decode-only step wider than the largest full graph (10 and 12 rows); a
    step past the largest graph (33 tokens, the budget's 40) runs eagerly at its own size. Without
    piecewise graphs a mixed step, or a decode-only one too wide for the full graphs, runs eagerly;
    without graphs, every step. With one size captured, 1, the smallest: one row replays it, two run eagerly.

    Catches: a mixed step sent to a decode graph (a chunk's tokens taken for decodes), a graph smaller
    than the step (its last tokens or rows dropped: a decode batch wider than the largest full graph
    sent to that graph, a piecewise graph chosen by the step's rows), the largest graph instead of the
    smallest that fits, a piecewise graph whose rows are not the captured ones."""
    sizes = [1, 2, 4, 8, 16, 32]
    cases = [  # (num_tokens, num_reqs, num_decodes, max_query_len) -> (all graphs, decode graphs only)
        ((1, 1, 1, 1), ("full", 1, 1), ("full", 1, 1)),
        ((3, 3, 3, 1), ("full", 4, 4), ("full", 4, 4)),
        ((8, 8, 8, 1), ("full", 8, 8), ("full", 8, 8)),
        ((10, 10, 10, 1), ("piecewise", 16, 12), ("eager", 10, 10)),
        ((12, 12, 12, 1), ("piecewise", 16, 12), ("eager", 12, 12)),
        ((5, 3, 2, 3), ("piecewise", 8, 8), ("eager", 5, 3)),
        ((7, 6, 5, 2), ("piecewise", 8, 8), ("eager", 7, 6)),
        ((2, 1, 0, 2), ("piecewise", 2, 2), ("eager", 2, 1)),
        ((17, 4, 3, 14), ("piecewise", 32, 12), ("eager", 17, 4)),
        ((32, 2, 0, 16), ("piecewise", 32, 12), ("eager", 32, 2)),
        ((33, 3, 0, 20), ("eager", 33, 3), ("eager", 33, 3)),
        ((40, 12, 4, 20), ("eager", 40, 12), ("eager", 40, 12)),
    ]
    one_size = [((1, 1, 1, 1), ("full", 1, 1)), ((2, 2, 2, 1), ("eager", 2, 2)), ((2, 1, 0, 2), ("eager", 2, 1))]
    runs = [(mode, sizes, [(shape, {"full_and_piecewise": every, "full_decode_only": decode_only,
                                    "none": ("eager", *shape[:2])}[mode]) for shape, every, decode_only in cases])
            for mode in ("full_and_piecewise", "full_decode_only", "none")]
    runs.append(("full_and_piecewise", [1], one_size))
    for mode, captured, expected in runs:
        runner = new_engine(lab, model, max_num_seqs=12, max_num_batched_tokens=40, cudagraph_mode=mode,
                            cudagraph_capture_sizes=captured).runner
        for (t, r, d, q), want in expected:
            where = f"cudagraph_mode={mode!r}, graphs for {captured} (max_num_seqs 12, budget 40), a step of {t} " \
                    f"tokens in {r} rows ({d} one-token rows first)"
            try:
                plan = runner.choose_graph(lab.StepShape(t, r, d, q, 0))
            except NotImplementedError:
                raise
            except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
                pytest.fail(f"{where}: choose_graph raised {type(err).__name__}: {err}; expected {want}")
            got = (plan.mode, plan.num_tokens, plan.num_reqs)
            full = [x for x in captured if x <= 12] if mode != "none" else []
            wide = f" (every row one token, but wider than the largest full graph, {max(full)} rows: any other " \
                   f"step)" if d == r == t and full and r > max(full) else ""
            assert got == want, f"{where}: {got}, expected {want}{wide}"


def test_graph_padding_is_harmless(lab, model):
    """After a step of 30 tokens in 6 rows has left its values in the buffers, padding a 5-token, 3-row step
    to a piecewise graph of 8 and a 3-row decode step to a full graph of 4 writes, past the step's own
    entries: token id 0, position 0, slot ``PAD_SLOT`` (the null block), empty rows (``query_start_loc``
    non-decreasing from the step's tokens, within the graph's), ``seq_len`` 0, rows to sample that exist.

    Catches: a graph replayed with the last step's metadata in its padding: slots of the last step's
    tokens (the graph writes its padding keys into a live block), rows to sample past the graph's
    tokens, rows that read the cache."""
    runner = new_engine(lab, model, max_num_batched_tokens=40).runner
    ids = ["a", "b", "c", "d", "e", "f"]
    runner.update_states(lab.SchedulerOutput(
        num_scheduled_tokens=dict.fromkeys(ids, 5),
        scheduled_new_reqs=[lab.NewRequestData(rid, prompts_of(50 + i, [5])[0], [3 + i], 0)
                            for i, rid in enumerate(ids)]))
    runner.prepare_inputs(np.array([5] * len(ids), dtype=np.int32))
    b = runner.buffers
    cases = (((5, 3, 2, 3), lab.RunPlan("piecewise", 8, 8)), ((3, 3, 3, 1), lab.RunPlan("full", 4, 4)))
    for (t, r, d, q), plan in cases:
        runner.pad_graph_inputs(lab.StepShape(t, r, d, q, 0), plan)
        where = f"a step of {t} tokens in {r} rows padded to {plan}"
        assert b.input_ids.host[t : plan.num_tokens].tolist() == [0] * (plan.num_tokens - t), f"{where}: input_ids"
        assert b.positions.host[t : plan.num_tokens].tolist() == [0] * (plan.num_tokens - t), f"{where}: positions"
        slots = b.slot_mapping.host[t : plan.num_tokens].tolist()
        assert slots == [lab.PAD_SLOT] * (plan.num_tokens - t), f"{where}: padding slots {slots}, not the null block"
        loc = b.query_start_loc.host[r + 1 : plan.num_reqs + 1].tolist()
        assert all(t <= x <= plan.num_tokens for x in loc) and loc == sorted(loc), \
            f"{where}: query_start_loc of the padding rows {loc}"
        assert b.seq_lens.host[r : plan.num_reqs].tolist() == [0] * (plan.num_reqs - r), f"{where}: seq_lens"
        rows = b.logits_indices.host[r : plan.num_reqs].tolist()
        assert all(0 <= x < t for x in rows), f"{where}: rows to sample {rows} outside the step's {t} tokens"


@pytest.mark.parametrize("mode", ["full_and_piecewise", "full_decode_only"])
def test_every_step_runs_from_a_graph_below_the_largest_size(lab, model, truth, mode, timing):
    """Graphs of 1 to 64 tokens and a budget of 24: with ``full_and_piecewise`` every step replays a graph
    (decode-only steps a full graph, the others piecewise graphs), none runs eagerly, and the tokens are
    ``generate``'s; with ``full_decode_only`` (lab 99-01's choice) the mixed steps run eagerly.

    Catches: graphs captured but never replayed, a step replayed from a graph with last step's
    metadata or the wrong padding (wrong tokens), a mixed step replayed from a decode graph."""
    engine = new_engine(lab, model, cudagraph_mode=mode, cpu_timing=timing)
    drive(engine, WORKLOAD)
    runs = dict(engine.runner.num_runs)
    assert runs["full"] > 0, f"no decode step replayed a full graph: {runs}"
    if mode == "full_and_piecewise":
        assert runs["eager"] == 0 and runs["piecewise"] > 0, f"steps below the largest graph ran eagerly: {runs}"
    else:
        assert runs["piecewise"] == 0 and runs["eager"] > 0, f"decode-only graphs: {runs}"
    assert_tokens_equal(engine, expected_outputs(truth, WORKLOAD))


@pytest.mark.ungraded  # it checks the given default_capture_sizes
def test_default_graph_sizes_end_at_the_budget(lab, model, truth, timing):
    """With no ``cudagraph_capture_sizes`` the runner captures vLLM v0.22.1's default sizes
    (``default_capture_sizes``): 1, 2, 4, the multiples of 8, up to ``min(2 * max_num_seqs, 512,
    max_num_batched_tokens)``, and that cut itself when it is the budget. 16 seats and a budget of 20:
    full graphs of 1, 2, 4, 8 and 16 rows, piecewise graphs of those and of 20 tokens; every step of the
    workload (prompts cut in chunks of 20) replays a graph, none runs eagerly, and the tokens are
    ``generate``'s. Past 256 the sizes go by 16: 136 seats and a budget of 271 (built, not run) end at
    256, then 271; with a budget of 300 the cut is 2 * 136 = 272, itself a size (as 16 is for 8 seats).

    Catches: the budget left out of the default sizes when it is the cut (a step of 17 to 20 tokens then
    runs eagerly); sizes past 256 by 8, as below it; a cut of 2 * max_num_seqs left out of its range."""
    expected = expected_outputs(truth, WORKLOAD)
    # top = min(2 * 136, 512, 271) = 271: the multiples of 8 below 256, 256, then the budget itself.
    sizes = [1, 2, 4, *range(8, 256, 8), 256, 271]
    big = new_engine(lab, model, max_num_seqs=136, max_num_batched_tokens=271, cudagraph_capture_sizes=None,
                     cpu_timing=timing)
    got = (big.runner.full_sizes, big.runner.piecewise_sizes)
    assert got == ([s for s in sizes if s <= 136], sizes), \
        f"default graph sizes (full, piecewise) {got} for 136 seats and a budget of 271"
    # Where the cut is 2 * max_num_seqs, not the budget, it is a size too when the steps reach it:
    # top = min(2 * 136, 512, 300) = 272 = 256 + 16; top = min(2 * 8, 512, 100) = 16, a multiple of 8.
    for seats, budget, sizes in ((136, 300, [1, 2, 4, *range(8, 256, 8), 256, 272]), (8, 100, [1, 2, 4, 8, 16])):
        cut = new_engine(lab, model, max_num_seqs=seats, max_num_batched_tokens=budget, cudagraph_capture_sizes=None,
                         cpu_timing=timing)
        got = (cut.runner.full_sizes, cut.runner.piecewise_sizes)
        assert got == ([s for s in sizes if s <= seats], sizes), \
            f"default graph sizes (full, piecewise) {got} for {seats} seats and a budget of {budget}: the cut " \
            f"2 * max_num_seqs = {2 * seats} is the last size"
    # top = min(2 * 16, 512, 20) = 20: 1, 2, 4, 8, 16 below it, then the budget 20 itself.
    want = ([1, 2, 4, 8, 16], [1, 2, 4, 8, 16, 20])
    engine = new_engine(lab, model, max_num_seqs=16, max_num_batched_tokens=20, cudagraph_capture_sizes=None,
                        cpu_timing=timing)
    got = (engine.runner.full_sizes, engine.runner.piecewise_sizes)
    assert got == want, f"default graph sizes (full, piecewise) {got}, expected {want} for 16 seats and a budget of 20"
    drive(engine, WORKLOAD)
    runs = dict(engine.runner.num_runs)
    assert runs["eager"] == 0 and runs["piecewise"] > 0, f"steps of at most 20 tokens ran eagerly: {runs}"
    assert_tokens_equal(engine, expected)


# --------------------------------------------------------------------------------------------
# The whole engine: tokens and logits
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("async_scheduling", [True, False], ids=["async", "sync"])
def test_tokens_match_generate(lab, model, truth, async_scheduling, timing):
    """Lab 99-01's six requests (shared prefixes, an identical prompt, prompts longer than the budget of 24,
    1 to 12 new tokens) give ``generate``'s tokens, with the host one step ahead and with the host
    waiting for every step, under both CPU timings.

    Catches: anything that changes what the model sees: a wrong position, slot, block table, length or
    row to sample; a decode fed the host's stale token instead of the one its previous step sampled; a
    token read before its step ran or a host buffer rewritten before its copy ran (lazy timing); a token
    read from the device's live buffer, where the next step has already written (eager timing); a
    finished request's token dropped or doubled."""
    expected = expected_outputs(truth, WORKLOAD)
    engine = new_engine(lab, model, async_scheduling=async_scheduling, cpu_timing=timing)
    drive(engine, WORKLOAD)
    assert_tokens_equal(engine, expected)


@pytest.mark.parametrize("async_scheduling", [True, False], ids=["async", "sync"])
def test_logits_match_generate_within_float32_tolerance(lab, model, truth, async_scheduling, timing):
    """With ``keep_logits``, each request keeps the logits behind every output token (``model_output.logits``
    of its row, read one step late with the host one step ahead), ``generate``'s within ``LOGIT_ATOL``,
    under both CPU timings, with and without the host one step ahead.

    Catches: logits not kept, errors too small to flip a token here, logits of another row or of another
    step: read before their step ran (lazy), or from the device's live buffer, which the next step has
    overwritten by the time the host reads (eager)."""
    expected = {rid: truth(prompt, n)[1] for rid, (prompt, n) in WORKLOAD.items()}
    engine = new_engine(lab, model, keep_logits=True, async_scheduling=async_scheduling, cpu_timing=timing)
    drive(engine, WORKLOAD)
    assert_logits_match(engine, expected)


@pytest.mark.parametrize("budget", [5, 16, 256])
def test_chunk_size_changes_nothing(lab, model, truth, budget, timing):
    """Token budgets of 5 (prompts in many chunks, decodes left out of steps), 16 and 256 (past the largest
    graph: some steps run eagerly): the same tokens, the budget never exceeded.

    Catches: a chunk that restarts its positions, a request left out of a step whose row is kept or
    whose next input is lost, a budget exceeded."""
    expected = expected_outputs(truth, WORKLOAD)
    engine = new_engine(lab, model, max_num_batched_tokens=budget, cpu_timing=timing)
    records = drive(engine, WORKLOAD)
    assert_tokens_equal(engine, expected)
    assert max(r.output.total_num_scheduled_tokens for r in records) <= budget


def busy_workload():
    """Fourteen requests: shared prefixes (SYSTEM's first two blocks), prompts of 5 to 70 tokens, 1 to 16
    new tokens, arriving in three waves."""
    rng = random.Random(5)
    waves = {}
    for i in range(14):
        own = prompts_of(30 + i, [rng.randint(5, 38)])[0]
        prompt = (SYSTEM[:32] + own) if i % 3 == 0 else own
        waves.setdefault((i // 5) * 3, {})[f"w{i}"] = (prompt, rng.randint(1, 16))
    return waves


def test_tokens_match_lab_99_01_on_a_busy_run(lab, model, timing):
    """A busy run (14 requests in three waves, shared prefixes, at most 4 running, a budget of 32 tokens
    and a pool of 8 blocks that forces preemptions), host one step ahead under both CPU timings:
    exactly lab 99-01's tokens (its reference engine, on the same model, run first).

    Catches: any difference from the engine this lab speeds up."""
    waves = busy_workload()
    settings = {"num_gpu_blocks": 8, "block_size": BS, "max_num_seqs": 4, "max_num_batched_tokens": 32}
    reference = labkit.load_reference("99-01").Engine(copy.deepcopy(model), **settings)
    pending, calls = dict(waves), 0
    while reference.has_unfinished_requests() or pending:
        for rid, (prompt, n) in pending.pop(calls, {}).items():
            reference.add_request(rid, prompt, n)
        reference.step()
        calls += 1
    expected = outputs(reference)
    assert sum(r.num_preemptions for r in reference.requests.values()) > 0, "the busy run never preempted"
    engine = new_engine(lab, model, cpu_timing=timing, **settings)
    drive(engine, arrivals=waves)
    assert_tokens_equal(engine, expected, "lab 99-01's engine")
    assert_pool_whole(engine)


def test_update_from_output_returns_the_requests_it_finished(lab, model, truth):
    """``Engine.update_from_output`` returns the requests it finished, as its docstring says. The test reads
    every step itself: after each call of ``step`` it takes the step in flight, waits for it, works out
    from the requests before the call which of them its tokens finish (those sampled by the step whose
    outputs then reach ``max_new_tokens``), then hands the step to ``update_from_output``: the requests
    returned are exactly those, each finished; a read that finishes nobody returns an empty list. Then
    ``generate``'s tokens and the pool whole.

    Catches: an ``update_from_output`` that finishes the right requests but returns nothing (or the
    requests it handed a token to)."""
    expected = expected_outputs(truth, WORKLOAD)
    engine = new_engine(lab, model)
    for rid, (prompt, n) in WORKLOAD.items():
        engine.add_request(rid, prompt, n)
    calls = reads = 0
    while engine.has_unfinished_requests():
        assert calls < 200, "still unfinished after 200 calls of step()"
        engine.step()
        calls += 1
        if engine.in_flight is None:
            continue
        done, model_output = engine.in_flight
        engine.in_flight = None  # this test reads the step, in the engine's place
        model_output.ready.synchronize()
        want = sorted(rid for rid in done.sampled_req_ids
                      if engine.requests[rid].status.name != "FINISHED"
                      and len(engine.requests[rid].output_token_ids) + 1 >= engine.requests[rid].max_new_tokens)
        got = engine.update_from_output(done, model_output)
        reads += 1
        assert got is not None, f"read {reads}: update_from_output returned None, expected the requests it " \
                                f"finished, {want} (a list, empty when none finished)"
        got_ids = sorted(r.request_id for r in got)
        assert got_ids == want, f"read {reads}: update_from_output returned {got_ids}, finished now: {want}"
        assert all(engine.requests[rid].status.name == "FINISHED" for rid in want), \
            f"read {reads}: {want} returned, but not all of them finished"
    assert_tokens_equal(engine, expected)
    assert_pool_whole(engine)


# --------------------------------------------------------------------------------------------
# The schedule, worked out on counts: what the README's rules give, one step late
# --------------------------------------------------------------------------------------------


@dataclass
class Planned:
    """One call of ``step`` as the rules give it: the requests scheduled (in batch order, with their tokens),
    those preempted (in the order chosen), the running list and the waiting queue after the call, and
    each request's outputs once the call has read the output it reads."""

    scheduled: list  # [(request id, tokens)]
    preempted: list  # request ids
    running: list  # request ids, after the call
    waiting: list  # request ids, head first, after the call
    outputs: dict  # request id -> its output tokens the host knows, after the call
    on_the_way: set  # requests whose last sampled token was on its way when the call scheduled
    finished_waiting: list  # requests that finished in this call while preempted


def planned_schedule(workload, arrivals, num_gpu_blocks, max_num_seqs, max_num_batched_tokens, async_scheduling=True,
                     block_size=BS) -> list[Planned]:
    """Every call of ``step`` from counts alone (prefix caching off, so a request holds exactly ceil(tokens
    in its cache / block_size) blocks; the pool has ``num_gpu_blocks - 1``; token ids never matter). The
    rules: lab 99-01's scheduling (running requests first, in order, each up to the budget left; the
    newest running request preempted when a block is missing, and the allocation tried again; a request
    that preempted itself ends the running part; then, in a call that preempted nobody, the queue's head
    while budget, seats and blocks last), with the README's step 4:

    - a request's tokens count the one on its way (``num_tokens``); a request whose outputs plus the token
      on its way reach ``max_new_tokens`` computes nothing more;
    - a scheduled request advances at once; a chunk that reaches its last token samples one more (on its
      way until the host reads it);
    - the host reads the step launched by the previous call (``async_scheduling``) or by this one (without)
      after launching this call's step: each token read becomes an output, running or preempted, and a
      request with ``max_new_tokens`` outputs finishes (out of the running list, or of the queue) and
      frees its blocks."""
    length, max_new, computed, held, known, on_way = {}, {}, {}, {}, {}, {}
    waiting, running, plan, in_flight = [], [], [], None
    arrivals = dict(arrivals or {})

    def arrive(wave):
        for rid, (prompt, n) in wave.items():
            length[rid], max_new[rid] = len(prompt), n
            computed[rid] = held[rid] = known[rid] = on_way[rid] = 0
            waiting.append(rid)

    def num_tokens(rid):
        return length[rid] + known[rid] + on_way[rid]

    def blocks_missing(rid, n):
        return max(-(-(computed[rid] + n) // block_size) - held[rid], 0)

    def free_blocks():
        return num_gpu_blocks - 1 - sum(held.values())

    arrive(workload)
    while waiting or running or arrivals or in_flight is not None:
        arrive(arrivals.pop(len(plan), {}))
        on_the_way = {rid for rid in on_way if on_way[rid]}
        left, scheduled, preempted, index = max_num_batched_tokens, [], [], 0
        while index < len(running) and left > 0:
            rid = running[index]
            if on_way[rid] and known[rid] + on_way[rid] >= max_new[rid]:
                index += 1  # its last token is on its way: nothing left to compute
                continue
            n = min(num_tokens(rid) - computed[rid], left)
            while blocks_missing(rid, n) > free_blocks() and rid in running:
                victim = running.pop()
                held[victim] = computed[victim] = 0
                preempted.append(victim)
                waiting.insert(0, victim)
            if rid not in running:
                break
            held[rid] += blocks_missing(rid, n)
            scheduled.append((rid, n))
            left -= n
            index += 1
        while waiting and left > 0 and len(running) < max_num_seqs and not preempted:
            rid = waiting[0]
            n = min(num_tokens(rid), left)
            if blocks_missing(rid, n) > free_blocks():
                break
            running.append(waiting.pop(0))
            held[rid] += blocks_missing(rid, n)
            scheduled.append((rid, n))
            left -= n
        sampled = []
        for rid, n in scheduled:
            computed[rid] += n
            if computed[rid] == num_tokens(rid):
                on_way[rid] += 1
                sampled.append(rid)
        launched = sampled if scheduled else None
        if not async_scheduling:
            in_flight, launched = launched, None
        finished_waiting = []
        for rid in in_flight or []:
            on_way[rid] -= 1
            known[rid] += 1
            if known[rid] == max_new[rid]:
                held[rid] = 0
                if rid in running:
                    running.remove(rid)
                else:
                    waiting.remove(rid)
                    finished_waiting.append(rid)
        in_flight = launched
        plan.append(Planned(scheduled, preempted, list(running), list(waiting), dict(known), on_the_way,
                            finished_waiting))
        assert len(plan) < 1000, "the planned schedule does not finish (a test bug)"
    return plan


def assert_schedule_as_planned(engine, records, plan) -> None:
    """Each call of ``step`` against the planned one: the first difference fails the test, in words, naming
    the classic mistake when the difference has the shape of one."""
    __tracebackhide__ = True
    for r, want in zip(records, plan, strict=False):
        where = f"call {r.step} of step()"
        got = [(q.request_id, r.output.num_scheduled_tokens[q.request_id]) for q in r.output.scheduled_requests]
        skipped = [rid for rid, _ in want.scheduled if rid not in dict(got) and rid in want.on_the_way]
        if skipped and not r.output.preempted_req_ids:
            pytest.fail(f"{where}: {skipped} not scheduled, planned {want.scheduled}. Each had a token on its way "
                        f"(sampled by the step in flight) and more to compute: its next input is that token, which "
                        f"the device already holds, so it computes now; num_new_tokens plans with request.num_tokens, "
                        f"which counts the placeholders, not with the tokens the host knows (README step 4)")
        extra = [rid for rid, _ in got if rid not in dict(want.scheduled) and rid in want.on_the_way]
        if extra and not want.preempted:
            pytest.fail(f"{where}: {extra} scheduled, planned {want.scheduled}. The token on its way is each one's "
                        f"last (outputs + placeholders reach max_new_tokens): it computes nothing more, num_new_tokens "
                        f"returns 0 (README step 4)")
        if list(r.output.preempted_req_ids) != want.preempted:
            pytest.fail(f"{where}: preempted {list(r.output.preempted_req_ids)}, planned {want.preempted} (scheduled "
                        f"{got}, planned {want.scheduled})")
        if got != want.scheduled:
            pytest.fail(f"{where}: scheduled (request, tokens) {got}, planned {want.scheduled}")
        outputs_now = {rid: r.after[rid][2] for rid in want.outputs}
        if outputs_now != want.outputs:
            wrong = {rid: (outputs_now[rid], want.outputs[rid]) for rid in want.outputs
                     if outputs_now[rid] != want.outputs[rid]}
            pytest.fail(f"{where}: (output tokens, planned) {wrong}: the host reads a step's tokens in the next call "
                        f"with the host one step ahead (in the same call without), and each token read is its "
                        f"request's, running or preempted (README step 4)")
        stuck = [rid for rid in want.finished_waiting if rid in r.waiting]
        if stuck:
            pytest.fail(f"{where}: {stuck} reached max_new_tokens with the token that arrived after its preemption, "
                        f"and is still in the waiting queue: a request that finishes while preempted leaves the "
                        f"queue (README step 4)")
        if r.running != want.running or r.waiting != want.waiting:
            pytest.fail(f"{where}: running {r.running} and waiting {r.waiting} after the call, planned "
                        f"{want.running} and {want.waiting}")
    assert len(records) == len(plan), f"the engine took {len(records)} calls of step(), the planned schedule " \
                                      f"{len(plan)}"


# --------------------------------------------------------------------------------------------
# The order of the host's work, from the stream's own log
# --------------------------------------------------------------------------------------------


def launched_steps(engine, records) -> dict:
    """Call -> (first, last): the positions on the stream of the launches of the step that call launched.
    The step's ``ready`` event is recorded after its last launch: waiting for position ``last`` is
    waiting for the step's output."""
    log = list(engine.runner.stream.log)
    assert all(r.log is not None for r in records), "a test bug: drive the engine with record_log=True"
    assert len(log) == log_length(engine.runner.stream), \
        f"the stream's log has {len(log)} entries, its counters {log_length(engine.runner.stream)}: " \
        "only the stream (_device.py) writes its log and its counters"
    steps = {}
    for r in records:
        launches = [p for kind, p in log[r.log[0] : r.log[1]] if kind == "launch"]
        if launches:
            steps[r.step] = (launches[0], launches[-1])
    return steps


def describe_log(entries, steps: dict) -> str:
    """The stream's log entries of one call, in words: runs of launches by step, and what each wait waited for."""
    words = []
    for kind, p in entries:
        owner = next((call for call, (first, last) in steps.items() if first <= p <= last), None)
        if kind == "launch":
            if words and words[-1][0] == ("launch", owner):
                words[-1][1] += 1
            else:
                words.append([("launch", owner), 1])
            continue
        if owner is None:
            what = f"wait until position {p}"
        elif p == steps[owner][1]:
            what = f"wait for call {owner}'s step (its output)"
        else:
            what = f"wait for part of call {owner}'s step (position {p}: its input copies)"
        words.append([(what, None), 0])
    return "; ".join(f"launch call {key[1]}'s step ({n} launches)" if key[0] == "launch" else key[0]
                     for key, n in words)


def assert_host_one_step_ahead(engine, records, async_scheduling: bool) -> None:
    """The order of a whole run, read from the stream's log (``_device.Stream.log``: each launch and each
    wait of the host, with its position on the stream), under either CPU timing. In each call of
    ``step``:

    - the host waits exactly once for a step's output: the step in flight (launched by the previous
      call) with ``async_scheduling``, its own step without;
    - with ``async_scheduling``, that wait comes after this call's step is launched (step N+1 is on the
      stream before the host waits for step N), and no wait reaches into the step just launched;
    - at most two waits in all: the runner's (given) wait for the last step's input copies, and that one."""
    __tracebackhide__ = True
    log = list(engine.runner.stream.log)
    steps = launched_steps(engine, records)
    for r in records:
        entries = log[r.log[0] : r.log[1]]
        own = steps.get(r.step)
        target_call = r.step - 1 if async_scheduling else r.step
        target = steps.get(target_call)
        where = f"call {r.step} of step()"
        order = describe_log(entries, steps)
        waits = [(i, p) for i, (kind, p) in enumerate(entries) if kind == "wait"]
        reads = [i for i, p in waits if target is not None and p >= target[1]]
        if target is not None and not reads:
            pytest.fail(f"{where} never waited for call {target_call}'s step before reading its output: a step's "
                        f"tokens reach the host only once its ready event has been waited for. The stream saw: {order}")
        if len(reads) > 1:
            pytest.fail(f"{where} waited {len(reads)} times for the device to finish a step; once is all it needs "
                        f"(README step 4). The stream saw: {order}")
        if async_scheduling and own is not None:
            into_own = [p for _, p in waits if p >= own[0]]
            if into_own:
                pytest.fail(f"{where} waited for the step it had just launched (its launches are positions "
                            f"{own[0]}..{own[1]}, it waited until {max(into_own)}): the host is not one step ahead, "
                            f"it waits for the device every step. It waits for the step in flight only "
                            f"(model_output.ready of the previous call's step), never for the whole stream. "
                            f"The stream saw: {order}")
            last_launch = max(i for i, (kind, _) in enumerate(entries) if kind == "launch")
            if reads and reads[0] < last_launch:
                pytest.fail(f"{where} waited for call {target_call}'s step before launching its own: the tokens are "
                            f"right, but the device idles while the host schedules and prepares. With the host one "
                            f"step ahead, step N+1 is scheduled and launched first, and only then does the host wait "
                            f"for step N and hand its tokens over (README step 4). The stream saw: {order}")
        if len(waits) > 2:
            pytest.fail(f"{where} made {len(waits)} waits: a call waits for the last step's input copies (the runner's "
                        f"update_states, given) and for the step it reads, nothing else. The stream saw: {order}")


# --------------------------------------------------------------------------------------------
# Prefix caching, blocks, preemption
# --------------------------------------------------------------------------------------------


def test_prefix_cache_hits_as_predicted(lab, model, truth, timing):
    """Lab 99-01's hits, worked out by hand (blocks of 16; SYSTEM is 40 tokens): A = SYSTEM + 6 at call 0:
    0 hits; B = SYSTEM + 20, C = A's prompt, D = 30 other tokens at call 1: 32, 32, 0 (A's prompt blocks
    are cached when its step is scheduled: their tokens are known); E = SYSTEM + 3 and F = B's prompt at
    call 8: 32 and 48. Tokens computed = prompts - hits + (new tokens - 1): the host one step ahead never
    computes a token it then throws away. Without prefix caching: no hit, the same tokens.

    Catches: no prefix lookup, hits recomputed, blocks cached with a token the host does not know yet,
    a request that finished on the device scheduled once more."""
    a, b, c, d, e, f = (SYSTEM + ALPHA, SYSTEM + BETA, SYSTEM + ALPHA, GAMMA + DELTA[:21], SYSTEM[:40] + [5, 6, 7],
                        SYSTEM + BETA)
    n = {"A": 4, "B": 3, "C": 5, "D": 2, "E": 3, "F": 2}
    arrivals = {0: {"A": (a, n["A"])}, 1: {"B": (b, n["B"]), "C": (c, n["C"]), "D": (d, n["D"])},
                8: {"E": (e, n["E"]), "F": (f, n["F"])}}
    hits = {"A": 0, "B": 32, "C": 32, "D": 0, "E": 32, "F": 48}
    lengths = {"A": 46, "B": 60, "C": 46, "D": 30, "E": 43, "F": 60}
    expected = {rid: truth(p, n[rid])[0] for wave in arrivals.values() for rid, (p, _) in wave.items()}
    for caching in (True, False):
        engine = new_engine(lab, model, max_num_batched_tokens=256, enable_prefix_caching=caching, cpu_timing=timing)
        records = drive(engine, arrivals=arrivals)
        assert all(not engine.requests[r].num_preemptions for r in n), "a roomy pool must never preempt"
        got_hits = {rid: engine.requests[rid].num_cached_tokens for rid in n}
        want_hits = hits if caching else dict.fromkeys(n, 0)
        assert got_hits == want_hits, f"prefix caching {caching}: hits {got_hits}, expected {want_hits}"
        computed = sum(r.output.total_num_scheduled_tokens for r in records)
        predicted = sum(lengths[r] - want_hits[r] + n[r] - 1 for r in n)
        assert computed == predicted, f"prefix caching {caching}: {computed} tokens computed, expected {predicted}"
        assert_tokens_equal(engine, expected)


def test_every_block_returns_to_the_pool(lab, model, truth, timing):
    """After the workload the pool is whole again, and a request's blocks leave it in the very call of
    ``step`` that reads its last token.

    Catches: a finished request's blocks kept, or freed only at the end; a finished request kept in the
    running list."""
    engine = new_engine(lab, model, cpu_timing=timing)
    records = drive(engine, WORKLOAD)
    for r in records:
        for rid in r.finished:
            assert r.tables_after[rid] == [], f"call {r.step}: finished request {rid!r} still holds blocks " \
                                              f"{r.tables_after[rid]}"
            assert rid not in r.running, f"call {r.step}: finished request {rid!r} is still running"
    assert_pool_whole(engine)
    assert_tokens_equal(engine, expected_outputs(truth, WORKLOAD))


def preempted_with_a_token_on_its_way(plan) -> bool:
    """The plan preempts a request whose token is on its way, and finishes one while it waits."""
    return any(rid in p.on_the_way for p in plan for rid in p.preempted) and any(p.finished_waiting for p in plan)


def preempted_in_a_call_that_launches_nothing(plan) -> bool:
    """A call preempts a request of the last launched step and launches nothing (the runner never hears of
    it: the request's row is still there), and the next step schedules the request again, as new."""
    last = None
    for c, p in enumerate(plan):
        if p.preempted and not p.scheduled and last is not None:
            following = next((q for q in plan[c + 1 :] if q.scheduled), None)
            if following and any(v in dict(last) and v in dict(following.scheduled) for v in p.preempted):
                return True
        last = p.scheduled or last
    return False


# The crowd in a small pool (prefix caching off), and what the scenario must show:
# (pool, budget, what, predicate over the planned schedule).
PREEMPTIONS = {
    "7 blocks": (7, 16, "a request preempted with its token on its way, and one finishing while it waits",
                 preempted_with_a_token_on_its_way),
    "6 blocks": (6, 16, "a request preempted in a call that launches nothing, scheduled again in the next step",
                 preempted_in_a_call_that_launches_nothing),
}


@pytest.mark.parametrize("case", list(PREEMPTIONS))
def test_preempted_requests_keep_the_token_on_its_way(lab, model, truth, case, timing):
    """Lab 99-01's crowd (20 blocks of requests) in a pool of 7 or 6 blocks, a budget of 16, prefix caching
    off, the host one step ahead. In 7 blocks, requests are preempted while the token of their last step
    is still on the device; each keeps that token when it arrives (it was computed from the right
    context) and recomputes it with the rest when it comes back; one of them had its last token on the
    way, and finishes from the waiting queue. In 6 blocks, a call preempts a request and schedules
    nothing, so the runner still holds its row when it comes back as new. Every call of ``step`` against
    ``planned_schedule`` (who runs with how many tokens, who is preempted, the queues, the outputs the
    host knows), the host's order, then ``generate``'s tokens, the logits behind each (``keep_logits``: a
    late token brings its logits to its preempted request too) and the pool whole.

    Catches: a request with a token on its way left out of the step (the scheduler planning with the
    tokens the host knows: every decode waits a step for its input); a preempted request whose late token
    is dropped (it then recomputes a different future), or appended twice; a late token whose logits are
    kept only if its request still runs; a request that reached ``max_new_tokens`` while waiting left in
    the queue; placeholders reset by the preemption (the late token then goes missing); a resumed request
    that keeps its stale row beside its new one."""
    num_gpu_blocks, budget, what, shows = PREEMPTIONS[case]
    settings = dict(num_gpu_blocks=num_gpu_blocks, max_num_seqs=8, max_num_batched_tokens=budget)
    plan = planned_schedule(CROWD, None, **settings)
    assert shows(plan), f"{case}: the crowd must show {what} (a test bug: the scenario, not the engine under test)"
    expected = expected_outputs(truth, CROWD)
    expected_logits = {rid: truth(prompt, n)[1] for rid, (prompt, n) in CROWD.items()}
    engine = new_engine(lab, model, enable_prefix_caching=False, keep_logits=True, cpu_timing=timing, **settings)
    records = drive(engine, CROWD, max_steps=3 * len(plan), record_log=True)
    assert_host_one_step_ahead(engine, records, async_scheduling=True)
    assert_schedule_as_planned(engine, records, plan)
    assert_tokens_equal(engine, expected)
    assert_logits_match(engine, expected_logits)
    assert_pool_whole(engine)


def test_the_host_runs_one_step_ahead(lab, model, truth, timing):
    """Lab 99-01's workload (prefix caching off), under both CPU timings. The order of the host's work, from
    the stream's own log (each launch and each wait, in order): with ``async_scheduling``, in every call of
    ``step`` the host launches its step before it waits for the step in flight, waits for that one only
    (never for the step it just launched, nor for the whole stream), and waits once; each call that
    launches returns with its step in flight, and (lazy timing) its work not run yet; the last call
    leaves nothing in flight. Without it: each call waits for its own step, and nothing is left pending.
    Either way every call against ``planned_schedule`` (a request whose token is on its way decodes in
    the very next step), then ``generate``'s tokens.

    Catches: an engine that waits for step N and hands its tokens over before launching step N+1 (right
    tokens, no overlap: the GPU idles while the host schedules), one that reads the step it has just
    launched, one that waits for the whole stream instead of the step's event, one that forgets the
    step in flight at the end; a scheduler that leaves a request out while its token is on its way
    (every decode then waits a step for its input: right tokens, half the steps)."""
    for async_scheduling in (True, False):
        settings = dict(num_gpu_blocks=64, max_num_seqs=8, max_num_batched_tokens=24)
        plan = planned_schedule(WORKLOAD, None, **settings, async_scheduling=async_scheduling)
        engine = new_engine(lab, model, async_scheduling=async_scheduling, cpu_timing=timing,
                            enable_prefix_caching=False, **settings)
        records = drive(engine, WORKLOAD, max_steps=3 * len(plan), record_log=True)
        assert_host_one_step_ahead(engine, records, async_scheduling)
        assert_schedule_as_planned(engine, records, plan)
        for r in records:
            launched = bool(r.output.num_scheduled_tokens)
            if async_scheduling:
                assert r.in_flight == launched, f"call {r.step}: launched a step: {launched}, a step in flight after " \
                                                f"the call: {r.in_flight}"
                if timing == "lazy":
                    assert (r.pending > 0) == launched, \
                        f"call {r.step}: launched {launched}, {r.pending} launches not run yet"
            else:
                assert not r.in_flight and r.pending == 0, \
                    f"call {r.step} without async scheduling: {r.pending} launches not run, in flight {r.in_flight}"
        assert_tokens_equal(engine, expected_outputs(truth, WORKLOAD))


# --------------------------------------------------------------------------------------------
# Sizes at the API's limits
# --------------------------------------------------------------------------------------------


def expected_run_plan(scheduled, captured, max_num_seqs: int, max_num_batched_tokens: int) -> tuple:
    """How README step 3 runs a step of ``scheduled`` ([(request id, tokens)]) with graphs captured for the
    sizes ``captured`` (``full_and_piecewise``): those up to ``max_num_seqs`` are full graphs, those up to
    the budget piecewise graphs. (mode, tokens, rows), as a ``RunPlan``."""
    t, r = sum(n for _, n in scheduled), len(scheduled)
    full = [x for x in sorted(captured) if x <= max_num_seqs]
    piecewise = [x for x in sorted(captured) if x <= max_num_batched_tokens]
    if all(n == 1 for _, n in scheduled) and full and r <= full[-1]:
        size = next(x for x in full if x >= r)
        return ("full", size, size)
    if piecewise and t <= piecewise[-1]:
        size = next(x for x in piecewise if x >= t)
        return ("piecewise", size, min(size, max_num_seqs))
    return ("eager", t, r)


def wide_decodes(runs, widest_full: int) -> bool:
    return any(run[0] != "full" and scheduled and all(n == 1 for _, n in scheduled) and len(scheduled) > widest_full
               for scheduled, run in runs)


# Settings at the API's limits (new_engine's otherwise), the workload, and what the scenario must contain,
# checked on the planned schedule: (settings, workload, what it must show, predicate over [(scheduled, run)]).
SMALL = {"s": (GAMMA, 3), "t": (SYSTEM[:5], 4)}  # each fits in one block of 16, alone
# Eight short prompts that decode together: decode-only steps of up to 8 rows.
WIDE = {f"w{i}": (p, n) for i, (p, n) in enumerate(zip(prompts_of(70, (5, 9, 3, 12, 7, 4, 10, 6)),
                                                         (6, 5, 7, 4, 6, 8, 5, 6), strict=True))}
LIMITS = {
    "smallest": (dict(num_gpu_blocks=2, max_num_seqs=1, max_num_batched_tokens=1, cudagraph_capture_sizes=[1]),
                 SMALL, "one token a step, from the one graph",
                 lambda runs: all(run == ("full", 1, 1) for _, run in runs)),
    "decodes wider than every graph": (dict(cudagraph_capture_sizes=[1, 2, 4]), WIDE,
                                       "decode-only steps of more than 4 rows, run eagerly",
                                       lambda runs: wide_decodes(runs, 4)),
    "decodes wider than the full graphs": (dict(cudagraph_capture_sizes=[1, 2, 4, 16, 24]), WIDE,
                                           "decode-only steps of more than 4 rows, from a piecewise graph",
                                           lambda runs: wide_decodes(runs, 4)),
    "graphs at the limits": (dict(max_num_seqs=6, cudagraph_capture_sizes=[1, 6, 24, 64]), WIDE,
                             "a decode-only step of 6 rows (max_num_seqs) and a step of 24 tokens (the budget)",
                             lambda runs: ("full", 6, 6) in [run for _, run in runs] and
                             ("piecewise", 24, 6) in [run for _, run in runs]),
    "blocks of 32": (dict(block_size=32, num_gpu_blocks=32), WORKLOAD, "requests of several blocks of 32",
                     lambda runs: True),
}


@pytest.mark.parametrize("case", list(LIMITS))
def test_sizes_at_the_api_limits(lab, model, truth, case, timing):
    """The engine at the limits of what its settings accept, prefix caching off, each call of ``step``
    against ``planned_schedule`` and each step's ``RunPlan`` against README step 3's rule, then
    ``generate``'s tokens and the pool whole:

    - the smallest: a pool of 2 blocks (one usable), one seat, a budget of one token, one graph size (1);
    - decode-only batches wider than the largest full graph: graphs for 1, 2, 4 only (such steps run
      eagerly), or also piecewise graphs of 16 and 24 tokens (they replay one of those: a decode-only step
      too wide for the full graphs is "any other step");
    - graphs at their limits: a full graph as wide as ``max_num_seqs`` and a piecewise graph as large as
      the budget (and a size past the budget, never captured);
    - blocks of 32, the other block size the kernels take.

    Catches: a decode batch wider than the largest full graph sent to that graph, or to no graph that fits;
    a graph chosen too small or too large at the limits; a step's sizes, slots or tables that assume
    blocks of 16 or a budget above one token."""
    settings, work, what, shows = LIMITS[case]
    settings = {"num_gpu_blocks": 64, "block_size": BS, "max_num_seqs": 8, "max_num_batched_tokens": 24,
                "cudagraph_capture_sizes": SIZES, **settings}
    counts = {name: settings[name] for name in ("num_gpu_blocks", "max_num_seqs", "max_num_batched_tokens")}
    plan = planned_schedule(work, None, **counts, block_size=settings["block_size"])
    runs = [(p.scheduled, expected_run_plan(p.scheduled, settings["cudagraph_capture_sizes"],
                                            settings["max_num_seqs"], settings["max_num_batched_tokens"]))
            for p in plan if p.scheduled]
    assert shows(runs), f"{case}: the scenario must show {what} (a test bug: the scenario, not the engine under test)"
    engine = new_engine(lab, model, enable_prefix_caching=False, cpu_timing=timing, **settings)
    records = drive(engine, work, max_steps=3 * len(plan))
    assert_schedule_as_planned(engine, records, plan)
    for r, (scheduled, want) in zip([r for r in records if r.run_plan], runs, strict=True):
        kind = "every row one token" if all(n == 1 for _, n in scheduled) else "not every row one token"
        assert r.run_plan == want, \
            f"{case}, call {r.step}: a step of {sum(n for _, n in scheduled)} tokens in {len(scheduled)} rows " \
            f"({kind}) ran as {r.run_plan} (mode, tokens, rows), expected {want}: the smallest full graph with " \
            f"enough rows for a decode-only step that fits one, else the smallest piecewise graph with enough " \
            f"tokens, else eagerly (README step 3; graphs for {settings['cudagraph_capture_sizes']}, " \
            f"max_num_seqs {settings['max_num_seqs']}, budget {settings['max_num_batched_tokens']})"
    assert_tokens_equal(engine, expected_outputs(truth, work))
    assert_pool_whole(engine)


# A model whose max_model_len, 88, is not a multiple of the block size: a request that reaches it ends in
# the middle of its sixth block, and a row of the token table (88) is narrower than its table's blocks (96).
SHORT_CONFIG = {**CONFIG, "max_position_embeddings": 88}
SHORT_WORK = {"mid": (prompts_of(60, [37])[0], 5), "edge": (prompts_of(61, [80])[0], 8),
              "full": (prompts_of(62, [50])[0], 38)}


@pytest.fixture(scope="module")
def short_model():
    return model_truth.make_model(SHORT_CONFIG, 0)


def test_max_model_len_not_a_multiple_of_the_block_size(lab, short_model, timing):
    """A model of ``max_model_len`` 88 (five and a half blocks of 16): two requests that reach it exactly
    (80 + 8 and 50 + 38 tokens) beside a shorter one, chunked by the budget of 24: ``generate``'s tokens, and
    one token more is refused.

    Catches: a token table or block table read with the other one's width (rows of ``num_blocks *
    block_size`` tokens, or of ``max_model_len // block_size`` blocks): right while ``max_model_len`` is a
    multiple of the block size, wrong rows past the first otherwise."""
    truth = model_truth.greedy_truth(short_model, LOGIT_ATOL)
    expected = {rid: truth(prompt, n)[0] for rid, (prompt, n) in SHORT_WORK.items()}
    engine = new_engine(lab, short_model, cpu_timing=timing)
    assert engine.max_model_len == 88
    with pytest.raises(ValueError, match="max_model_len"):
        engine.add_request("over", prompts_of(63, [81])[0], 8)
    drive(engine, SHORT_WORK)
    assert_tokens_equal(engine, expected)
    assert_pool_whole(engine)


# --------------------------------------------------------------------------------------------
# Every step: the scheduler's invariants and the step's inputs
# --------------------------------------------------------------------------------------------

# The crowd, late arrivals sharing its prefixes, a pool that preempts, a budget that chunks every prompt.
LATE = {7: {"x": (CROWD["r0"][0][:32] + [3, 1, 4], 6)}, 12: {"y": (CROWD["r1"][0], 5), "z": ([11] * 17, 9)}}


def busy_run(lab, model, record_log=False, **settings):
    engine = new_engine(lab, model, num_gpu_blocks=10, max_num_seqs=3, max_num_batched_tokens=20, **settings)
    return engine, drive(engine, CROWD, arrivals=LATE, record_inputs=True, record_log=record_log)


def tokens_read(records, r, async_scheduling: bool) -> set:
    """The requests whose sampled token the host read in call ``r``: those of the step the previous call left
    in flight with the host one step ahead, this call's own step's without."""
    if not async_scheduling:
        return set(r.output.sampled_req_ids)
    previous = records[r.step - 1] if r.step else None
    return set(previous.output.sampled_req_ids) if previous is not None and previous.in_flight else set()


@pytest.mark.parametrize("async_scheduling", [True, False], ids=["async", "sync"])
def test_scheduling_invariants_hold_every_step(lab, model, truth, async_scheduling, timing):
    """After every call of ``step`` in a busy run (preemptions, chunked prompts, late arrivals):

    - at most ``max_num_batched_tokens`` tokens, at least one per scheduled request, at most
      ``max_num_seqs`` running; a call that preempted admitted nobody;
    - every request in exactly one queue with the matching status; a waiting one computed nothing and
      holds no block; the runner's rows are exactly the requests scheduled now, each with the KV-cache
      manager's block table;
    - a scheduled request advanced by its tokens when it was scheduled (its count runs ahead of the
      tokens the host has read); it has a placeholder exactly while its sampled token is on its way;
      a request gains a token exactly when the host reads the output of a step that sampled it;
    - the order of the host's work (``assert_host_one_step_ahead``), under both CPU timings.

    Catches: the budget or the seats ignored, admission after a preemption, a finished request left
    running, a preempted one that keeps its progress or blocks, rows of requests not in the step,
    a stale block table in the runner, a token appended for a partial chunk, a placeholder that never
    lands or lands twice, pinned inputs rewritten before their copies ran."""
    engine, records = busy_run(lab, model, record_log=True, async_scheduling=async_scheduling, cpu_timing=timing)
    assert_host_one_step_ahead(engine, records, async_scheduling)
    queue_status = {"waiting": {"WAITING", "PREEMPTED"}, "running": {"RUNNING"}, "finished": {"FINISHED"}}
    for r in records:
        where = f"call {r.step}"
        sched = r.output.num_scheduled_tokens
        assert sum(sched.values()) <= engine.max_num_batched_tokens, f"{where}: {sum(sched.values())} tokens"
        assert all(v >= 1 for v in sched.values()), f"{where}: a request scheduled with no token: {sched}"
        assert len(r.running) <= engine.max_num_seqs, f"{where}: {len(r.running)} running"
        if r.output.preempted_req_ids:
            admitted = [q for q in sched if r.before[q][3] != "RUNNING"]
            assert not admitted, f"{where}: preempted {r.output.preempted_req_ids} and admitted {admitted}"
        queues = {"waiting": r.waiting, "running": r.running, "finished": r.finished}
        seen = sorted(rid for ids in queues.values() for rid in ids)
        assert seen == sorted(r.before), f"{where}: every request in exactly one queue, got {queues}"
        for queue, ids in queues.items():
            for rid in ids:
                status, computed, _, _ = r.after[rid]
                assert status in queue_status[queue], f"{where}: {rid!r} is {status} in the {queue} queue"
                if queue == "waiting":
                    assert computed == 0 and r.tables_after[rid] == [], \
                        f"{where}: waiting {rid!r} has {computed} computed tokens, blocks {r.tables_after[rid]}"
        if sched:
            assert sorted(r.rows) == sorted(sched), f"{where}: the runner's rows {r.rows}, scheduled {sorted(sched)}"
        read = tokens_read(records, r, async_scheduling)
        for rid in r.before:
            computed, tokens, emitted, status, placeholders = r.before[rid]
            status_after, computed_after, emitted_after, placeholders_after = r.after[rid]
            if rid in sched and status == "RUNNING":
                assert computed_after == computed + sched[rid], \
                    f"{where}: {rid!r} computed {computed} + {sched[rid]}, reports {computed_after}"
            in_flight = async_scheduling and rid in r.output.sampled_req_ids
            assert placeholders_after == int(in_flight), \
                f"{where}: {rid!r} has {placeholders_after} placeholders, {int(in_flight)} tokens on their way"
            assert emitted_after == emitted + (rid in read), \
                f"{where}: {rid!r} gained {emitted_after - emitted} tokens; the host read {int(rid in read)} for it"
    assert_tokens_equal(engine, expected_outputs(truth, {**CROWD, **LATE[7], **LATE[12]}))


def test_step_inputs_match_brute_force(lab, model, truth, timing):
    """Every launched step's inputs (the host buffers the copies send), recomputed from the requests'
    tokens and the KV-cache manager's tables: rows with one token first; positions continuing each
    request's cache; the token ids the host knows; the decodes of a token the previous step sampled
    gathered from that step's row, and only those; each token's slot through the block table; offsets,
    lengths and the rows to sample. No slot in a block that another request also holds.

    Catches: every batch-building mistake of steps 1 and 2 (positions, slots, offsets, lengths, a decode's
    input taken from the host, a gather from the wrong row) in a real run, hits recomputed into shared
    blocks."""
    engine, records = busy_run(lab, model, cpu_timing=timing)
    previous = None  # the last launched call
    for r in records:
        if r.inputs is None:
            continue
        where, got = f"call {r.step}", r.inputs
        sched = r.output.num_scheduled_tokens
        counts = [sched[rid] for rid in r.rows]
        assert counts == sorted(counts, key=lambda n: n != 1), f"{where}: rows {r.rows} compute {counts}: decodes first"
        new = {d.req_id for d in r.output.scheduled_new_reqs}
        rows = []
        for rid in r.rows:
            n = sched[rid]
            start = r.after[rid][1] - n
            if r.before[rid][3] == "RUNNING" and rid not in r.output.preempted_req_ids:
                assert start == r.before[rid][0], \
                    f"{where}: {rid!r} starts at {start}, its cache ends at {r.before[rid][0]}"
            known = r.before[rid][1]
            from_device = previous is not None and rid not in new and rid in previous.output.sampled_req_ids
            # The brute force's "host tokens": what the host knew, minus the token the previous step sampled.
            tokens = known[: start + n - 1] if from_device else known
            table = r.tables_after[rid] or None
            prev_row = previous.rows.index(rid) if from_device else None
            rows.append((tokens, start, n, table, prev_row, rid))
        want = brute_force_inputs([(t, s, n, tb or [0] * 64, p) for t, s, n, tb, p, _ in rows])
        for name in ("query_start_loc", "seq_lens", "logits_indices", "positions", "gathers"):
            assert got[name] == want[name], f"{where}: {name} {got[name]}, expected {want[name]} (rows {r.rows})"
        ids = [i for i, (g, w) in enumerate(zip(got["input_ids"], want["input_ids"], strict=True))
               if w is not None and g != w]
        assert not ids, f"{where}: input_ids wrong at flat indices {ids} (rows {r.rows})"
        for (_, start, n, table, _, rid), lo in zip(rows, want["query_start_loc"], strict=False):
            if table is None:
                continue  # finished in this call: its table is gone (checked in the others)
            slots = [table[p // BS] * BS + p % BS for p in range(start, start + n)]
            assert got["slot_mapping"][lo : lo + n] == slots, f"{where}: {rid!r} slots {got['slot_mapping'][lo:lo + n]}"
            shared = sorted({slot // BS for slot in slots} & r.shared_after)
            assert not shared, f"{where}: {rid!r} writes into blocks {shared}, which other requests hold"
        previous = r
    assert_tokens_equal(engine, expected_outputs(truth, {**CROWD, **LATE[7], **LATE[12]}))


# --------------------------------------------------------------------------------------------
# Bad requests
# --------------------------------------------------------------------------------------------


def test_bad_requests_rejected_and_engine_stays_usable(lab, model, truth, timing):
    """Each bad request raises a ValueError naming what is wrong and leaves the queues as they were; then
    the engine serves good requests (one with a rejected request's id) correctly. Bad settings (pool,
    block size, seats, budget, backend, graph mode and sizes, CPU timing) are refused the same way, by
    name, before any engine exists.

    Catches: a bad request that half-enters the engine or breaks it."""
    prompt, n = WORKLOAD["c"]
    expected = truth(prompt, n)[0]
    engine = new_engine(lab, model, num_gpu_blocks=8, cpu_timing=timing)
    engine.add_request("ok", prompt, n)
    bad = [
        (("empty", [], 3), "prompt_token_ids"),
        (("long", [1] * (MAX_MODEL_LEN - 2), 3), "max_model_len"),
        (("zero", [1, 2, 3], 0), "max_new_tokens"),
        (("vocab", [1, VOCAB], 3), "prompt_token_ids"),
        (("text", "hello", 3), "prompt_token_ids"),
        (("huge", [1] * 100, 20), "blocks"),
        (("ok", [1, 2, 3], 2), "request_id"),
        ((7, [1, 2, 3], 2), "request_id"),
    ]
    bad_settings = [
        ({"num_gpu_blocks": 1}, "num_gpu_blocks"),
        ({"block_size": 24}, "block_size"),
        ({"max_num_seqs": 0}, "max_num_seqs"),
        ({"max_num_batched_tokens": 0}, "max_num_batched_tokens"),
        ({"backend": "cuda"}, "backend"),
        ({"cudagraph_mode": "piecewise"}, "cudagraph_mode"),
        ({"cudagraph_capture_sizes": [0, 8]}, "cudagraph_capture_sizes"),
        ({"cudagraph_capture_sizes": 8}, "cudagraph_capture_sizes"),
        ({"cpu_timing": "late"}, "cpu_timing"),
    ]
    for settings, word in bad_settings:
        with pytest.raises(ValueError, match=word):
            new_engine(lab, model, **settings)
    for args, word in bad:
        with pytest.raises(ValueError, match=word):
            engine.add_request(*args)
        assert [r.request_id for r in engine.waiting] == ["ok"] and not engine.running, f"{args[0]!r} was queued"
    engine.add_request("empty", prompt, n)
    drive(engine)
    assert outputs(engine) == {"ok": expected, "empty": expected}
    assert_pool_whole(engine)


# --------------------------------------------------------------------------------------------
# Step 5: a cheap scheduler
# --------------------------------------------------------------------------------------------


def test_block_hashes_extend_one_block_at_a_time(lab):
    """``hash_new_full_blocks`` on a request that grows a few tokens at a time (a placeholder on its way
    counts for nothing): its hashes are lab 02-01's ``hash_request_tokens`` of its known tokens, always.
    Hashes already there are kept as they are: with two stand-ins in place of the first two, the third
    block's hash chains from the second stand-in.

    Catches: hashing the whole request again at every block (the cost this step removes), a chain
    restarted at every block (every block with the same 16 tokens, anywhere, would hit), the partial
    last block hashed, a token still on the device hashed."""
    ref = labkit.load_reference("02-01")
    tokens = prompts_of(40, [90])[0]
    manager = lab.KVCacheManager(num_gpu_blocks=16, block_size=BS)
    request = lab.Request("h", tokens[:20], max_new_tokens=100)
    request.num_output_placeholders = 1
    for end in (20, 21, 31, 32, 33, 47, 64, 65, 90):
        request.append_output_token_ids(tokens[len(request.all_token_ids) : end])
        manager.hash_new_full_blocks(request)
        want = ref.hash_request_tokens(tokens[:end], BS)
        assert list(request.block_hashes) == want, f"after {end} tokens: {len(request.block_hashes)} hashes, " \
                                                   f"expected {len(want)} (lab 02-01's, chained)"
    stand_ins = [bytes([i]) * len(want[0]) for i in (1, 2)]
    request = lab.Request("s", tokens[:40], max_new_tokens=10)
    request.block_hashes = list(stand_ins)
    manager.hash_new_full_blocks(request)
    want = stand_ins + [ref.hash_block_tokens(stand_ins[1], tokens[32:48])]
    request.append_output_token_ids(tokens[40:48])
    manager.hash_new_full_blocks(request)
    assert list(request.block_hashes) == want, "the hashes already there must stay; the new one chains from the last"


def test_decodes_skip_the_allocator_until_a_block_fills(lab, model, truth, timing):
    """A roomy pool and a budget that takes every prompt at once: the KV-cache manager's ``allocate_slots``
    runs once per admission and once per decode whose position starts a new block (position ``p`` with
    ``p % 16 == 0``), never for the others: 6 admissions + 3 (``a`` at 48, ``c`` at 16, ``f`` at 48).

    Catches: a call into the manager for every request at every step (the cost this step removes), a
    skipped allocation where the table is full (a slot past the table: wrong tokens)."""
    engine = new_engine(lab, model, max_num_batched_tokens=256, cpu_timing=timing)
    drive(engine, WORKLOAD)
    starts = sum(1 for prompt, n in WORKLOAD.values() for p in range(len(prompt), len(prompt) + n - 1) if p % BS == 0)
    assert starts == 3
    assert engine.kv_manager.num_allocations == len(WORKLOAD) + starts, \
        f"allocate_slots ran {engine.kv_manager.num_allocations} times, expected {len(WORKLOAD)} admissions + " \
        f"{starts} new blocks"
    assert_tokens_equal(engine, expected_outputs(truth, WORKLOAD))


# --------------------------------------------------------------------------------------------
# The Triton kernels: through the interpreter on a CPU, on the GPU for real
# --------------------------------------------------------------------------------------------


@pytest.mark.skipif(triton_env.device() == "cuda", reason="with a GPU, Triton runs no interpreter: the kernels run "
                    "for real in test_gpu_kernels_and_graphs_match_generate")
def test_triton_kernels_through_the_interpreter(lab, model, truth, timing):
    """The runner's Triton backend (lab 04-03's prefill and lab 04-06's decode kernels) through the
    interpreter on a tiny batch, inside the graphs' CPU stand-ins: ``generate``'s tokens and logits.

    Catches: a batch the kernels read differently from the tensor reference (offsets, lengths, tables of
    padded rows)."""
    work = {"i": (GAMMA, 3), "j": (SYSTEM[:18], 2)}
    expected = {rid: truth(p, n) for rid, (p, n) in work.items()}
    engine = new_engine(lab, model, backend="triton", max_num_batched_tokens=64, keep_logits=True, cpu_timing=timing)
    drive(engine, work, max_steps=12)
    assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
    assert_logits_match(engine, {rid: logits for rid, (_, logits) in expected.items()})


@pytest.mark.ungraded  # it checks the given generate
def test_generate_stops_after_max_steps(lab, model, truth):
    """The given ``Engine.generate`` serves a prompt to its end in as many calls of ``step`` as ``drive``
    makes, also when ``max_steps`` is exactly that many; one call fewer stops it with a RuntimeError
    naming the count.

    Catches: a call counter that does not count up (``max_steps`` then never stops a run)."""
    expected = truth(GAMMA, 3)[0]
    calls = len(drive(new_engine(lab, model), {"g": (GAMMA, 3)}))
    got = new_engine(lab, model).generate({"g": GAMMA}, 3, max_steps=calls)
    assert got == {"g": expected}, f"generate with max_steps={calls} (the calls it needs): {got}, generate {expected}"
    with pytest.raises(RuntimeError, match=f"after {calls - 1} steps"):
        new_engine(lab, model).generate({"g": GAMMA}, 3, max_steps=calls - 1)
        pytest.fail(f"generate with max_steps={calls - 1}, one call short: no RuntimeError")


@pytest.mark.ungraded  # it checks the given generate
def test_generate_refuses_a_bad_batch_and_queues_none_of_it(lab, model, truth):
    """The given ``Engine.generate`` takes a batch whole or not at all. With ``"old"`` already queued:
    prompts given as a list (the docstring asks for a dict by request id), a dict of limits missing a
    later prompt's id, a batch whose later prompt is empty, and a batch that reuses the id ``"old"`` each
    raise a ValueError naming what is wrong (``prompts``, ``max_new_tokens``, ``prompt_token_ids``,
    ``request_id``), and the queues are as before the call (``"old"`` alone, in ``requests`` too); then
    the corrected batch, sent again under the same ids, gives ``generate``'s tokens, and ``"old"`` is
    served with it.

    Catches: a list of prompts taken without a check (an AttributeError on ``.items()`` from deep inside),
    limits looked up as each prompt comes (a bare KeyError after the earlier prompts were queued), a
    refused batch whose earlier requests stay queued (the corrected batch then fails on "already
    taken"), a take-back that drops every request of the batch's ids (``"old"`` among them)."""
    work = {"a": (GAMMA, 3), "b": (SYSTEM[:18], 2)}
    expected = {rid: truth(p, n)[0] for rid, (p, n) in work.items()}
    expected["old"] = truth(DELTA, 2)[0]
    engine = new_engine(lab, model)
    engine.add_request("old", DELTA, 2)
    prompts = {rid: p for rid, (p, _) in work.items()}
    limits = {rid: n for rid, (_, n) in work.items()}
    refused = [
        ("its prompts as a list", (list(prompts.values()), 3), "prompts"),
        ("a limit missing for 'b'", (prompts, {"a": 3}), "max_new_tokens"),
        ("an empty prompt after 'a'", ({"a": GAMMA, "b": []}, limits), "prompt_token_ids"),
        ("the taken id 'old' after 'a'", ({"a": GAMMA, "old": DELTA}, {"a": 3, "old": 2}), "request_id"),
    ]
    for what, args, word in refused:
        with pytest.raises(ValueError, match=word):
            engine.generate(*args)
            pytest.fail(f"generate of a batch with {what}: no ValueError")
        queued = ([r.request_id for r in engine.waiting], sorted(engine.requests))
        assert queued == (["old"], ["old"]) and not engine.running, \
            f"generate of a batch with {what} was refused, but left (waiting, requests) {queued}; expected " \
            f"(['old'], ['old']): a refused batch queues none of its requests and keeps the others"
    got = engine.generate(prompts, limits)
    assert got == {rid: expected[rid] for rid in work}, f"the corrected batch: {got}, generate {expected}"
    assert outputs(engine)["old"] == expected["old"], f"'old': {outputs(engine)['old']}, generate {expected['old']}"


@pytest.mark.gpu
@pytest.mark.parametrize("async_scheduling", [True, False], ids=["async", "sync"])
def test_gpu_kernels_and_graphs_match_generate(lab, truth, async_scheduling):
    """On a GPU, float32: lab 99-01's workload and its crowd (a pool of 8 blocks) through the Triton kernels,
    every step replayed from a CUDA graph (full graphs for decode-only steps, piecewise graphs around
    eager attention for the others, none eager: the graphs reach the budget of 64): ``generate``'s tokens
    (computed on the CPU twin), logits within 1e-3 (cuBLAS and the kernels order their float32 sums
    differently again; no TF32), the pool whole, and the host's order from the stream's log (the CUDA
    stream logs its launches, replays and waits as the CPU one does).

    Catches: a graph replayed with the wrong inputs, a copy that has not landed when its kernel reads it,
    a token read before its step finished, on a real stream."""
    gpu_model = make_model(device="cuda")
    for work, settings in ((WORKLOAD, {}), (CROWD, {"num_gpu_blocks": 8})):
        expected = {rid: truth(p, n) for rid, (p, n) in work.items()}
        engine = new_engine(lab, gpu_model, keep_logits=True, max_num_batched_tokens=64,
                            async_scheduling=async_scheduling, **settings)
        assert engine.runner.backend == "triton"
        records = drive(engine, work, record_log=True)
        assert_host_one_step_ahead(engine, records, async_scheduling)
        assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
        assert_logits_match(engine, {rid: logits for rid, (_, logits) in expected.items()}, atol=1e-3)
        runs = dict(engine.runner.num_runs)
        assert runs["eager"] == 0 and runs["full"] > 0 and runs["piecewise"] > 0, f"steps run: {runs}"
        assert_pool_whole(engine)


@pytest.mark.gpu
def test_gpu_reference_backend_matches_generate(lab, truth):
    """On a GPU, float32, ``backend="reference"`` (the tensor attention, which the runner takes on any
    device), every step from a graph: lab 99-01's workload gives ``generate``'s tokens and logits within
    1e-3.

    Catches: the reference attention building a tensor on the CPU (a ``torch.arange`` without
    ``device=``), which on a GPU meets the step's device tensors and raises."""
    expected = {rid: truth(p, n) for rid, (p, n) in WORKLOAD.items()}
    engine = new_engine(lab, make_model(device="cuda"), backend="reference", keep_logits=True,
                        max_num_batched_tokens=64)
    assert engine.runner.backend == "reference"
    drive(engine, WORKLOAD)
    assert_tokens_equal(engine, {rid: tokens for rid, (tokens, _) in expected.items()})
    assert_logits_match(engine, {rid: logits for rid, (_, logits) in expected.items()}, atol=1e-3)
    assert engine.runner.num_runs["eager"] == 0, f"steps run: {dict(engine.runner.num_runs)}"


@pytest.mark.gpu
def test_gpu_steps_never_wait_for_the_device(lab, truth):
    """On a GPU, with the host one step ahead: the host buffers are pinned, and once the kernels are
    compiled no step makes the host wait for the device except where the engine asks for it (the
    events of the input copies and of the sampled tokens): torch's sync debug mode, set to raise, sees
    no synchronizing operation (a ``.item()``, a ``.tolist()`` of a device tensor, a copy to pageable
    memory) in a whole run.

    Catches: a step that synchronizes behind the engine's back, which leaves the device idle while the
    host works."""
    gpu_model = make_model(device="cuda")
    engine = new_engine(lab, gpu_model, max_num_batched_tokens=64)
    b = engine.runner.buffers
    for name in ("input_ids", "positions", "slot_mapping", "query_start_loc", "seq_lens", "logits_indices"):
        assert getattr(b, name).host.is_pinned(), f"buffers.{name} is not in pinned host memory"
    assert engine.runner.input_batch.block_table.table.host.is_pinned(), "the block table is not pinned"
    drive(engine, WORKLOAD)  # compiles every kernel the run needs
    expected = expected_outputs(truth, CROWD)
    engine = new_engine(lab, gpu_model, max_num_batched_tokens=64, num_gpu_blocks=8)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        drive(engine, CROWD)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert_tokens_equal(engine, expected)
