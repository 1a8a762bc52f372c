"""Lab 99-02, your work: lab 99-01's serving engine at GPU speed.

The engine schedules like lab 99-01's and must give the same tokens; your work is how little the host
does per step, and when. In the README's order:

1. The persistent batch (``InputBatch.add_request``, ``remove_request``, ``condense``, ``swap_rows``,
   ``update_states``): rows that live across steps; a step applies only what changed.
2. The inputs in numpy (``prepare_inputs``): every per-token and per-row input as vector operations over
   the batch, into the pinned host buffers the runner copies from.
3. Graphs for every step (``ModelRunner.choose_graph``, ``pad_graph_inputs``): which captured graph
   runs a step, and padding that touches nothing live.
4. The host one step ahead (``Engine.num_new_tokens``, ``_update_after_schedule``, ``step``,
   ``update_from_output``): launch step N+1 before reading step N's tokens, and handle finishes and
   preemptions one step late.
5. A cheap scheduler (``KVCacheManager.hash_new_full_blocks``, ``Engine.allocate_slots``).

Everything else is given: the KV-cache manager's caching of known tokens (below); the requests, the
scheduler's output and the engine's constructor, ``add_request``, ``schedule`` and ``generate``
(``_gpu_engine_base.py``, over lab 99-01's reference engine, whose ``schedule`` calls your
``num_new_tokens`` and ``allocate_slots``); ``BlockTable``, the batch's constructor and
``reorder_decodes_first``, and the model runner (``_model_runner.py``); the device layer: streams,
events, pinned buffers, graphs (``_device.py``). Write the stubs below in the README's order, then run
``LAB_IMPL=starter pytest -q phase-99-capstone/labs/lab-02-engine-at-gpu-speed``.
"""

from __future__ import annotations

import bisect  # noqa: F401  (step 3 may want it)
import heapq  # noqa: F401  (step 1: InputBatch.holes is a heap)

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
        raise NotImplementedError("InputBatch.add_request: not implemented yet (README step 1: give the request the "
                                  "lowest hole, else a new row at the end, and fill every field of it)")

    def remove_request(self, req_id: str) -> int | None:
        """Empty the request's row (a hole, until ``add_request`` or ``condense`` fills it); the row, or
        None for a request that has none."""
        raise NotImplementedError("InputBatch.remove_request: not implemented yet (README step 1: empty the request's "
                                  "row, leaving a hole)")

    def condense(self) -> None:
        """Close every hole: move the last row into the lowest hole until the rows are ``0 ..
        num_reqs - 1``. A move carries every field of the row."""
        raise NotImplementedError("InputBatch.condense: not implemented yet (README step 1: move the last rows into "
                                  "the holes, every field with them)")

    def swap_rows(self, a: int, b: int) -> None:
        """Exchange rows ``a`` and ``b``, every field."""
        raise NotImplementedError("InputBatch.swap_rows: not implemented yet (README step 1: exchange two rows, every "
                                  "field)")



def update_states(batch: InputBatch, scheduler_output: SchedulerOutput) -> None:
    """Bring the persistent batch to this step's requests (README step 1).

    Rows leave whose request is not scheduled now (finished, preempted, or left out by the budget) or
    comes back as new (preempted since its row was filled: its old row is stale); rows that stay get
    their new blocks and their computed-token count; new rows come in; then the holes close and the
    one-token rows go first."""
    raise NotImplementedError("update_states: not implemented yet (README step 1: drop the rows not in this step, "
                              "update those that stay, add the new ones, condense, decodes first)")


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
    raise NotImplementedError("prepare_inputs: not implemented yet (README step 2: positions, token ids, slots, "
                              "offsets, lengths, rows to sample and the decode inputs still on the device, as numpy "
                              "vector operations into the host buffers)")


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
        raise NotImplementedError("ModelRunner.choose_graph: not implemented yet (README step 3: the smallest captured"
                                  " graph that fits the step, else eager)")

    def pad_graph_inputs(self, shape: StepShape, plan: RunPlan) -> None:
        """Make the padding a graph runs harmless, in the host buffers (README step 3). Tokens
        ``num_tokens .. plan.num_tokens - 1``: id 0, position 0, slot ``PAD_SLOT`` (the null block);
        rows ``num_reqs .. plan.num_reqs - 1``: empty (``query_start_loc`` stays at ``num_tokens``),
        ``seq_len`` 0, and a row to sample that exists (0)."""
        raise NotImplementedError("ModelRunner.pad_graph_inputs: not implemented yet (README step 3: padding up to the"
                                  " graph's sizes that reads and writes nothing live)")


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
        raise NotImplementedError("KVCacheManager.hash_new_full_blocks: not implemented yet (README step 5: hash only "
                                  "the new full blocks, each chained to the one before)")


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
        raise NotImplementedError("Engine.num_new_tokens: not implemented yet (README step 4: a running request's "
                                  "tokens now, placeholders included; 0 while its last token is on its way)")

    def _update_after_schedule(self, output: SchedulerOutput) -> None:
        """Advance every scheduled request by its tokens now, before the step runs; a chunk that reaches
        the end of its request's tokens will sample one more: a placeholder until the host reads it
        (README step 4; vLLM: ``Scheduler._update_after_schedule``, ``AsyncScheduler``)."""
        raise NotImplementedError("Engine._update_after_schedule: not implemented yet (README step 4: advance the "
                                  "scheduled requests now; a placeholder for each one that samples)")

    def step(self) -> SchedulerOutput:
        """One engine step (README step 4): schedule and launch a step, then read the output of the step
        launched before it (with ``async_scheduling``), or of this one (without), and hand it to
        ``update_from_output``. Returns this call's scheduler output.

        A step's ``ModelRunnerOutput`` holds its tokens only once its ``ready`` event has been waited for;
        that is the one wait a call makes (never for the whole stream, nor, with ``async_scheduling``, for
        the step it has just launched). A call that schedules nothing still reads the step in flight; with
        nothing in flight either and requests unfinished, nothing can ever run: a RuntimeError."""
        raise NotImplementedError("Engine.step: not implemented yet (README step 4: launch the next step, then read "
                                  "the one in flight)")

    def update_from_output(self, scheduler_output: SchedulerOutput, model_output: ModelRunnerOutput) -> list[Request]:
        """Hand each sampled token to its request, one step late (README step 4): a placeholder becomes a
        token; a running request caches the blocks it completes; a request that reached
        ``max_new_tokens`` finishes and frees its blocks, whether it is running or was preempted
        meanwhile (a preempted request keeps the token: it was computed from the right context). With
        ``self.keep_logits``, each token handed over also brings its logits: ``model_output.logits[row]``
        (the step's own host tensor, safe to keep) appended to ``request.logits``.
        Returns the requests finished now."""
        raise NotImplementedError("Engine.update_from_output: not implemented yet (README step 4: hand each late token"
                                  " to its request; cache, finish and free)")

    # ---------------------------------------------------------------- step 5: a cheap scheduler

    def allocate_slots(self, request: Request, num_new_tokens: int):
        """Blocks for a running request's next ``num_new_tokens`` tokens (README step 5): none to ask for
        when its blocks already hold them (most decode steps), else the KV-cache manager's answer
        (new blocks, or None when the pool is short)."""
        raise NotImplementedError("Engine.allocate_slots: not implemented yet (README step 5: no call into the KV-"
                                  "cache manager while the request's blocks have room)")
