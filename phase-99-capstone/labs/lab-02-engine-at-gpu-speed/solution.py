"""Lab 99-02, reference solution: lab 99-01's serving engine at GPU speed.

The engine serves the same requests with the same tokens as lab 99-01's; what changes is how little
the host does per step, and when:

1. A **persistent batch** (``InputBatch``, ``update_states``): rows that live across steps, with their
   token ids, computed-token counts and block tables in numpy; a step applies only what changed
   (rows that left, rows that came, new blocks), closes the holes by moving the last rows down, and
   puts the one-token rows first.
2. **Inputs in numpy** (``prepare_inputs``): positions, input ids, slot mapping, ``query_start_loc``,
   ``seq_lens`` and the rows to sample as vector operations over the batch, written into the pinned
   host buffers; the runner launches one copy per buffer. A decode's input token is the one the
   previous step sampled: it stays on the device, and the runner copies it into place there.
3. **Graphs for every step** (``ModelRunner.choose_graph``, ``pad_graph_inputs``): a decode-only step
   replays a full graph (attention inside) padded to a captured batch size, any other step the
   piecewise graphs padded to a captured token count, with attention eagerly between them.
4. **The host one step ahead** (``Engine.step``, ``update_from_output`` and the scheduler's
   placeholders): step N+1 is scheduled, prepared and launched before step N's tokens are read; a
   request finishes, or receives a token after it was preempted, one step late.
5. **A cheap scheduler** (``KVCacheManager.hash_new_full_blocks``, ``Engine.allocate_slots``): block
   hashes extended one new block at a time, and no call into the KV-cache manager for a request
   whose blocks already have room.

The requests, the KV-cache manager and the model builders are lab 99-01's reference solution (over labs
02-05 and 02-01); the model runner is ``_model_runner.py``, the device layer ``_device.py``. Names
follow vLLM v0.22.1: ``vllm/v1/worker/gpu_input_batch.py``, ``block_table.py`` and
``gpu_model_runner.py`` (its asynchronous model-runner output), and ``vllm/v1/core/sched/async_scheduler.py``.
"""

from __future__ import annotations

import bisect
import heapq

import numpy as np
from _device import HostDeviceBuffer, Stream  # noqa: F401  (given)
from _gpu_engine_base import (  # noqa: F401  (given; the tests and the benchmark use them from here)
    CachedRequestData,
    EngineBase,
    NewRequestData,
    Request,
    RequestStatus,
    SchedulerOutput,
)
from _model_runner import (  # noqa: F401  (given)
    CUDAGRAPH_MODES,
    PAD_SLOT,
    BlockTable,
    InputBatchBase,
    ModelRunnerBase,
    ModelRunnerOutput,
    RunPlan,
    StepBuffers,
    StepShape,
)

import labkit

_engine = labkit.load_reference("99-01")  # KVCacheManager (lab 02-05's), the model builders
_blocks = labkit.load_reference("02-01")  # hash_block_tokens: the key of one full block

build_model = _engine.build_model  # given, and part of this module's API
tiny_config = _engine.tiny_config


# --------------------------------------------------------------------------------------------
# Step 1: the persistent batch
# --------------------------------------------------------------------------------------------


class InputBatch(InputBatchBase):
    """The runner's rows (README step 1). The fields, the constructor and ``reorder_decodes_first`` are
    given (``_model_runner.InputBatchBase``, whose docstring says what a row holds); the four methods
    below are yours."""

    def add_request(self, req_id: str, token_ids: list[int], block_ids: list[int], num_computed_tokens: int) -> int:
        """Give the request a row, the lowest hole if there is one, else a new row at the end; fill every
        field of it. Returns the row."""
        row = heapq.heappop(self.holes) if self.holes else len(self.req_ids)
        if row == len(self.req_ids):
            self.req_ids.append(req_id)
        else:
            self.req_ids[row] = req_id
        self.req_id_to_index[req_id] = row
        self.num_tokens[row] = len(token_ids)
        self.token_ids[row, : len(token_ids)] = token_ids
        self.num_computed_tokens[row] = num_computed_tokens
        self.prev_step_row[row] = -1  # a new row: the previous step sampled nothing for it
        self.block_table.add_row(block_ids, row)
        return row

    def remove_request(self, req_id: str) -> int | None:
        """Empty the request's row (a hole, until ``add_request`` or ``condense`` fills it); the row, or
        None for a request that has none."""
        row = self.req_id_to_index.pop(req_id, None)
        if row is None:
            return None
        self.req_ids[row] = None
        heapq.heappush(self.holes, row)
        return row

    def condense(self) -> None:
        """Close every hole: move the last row into the lowest hole until the rows are ``0 ..
        num_reqs - 1``. A move carries every field of the row."""
        while self.holes:
            hole = heapq.heappop(self.holes)
            while self.req_ids and self.req_ids[-1] is None:
                self.req_ids.pop()
            last = len(self.req_ids) - 1
            if hole > last:
                continue  # a hole at the end: gone with the trailing rows
            req_id = self.req_ids.pop()
            self.req_ids[hole] = req_id
            self.req_id_to_index[req_id] = hole
            n = self.num_tokens[last]
            self.token_ids[hole, :n] = self.token_ids[last, :n]
            self.num_tokens[hole] = n
            self.num_computed_tokens[hole] = self.num_computed_tokens[last]
            self.prev_step_row[hole] = self.prev_step_row[last]
            self.block_table.move_row(last, hole)
        while self.req_ids and self.req_ids[-1] is None:
            self.req_ids.pop()

    def swap_rows(self, a: int, b: int) -> None:
        """Exchange rows ``a`` and ``b``, every field."""
        id_a, id_b = self.req_ids[a], self.req_ids[b]
        self.req_ids[a], self.req_ids[b] = id_b, id_a
        self.req_id_to_index[id_a], self.req_id_to_index[id_b] = b, a
        self.token_ids[[a, b]] = self.token_ids[[b, a]]
        for values in (self.num_tokens, self.num_computed_tokens, self.prev_step_row):
            values[[a, b]] = values[[b, a]]
        self.block_table.swap_rows(a, b)



def update_states(batch: InputBatch, scheduler_output: SchedulerOutput) -> None:
    """Bring the persistent batch to this step's requests (README step 1).

    Rows leave whose request is not scheduled now (finished, preempted, or left out by the budget) or
    comes back as new (preempted since its row was filled: its old row is stale); rows that stay get
    their new blocks and their computed-token count; new rows come in; then the holes close and the
    one-token rows go first."""
    scheduled = scheduler_output.num_scheduled_tokens
    new_req_ids = {new.req_id for new in scheduler_output.scheduled_new_reqs}
    for req_id in [r for r in batch.req_ids if r is not None and (r not in scheduled or r in new_req_ids)]:
        batch.remove_request(req_id)
    cached = scheduler_output.scheduled_cached_reqs
    index = batch.req_id_to_index
    for req_id, new_block_ids, num_computed in zip(cached.req_ids, cached.new_block_ids, cached.num_computed_tokens,
                                                   strict=True):
        row = index[req_id]
        if new_block_ids:
            batch.block_table.append_row(new_block_ids, row)
        batch.num_computed_tokens[row] = num_computed
    for new in scheduler_output.scheduled_new_reqs:
        batch.add_request(new.req_id, new.token_ids, new.block_ids, new.num_computed_tokens)
    batch.condense()
    batch.reorder_decodes_first(scheduled)


# --------------------------------------------------------------------------------------------
# Step 2: the step's inputs, in numpy
# --------------------------------------------------------------------------------------------


def prepare_inputs(batch: InputBatch, num_scheduled_tokens: np.ndarray, buffers: StepBuffers,
                   block_size: int) -> StepShape:
    """Fill the host side of ``buffers`` for one step (README step 2): row ``i`` of ``batch`` computes
    ``num_scheduled_tokens[i]`` tokens from ``num_computed_tokens[i]`` on.

    Writes ``input_ids``, ``positions``, ``slot_mapping`` (first ``num_tokens`` entries),
    ``query_start_loc`` (``num_reqs + 1``), ``seq_lens``, ``logits_indices`` (``num_reqs``), and
    ``gather_dst`` / ``gather_src`` for the rows whose last input is the token the previous step
    sampled for them (``num_gathers`` entries: the input's flat index, the row it had then). Then
    records each row as the row it has now, for the next step. Vector operations only. A row of
    ``batch.token_ids`` holds ``max_model_len`` tokens and a row of the block table
    ``max_num_blocks_per_req`` blocks (``ceil(max_model_len / block_size)``): each is flattened with its
    own width."""
    n = batch.num_reqs
    num_scheduled = np.asarray(num_scheduled_tokens, dtype=np.int64)
    cu_num_tokens = np.cumsum(num_scheduled)
    num_tokens = int(cu_num_tokens[-1])
    # E.g. [2, 5, 3] -> req_indices [0, 0, 1, 1, 1, 1, 1, 2, 2, 2], offsets [0, 1, 0, 1, 2, 3, 4, 0, 1, 2].
    req_indices = np.repeat(np.arange(n), num_scheduled)
    offsets = np.arange(num_tokens) - np.repeat(cu_num_tokens - num_scheduled, num_scheduled)
    computed = batch.num_computed_tokens[:n].astype(np.int64)

    positions = buffers.positions.np[:num_tokens]
    np.add(computed[req_indices], offsets, out=positions)
    token_indices = req_indices * batch.max_model_len + positions
    np.take(batch.token_ids.ravel(), token_indices, out=buffers.input_ids.np[:num_tokens])
    table = batch.block_table.np
    block_numbers = table.ravel()[req_indices * table.shape[1] + positions // block_size]
    np.add(block_numbers * block_size, positions % block_size, out=buffers.slot_mapping.np[:num_tokens])

    buffers.query_start_loc.np[0] = 0
    buffers.query_start_loc.np[1 : n + 1] = cu_num_tokens
    buffers.seq_lens.np[:n] = computed + num_scheduled
    buffers.logits_indices.np[:n] = cu_num_tokens - 1

    # A row whose last input lies past the tokens the host wrote takes the token the previous step
    # sampled for it, from the device.
    pending = np.flatnonzero(computed + num_scheduled > batch.num_tokens[:n])
    buffers.gather_dst.np[: len(pending)] = cu_num_tokens[pending] - 1
    buffers.gather_src.np[: len(pending)] = batch.prev_step_row[pending]
    batch.prev_step_row[:n] = np.arange(n)

    not_decode = np.flatnonzero(num_scheduled != 1)
    num_decodes = int(not_decode[0]) if len(not_decode) else n
    return StepShape(num_tokens, n, num_decodes, int(num_scheduled.max()), len(pending))


# --------------------------------------------------------------------------------------------
# Step 3: graphs for every step
# --------------------------------------------------------------------------------------------


class ModelRunner(ModelRunnerBase):
    """The given runner (``_model_runner.py``) with your steps plugged in."""

    def make_input_batch(self) -> InputBatch:
        return InputBatch(self.max_num_reqs, self.max_model_len, self.max_num_blocks_per_req, self.stream)

    def update_states(self, scheduler_output: SchedulerOutput) -> None:
        # The previous step's copies read the pinned host buffers (the block table among them) when they
        # run, not when they were launched: wait for them, and only them, before this step writes there.
        self.input_copies_done.synchronize()
        update_states(self.input_batch, scheduler_output)

    def prepare_inputs(self, num_scheduled_tokens: np.ndarray) -> StepShape:
        return prepare_inputs(self.input_batch, num_scheduled_tokens, self.buffers, self.block_size)

    def choose_graph(self, shape: StepShape) -> RunPlan:
        """How this step runs (README step 3): a decode-only step that fits a full graph replays the
        smallest one of at least ``num_reqs`` rows; any other step that fits a piecewise graph, the
        smallest one of at least ``num_tokens`` tokens (its rows: ``min(tokens, max_num_reqs)``); a
        larger step runs eagerly at its own size. A decode-only step wider than the largest full graph is
        any other step: a step never runs in a graph smaller than itself. ``self.full_sizes``,
        ``self.piecewise_sizes``: the captured sizes, ascending (empty without graphs)."""
        if shape.uniform_decode and self.full_sizes and shape.num_reqs <= self.full_sizes[-1]:
            size = self.full_sizes[bisect.bisect_left(self.full_sizes, shape.num_reqs)]
            return RunPlan("full", size, size)
        if self.piecewise_sizes and shape.num_tokens <= self.piecewise_sizes[-1]:
            size = self.piecewise_sizes[bisect.bisect_left(self.piecewise_sizes, shape.num_tokens)]
            return RunPlan("piecewise", size, min(size, self.max_num_reqs))
        return RunPlan("eager", shape.num_tokens, shape.num_reqs)

    def pad_graph_inputs(self, shape: StepShape, plan: RunPlan) -> None:
        """Make the padding a graph runs harmless, in the host buffers (README step 3). Tokens
        ``num_tokens .. plan.num_tokens - 1``: id 0, position 0, slot ``PAD_SLOT`` (the null block);
        rows ``num_reqs .. plan.num_reqs - 1``: empty (``query_start_loc`` stays at ``num_tokens``),
        ``seq_len`` 0, and a row to sample that exists (0)."""
        b, n, r = self.buffers, shape.num_tokens, shape.num_reqs
        b.input_ids.np[n : plan.num_tokens] = 0
        b.positions.np[n : plan.num_tokens] = 0
        b.slot_mapping.np[n : plan.num_tokens] = PAD_SLOT
        b.query_start_loc.np[r + 1 : plan.num_reqs + 1] = n
        b.seq_lens.np[r : plan.num_reqs] = 0
        b.logits_indices.np[r : plan.num_reqs] = 0


# --------------------------------------------------------------------------------------------
# Step 5 (first half): a KV-cache manager that hashes only what is new
# --------------------------------------------------------------------------------------------


class KVCacheManager(_engine.KVCacheManager):
    """Lab 02-05's manager, for an engine whose host runs ahead of its tokens.

    - Given: a block is cached only once every token in it is known to the host (a block whose last
      token is still on the device would be indexed under a guess); ``cache_blocks`` caches the blocks
      that a token read late completes (vLLM v0.22.1: ``AsyncScheduler`` calls ``KVCacheManager.cache_blocks``
      with ``num_computed_tokens - num_output_placeholders``).
    - Given: ``num_allocations`` counts ``allocate_slots`` calls, for the tests and the benchmark.
    - Step 5: ``hash_new_full_blocks``."""

    def __init__(self, num_gpu_blocks: int, block_size: int, enable_caching: bool = True) -> None:
        super().__init__(num_gpu_blocks, block_size, enable_caching)
        self.num_allocations = 0

    def allocate_slots(self, request, num_new_tokens, num_new_computed_tokens=0, new_computed_blocks=None):
        self.num_allocations += 1
        return super().allocate_slots(request, num_new_tokens, num_new_computed_tokens, new_computed_blocks)

    def cache_blocks(self, request: Request, num_computed_tokens: int) -> None:
        """Cache the request's blocks full within its first ``num_computed_tokens`` tokens (known ones)."""
        known = min(num_computed_tokens, len(request.all_token_ids))
        cached = self.num_cached_block.get(request.request_id)  # None: it holds no block
        if self.enable_caching and cached is not None and known // self.block_size > cached:
            self._cache_full_blocks(request, known)

    def _cache_full_blocks(self, request: Request, num_tokens: int) -> None:
        super()._cache_full_blocks(request, min(num_tokens, len(request.all_token_ids)))

    def _update_block_hashes(self, request: Request) -> None:
        self.hash_new_full_blocks(request)

    def hash_new_full_blocks(self, request: Request) -> None:
        """Extend ``request.block_hashes`` to the keys of all its full blocks of known tokens (README
        step 5): hash only the blocks past the last hash, each chained to the one before it
        (lab 02-01's ``hash_block_tokens``), never the whole request again."""
        tokens, size, hashes = request.all_token_ids, self.block_size, request.block_hashes
        parent = hashes[-1] if hashes else None
        for i in range(len(hashes), len(tokens) // size):
            parent = _blocks.hash_block_tokens(parent, tokens[i * size : (i + 1) * size])
            hashes.append(parent)


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class Engine(EngineBase):
    """Lab 99-01's engine (the same scheduling, the same tokens), at GPU speed. The constructor,
    ``add_request``, ``generate`` and the scheduling are given (``_gpu_engine_base.EngineBase``, whose
    docstring lists the settings): ``schedule`` is lab 99-01's, and asks ``num_new_tokens`` and
    ``allocate_slots`` below for each running request. The methods below are steps 4 and 5."""

    kv_manager_class = KVCacheManager
    model_runner_class = ModelRunner

    # ---------------------------------------------------------------- step 4: the host one step ahead

    def num_new_tokens(self, request: Request, budget: int) -> int:
        """How many tokens a running request computes now (README step 4): the rest of its tokens, the
        ones on their way included, within the budget; 0 when its last token is already on its way
        (``max_new_tokens`` reached once the placeholders land: nothing is left to compute)."""
        if request.num_output_placeholders and \
                len(request.output_token_ids) + request.num_output_placeholders >= request.max_new_tokens:
            return 0
        return min(request.num_tokens - request.num_computed_tokens, budget)

    def _update_after_schedule(self, output: SchedulerOutput) -> None:
        """Advance every scheduled request by its tokens now, before the step runs; a chunk that reaches
        the end of its request's tokens will sample one more: a placeholder until the host reads it
        (README step 4; vLLM: ``Scheduler._update_after_schedule``, ``AsyncScheduler``)."""
        for request in output.scheduled_requests:
            request.num_computed_tokens += output.num_scheduled_tokens[request.request_id]
            if request.num_computed_tokens == request.num_tokens:
                request.num_output_placeholders += 1
                output.sampled_req_ids.append(request.request_id)

    def step(self) -> SchedulerOutput:
        """One engine step (README step 4): schedule and launch a step, then read the output of the step
        launched before it (with ``async_scheduling``), or of this one (without), and hand it to
        ``update_from_output``. Returns this call's scheduler output.

        A step's ``ModelRunnerOutput`` holds its tokens only once its ``ready`` event has been waited for;
        that is the one wait a call makes (never for the whole stream, nor, with ``async_scheduling``, for
        the step it has just launched). A call that schedules nothing still reads the step in flight; with
        nothing in flight either and requests unfinished, nothing can ever run: a RuntimeError."""
        scheduler_output = self.schedule()
        launched = None
        if scheduler_output.num_scheduled_tokens:
            launched = (scheduler_output, self.runner.execute_model(scheduler_output))
            self.num_steps += 1
        elif self.in_flight is None and self.has_unfinished_requests():
            raise RuntimeError(f"step {self.num_steps}: nothing was scheduled although {len(self.waiting)} requests "
                               f"wait and {len(self.running)} run")
        if not self.async_scheduling:  # read this very step
            self.in_flight, launched = launched, None
        if self.in_flight is not None:
            done, model_output = self.in_flight
            model_output.ready.synchronize()  # the tokens reach the host only once the step has run
            self.update_from_output(done, model_output)
        self.in_flight = launched
        return scheduler_output

    def update_from_output(self, scheduler_output: SchedulerOutput, model_output: ModelRunnerOutput) -> list[Request]:
        """Hand each sampled token to its request, one step late (README step 4): a placeholder becomes a
        token; a running request caches the blocks it completes; a request that reached
        ``max_new_tokens`` finishes and frees its blocks, whether it is running or was preempted
        meanwhile (a preempted request keeps the token: it was computed from the right context). With
        ``self.keep_logits``, each token handed over also brings its logits: ``model_output.logits[row]``
        (the step's own host tensor, safe to keep) appended to ``request.logits``.
        Returns the requests finished now."""
        row = {req_id: i for i, req_id in enumerate(model_output.req_ids)}
        tokens = model_output.sampled_token_ids.tolist()
        finished = []
        for req_id in scheduler_output.sampled_req_ids:
            request = self.requests[req_id]
            request.num_output_placeholders -= 1
            if request.status is RequestStatus.FINISHED:
                continue
            request.append_output_token_ids([tokens[row[req_id]]])
            if self.keep_logits:
                request.logits.append(model_output.logits[row[req_id]].clone())
            if request.status is RequestStatus.RUNNING:
                self.kv_manager.cache_blocks(request, request.num_computed_tokens - request.num_output_placeholders)
            if len(request.output_token_ids) >= request.max_new_tokens:
                finished.append(request)
        for request in finished:
            self.kv_manager.free(request)
            was_running = request.status is RequestStatus.RUNNING
            request.status = RequestStatus.FINISHED
            request.block_ids = []
            self.finished[request.request_id] = request
            self._finished_since_schedule.add(request.request_id)
            if not was_running:
                self.waiting.remove(request)
        if finished:
            self.running = [r for r in self.running if r.status is not RequestStatus.FINISHED]
        return finished

    # ---------------------------------------------------------------- step 5: a cheap scheduler

    def allocate_slots(self, request: Request, num_new_tokens: int):
        """Blocks for a running request's next ``num_new_tokens`` tokens (README step 5): none to ask for
        when its blocks already hold them (most decode steps), else the KV-cache manager's answer
        (new blocks, or None when the pool is short)."""
        if request.num_computed_tokens + num_new_tokens <= len(request.block_ids) * self.block_size:
            return []
        return self.kv_manager.allocate_slots(request, num_new_tokens)
