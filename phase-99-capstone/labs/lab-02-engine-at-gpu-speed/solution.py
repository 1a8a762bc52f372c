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
follow vLLM: ``vllm/v1/worker/gpu_input_batch.py``, ``block_table.py`` and ``gpu_model_runner.py`` at
v0.10.1, ``vllm/v1/core/sched/async_scheduler.py`` (v0.10.1) and the asynchronous model-runner
output of v0.11.0.
"""

from __future__ import annotations

import bisect
import heapq
import operator
from collections import deque
from dataclasses import dataclass, field

import _device  # Stream, HostDeviceBuffer (given)
import _model_runner  # the model runner (given)
import numpy as np
import torch

import labkit

_engine = labkit.load_reference("99-01")  # Request, RequestStatus, KVCacheManager (lab 02-05's), the model
_blocks = labkit.load_reference("02-01")  # hash_block_tokens: the key of one full block

# Given, and part of this module's API (the tests and the benchmark use them from here).
build_model = _engine.build_model
tiny_config = _engine.tiny_config
RequestStatus = _engine.RequestStatus
Stream = _device.Stream
HostDeviceBuffer = _device.HostDeviceBuffer
StepBuffers = _model_runner.StepBuffers
StepShape = _model_runner.StepShape
RunPlan = _model_runner.RunPlan
ModelRunnerOutput = _model_runner.ModelRunnerOutput
PAD_SLOT = _model_runner.PAD_SLOT
CUDAGRAPH_MODES = _model_runner.CUDAGRAPH_MODES


# --------------------------------------------------------------------------------------------
# Requests and the scheduler's output (given)
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Request(_engine.Request):
    """Lab 99-01's request, plus the tokens on their way: ``num_output_placeholders`` counts the steps
    that will give it a token and whose output the host has not read yet.

    ``all_token_ids`` and ``output_token_ids`` hold the tokens the host knows; ``num_tokens`` counts
    the placeholders too: it is what the scheduler plans with (the next token to compute is at
    ``num_computed_tokens``, whether or not the host knows its value yet)."""

    num_output_placeholders: int = 0

    @property
    def num_tokens(self) -> int:
        return len(self._token_ids) + self.num_output_placeholders


@dataclass
class NewRequestData:
    """A request that enters the runner's batch this step: never run, resumed after a preemption, or
    left out of the previous step. Everything the runner needs to give it a row."""

    req_id: str
    token_ids: list[int]  # the tokens the host knows
    block_ids: list[int]  # its whole block table
    num_computed_tokens: int  # before this step


@dataclass
class CachedRequestData:
    """The requests that stay in the runner's batch, column by column: what changed for each."""

    req_ids: list[str] = field(default_factory=list)
    new_block_ids: list[list[int]] = field(default_factory=list)  # blocks it got this step (often none)
    num_computed_tokens: list[int] = field(default_factory=list)  # before this step


@dataclass
class SchedulerOutput:
    """What one ``schedule`` call decided, and what the runner's batch must change.

    ``num_scheduled_tokens`` holds every scheduled request (in scheduling order); each one is either in
    ``scheduled_new_reqs`` or in ``scheduled_cached_reqs``. ``sampled_req_ids``: the requests whose chunk
    reaches the end of their tokens (the step samples their next token)."""

    scheduled_requests: list[Request] = field(default_factory=list)
    num_scheduled_tokens: dict[str, int] = field(default_factory=dict)
    scheduled_new_reqs: list[NewRequestData] = field(default_factory=list)
    scheduled_cached_reqs: CachedRequestData = field(default_factory=CachedRequestData)
    sampled_req_ids: list[str] = field(default_factory=list)
    preempted_req_ids: list[str] = field(default_factory=list)
    finished_req_ids: set[str] = field(default_factory=set)  # finished since the previous schedule

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(self.num_scheduled_tokens.values())


# --------------------------------------------------------------------------------------------
# Step 1: the persistent batch
# --------------------------------------------------------------------------------------------


class BlockTable:
    """The block table of every row (given): ``np [max_num_reqs, max_num_blocks_per_req]`` int32 on the
    host (pinned on CUDA; ``table`` is its ``HostDeviceBuffer``), ``num_blocks[row]`` entries valid.
    Entries past ``num_blocks`` hold whatever was there before: no kernel reads them."""

    def __init__(self, max_num_reqs: int, max_num_blocks_per_req: int, stream: Stream) -> None:
        self.table = HostDeviceBuffer(stream, (max_num_reqs, max_num_blocks_per_req), torch.int32)
        self.np = self.table.np
        self.num_blocks = np.zeros(max_num_reqs, dtype=np.int32)

    def add_row(self, block_ids: list[int], row: int) -> None:
        self.num_blocks[row] = len(block_ids)
        self.np[row, : len(block_ids)] = block_ids

    def append_row(self, block_ids: list[int], row: int) -> None:
        start = self.num_blocks[row]
        self.num_blocks[row] = start + len(block_ids)
        self.np[row, start : start + len(block_ids)] = block_ids

    def move_row(self, src: int, dst: int) -> None:
        n = self.num_blocks[src]
        self.np[dst, :n] = self.np[src, :n]
        self.num_blocks[dst] = n

    def swap_rows(self, a: int, b: int) -> None:
        self.np[[a, b]] = self.np[[b, a]]
        self.num_blocks[[a, b]] = self.num_blocks[[b, a]]


class InputBatch:
    """The runner's rows, kept from one step to the next (vLLM: ``InputBatch``).

    Row ``i`` holds request ``req_ids[i]``: its token ids ``token_ids[i, :num_tokens[i]]`` (those the host
    knew when the row was filled; a decode's newer input stays on the device), its
    ``num_computed_tokens[i]``, its block table ``block_table`` row ``i``, and ``prev_step_row[i]``: the
    row it had in the previous step (where that step's sampled token for it is), -1 if it was not in
    it. Between steps the rows are ``0 .. num_reqs - 1`` with no hole; ``remove_request`` leaves one,
    ``add_request`` fills the lowest, ``condense`` closes the rest."""

    def __init__(self, max_num_reqs: int, max_model_len: int, max_num_blocks_per_req: int, stream: Stream) -> None:
        self.max_num_reqs = max_num_reqs
        self.max_model_len = max_model_len
        self.req_ids: list[str | None] = []
        self.req_id_to_index: dict[str, int] = {}
        self.token_ids = np.zeros((max_num_reqs, max_model_len), dtype=np.int64)
        self.num_tokens = np.zeros(max_num_reqs, dtype=np.int32)
        self.num_computed_tokens = np.zeros(max_num_reqs, dtype=np.int32)
        self.prev_step_row = np.full(max_num_reqs, -1, dtype=np.int32)
        self.block_table = BlockTable(max_num_reqs, max_num_blocks_per_req, stream)
        self.holes: list[int] = []  # rows emptied by remove_request (a heap: the lowest first)

    @property
    def num_reqs(self) -> int:
        return len(self.req_id_to_index)

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

    def reorder_decodes_first(self, num_scheduled_tokens: dict[str, int]) -> None:
        """Swap the one-token rows in front of the others (given: vLLM's
        ``reorder_batch_to_split_decodes_and_prefills``), so that one decode kernel takes them all."""
        i, j = 0, self.num_reqs - 1
        while True:
            while i < j and num_scheduled_tokens[self.req_ids[i]] == 1:
                i += 1
            while i < j and num_scheduled_tokens[self.req_ids[j]] != 1:
                j -= 1
            if i >= j:
                return
            self.swap_rows(i, j)


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
    records each row as the row it has now, for the next step. Vector operations only."""
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


class ModelRunner(_model_runner.ModelRunnerBase):
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
        larger step runs eagerly at its own size. ``self.full_sizes``, ``self.piecewise_sizes``: the
        captured sizes, ascending (empty without graphs)."""
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
      that a token read late completes (vLLM v0.10.1: ``KVCacheManager.cache_blocks``).
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


class Engine:
    """Lab 99-01's engine (the same scheduling, the same tokens), at GPU speed.

    Settings as lab 99-01's (``num_gpu_blocks``, ``block_size``, ``max_num_seqs``,
    ``max_num_batched_tokens``, ``enable_prefix_caching``, ``backend``, ``keep_logits``), and:

    - ``async_scheduling``: the host runs one step ahead (README step 4); False waits for every step;
    - ``cudagraph_mode``: ``"full_and_piecewise"`` (every step from graphs, README step 3),
      ``"full_decode_only"`` (lab 99-01's choice) or ``"none"``; ``cudagraph_capture_sizes``: the
      sizes to capture (default: vLLM's);
    - ``cpu_timing``: on a CPU, when the device work runs (``_device.Stream``).

    Queues as in lab 99-01: ``waiting``, ``running``, ``finished``, ``requests``. ``in_flight``: the step
    launched and not yet read back (its scheduler output and model-runner output), or None."""

    def __init__(self, model, num_gpu_blocks: int, block_size: int = 16, max_num_seqs: int = 8,
                 max_num_batched_tokens: int = 64, enable_prefix_caching: bool = True, backend: str | None = None,
                 keep_logits: bool = False, async_scheduling: bool = True, cudagraph_mode: str = "full_and_piecewise",
                 cudagraph_capture_sizes=None, cpu_timing: str = "lazy") -> None:
        for name, value, low in (("num_gpu_blocks", num_gpu_blocks, 2), ("max_num_seqs", max_num_seqs, 1),
                                 ("max_num_batched_tokens", max_num_batched_tokens, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 16 or \
                block_size & (block_size - 1):
            raise ValueError(f"block_size must be a power of two >= 16 (the decode kernels' tile), got {block_size!r}")
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.keep_logits = keep_logits
        self.async_scheduling = bool(async_scheduling)
        self.kv_manager = KVCacheManager(num_gpu_blocks, block_size, enable_caching=enable_prefix_caching)
        self.runner = ModelRunner(model, num_gpu_blocks, block_size, max_num_seqs, max_num_batched_tokens, backend,
                                  cudagraph_mode, cudagraph_capture_sizes, cpu_timing, keep_logits)
        self.max_model_len = self.runner.max_model_len
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.finished: dict[str, Request] = {}
        self.requests: dict[str, Request] = {}
        self.num_steps = 0  # steps launched
        self.in_flight: tuple[SchedulerOutput, ModelRunnerOutput] | None = None
        self._in_batch: set[str] = set()  # the requests of the runner's batch: those the last step scheduled
        self._finished_since_schedule: set[str] = set()

    # ---------------------------------------------------------------- given: requests in, tokens out

    def add_request(self, request_id: str, prompt_token_ids, max_new_tokens: int = 16) -> Request:
        """Queue a request; ValueError, changing nothing, for one that could never be served."""
        if not isinstance(request_id, str) or not request_id:
            raise ValueError(f"request_id must be a non-empty string, got {request_id!r}")
        if request_id in self.requests:
            raise ValueError(f"request_id {request_id!r} is already taken")
        try:
            prompt = [operator.index(t) for t in prompt_token_ids]
        except TypeError:
            raise ValueError(f"prompt_token_ids must be a sequence of integer token ids, got {prompt_token_ids!r}") \
                from None
        if not prompt:
            raise ValueError("prompt_token_ids is empty: a request needs at least one prompt token")
        vocab = self.runner.vocab_size
        if min(prompt) < 0 or max(prompt) >= vocab:
            raise ValueError(f"prompt_token_ids must be token ids in [0, {vocab}), got {min(prompt)}..{max(prompt)}")
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        if len(prompt) + max_new_tokens > self.max_model_len:
            raise ValueError(f"prompt_token_ids ({len(prompt)} tokens) + max_new_tokens ({max_new_tokens}) exceed the "
                             f"model's maximum length max_model_len={self.max_model_len}")
        needed = -(-(len(prompt) + max_new_tokens - 1) // self.block_size)
        usable = self.kv_manager.block_pool.num_gpu_blocks - 1  # block 0 is the null block
        if needed > usable:
            raise ValueError(f"prompt_token_ids + max_new_tokens need {needed} blocks of {self.block_size} tokens, "
                             f"but the pool has {usable}: the request could never run")
        request = Request(request_id, prompt, max_new_tokens=max_new_tokens)
        self.requests[request_id] = request
        self.waiting.append(request)
        return request

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running or self.in_flight)

    def generate(self, prompts: dict, max_new_tokens=16, max_steps: int = 100_000) -> dict[str, list[int]]:
        """Serve ``prompts`` (request id -> prompt token ids) to the end; ``max_new_tokens`` is one int or a
        dict by request id. Returns each request's output token ids."""
        for request_id, prompt in prompts.items():
            limit = max_new_tokens[request_id] if isinstance(max_new_tokens, dict) else max_new_tokens
            self.add_request(request_id, prompt, limit)
        calls = 0
        while self.has_unfinished_requests():
            if calls >= max_steps:
                raise RuntimeError(f"still unfinished after {max_steps} steps")
            self.step()
            calls += 1
        return {request_id: list(self.requests[request_id].output_token_ids) for request_id in prompts}

    # ---------------------------------------------------------------- given: the scheduler

    def schedule(self) -> SchedulerOutput:
        """Lab 99-01's scheduling (running requests first, preemption of the newest, then the waiting queue),
        with the token counts of step 4 and the allocation of step 5."""
        output = SchedulerOutput(finished_req_ids=self._finished_since_schedule)
        self._finished_since_schedule = set()
        budget = self.max_num_batched_tokens
        index = 0
        while index < len(self.running) and budget > 0:
            request = self.running[index]
            num_new_tokens = self.num_new_tokens(request, budget)
            if num_new_tokens == 0:
                index += 1
                continue
            new_blocks = self.allocate_slots(request, num_new_tokens)
            while new_blocks is None:
                victim = self.running.pop()
                self._preempt(victim)
                output.preempted_req_ids.append(victim.request_id)
                if victim is request:
                    break
                new_blocks = self.allocate_slots(request, num_new_tokens)
            if new_blocks is None:
                break
            self._add_to_batch(output, request, num_new_tokens, new_blocks)
            budget -= num_new_tokens
            index += 1

        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs and not output.preempted_req_ids:
            request = self.waiting[0]
            hits, num_hit_tokens = self.kv_manager.get_computed_blocks(request)
            num_new_tokens = min(request.num_tokens - num_hit_tokens, budget)
            new_blocks = self.kv_manager.allocate_slots(request, num_new_tokens, num_hit_tokens, hits)
            if new_blocks is None:
                break
            self.waiting.popleft()
            request.num_computed_tokens = num_hit_tokens
            if request.num_cached_tokens < 0:
                request.num_cached_tokens = num_hit_tokens
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            self._add_to_batch(output, request, num_new_tokens, hits + new_blocks)
            budget -= num_new_tokens

        self._update_after_schedule(output)
        if output.num_scheduled_tokens:  # a step runs: its requests are the runner's rows from now on
            self._in_batch = set(output.num_scheduled_tokens)
        return output

    def _add_to_batch(self, output: SchedulerOutput, request: Request, num_new_tokens: int, new_blocks) -> None:
        request_id = request.request_id
        new_block_ids = [block.block_id for block in new_blocks]
        request.block_ids.extend(new_block_ids)
        output.scheduled_requests.append(request)
        output.num_scheduled_tokens[request_id] = num_new_tokens
        if request_id in self._in_batch:  # it has a row: send what changed
            cached = output.scheduled_cached_reqs
            cached.req_ids.append(request_id)
            cached.new_block_ids.append(new_block_ids)
            cached.num_computed_tokens.append(request.num_computed_tokens)
        else:  # it needs a row: send everything
            output.scheduled_new_reqs.append(NewRequestData(request_id, list(request.all_token_ids),
                                                            list(request.block_ids), request.num_computed_tokens))

    def _preempt(self, request: Request) -> None:
        """As lab 99-01's. A token still on its way stays counted: it arrives with the next output."""
        self.kv_manager.free(request)
        self._in_batch.discard(request.request_id)  # when it comes back, it needs a new row
        request.block_ids = []
        request.num_computed_tokens = 0
        request.status = RequestStatus.PREEMPTED
        request.num_preemptions += 1
        self.waiting.appendleft(request)

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

        A step's ``ModelRunnerOutput`` holds its tokens only once its ``ready`` event has been waited for.
        A call that schedules nothing still reads the step in flight; with nothing in flight either and
        requests unfinished, nothing can ever run: a RuntimeError."""
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
        meanwhile (a preempted request keeps the token: it was computed from the right context).
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
