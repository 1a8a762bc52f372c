"""Lab 99-01, your work: the engine step of a server that runs a real transformer through the course's
paged KV cache and kernels.

One engine step, in the order ``step`` (given) runs it:

1. ``schedule`` (README steps 1 and 2): who runs this step and how many tokens each computes: the
   running requests first, then the waiting ones, under a token budget, with the KV-cache manager's
   blocks, prefix-cache hits and preemption.
2. ``prepare_inputs`` (README step 3): the step's flattened batch: token ids, positions, the slot of
   each new token, block tables, ``query_start_loc``, ``seq_lens``, the rows to sample.
3. (given) ``ModelRunner.execute_model``: the forward pass; every layer writes its keys and values
   through your slot mapping and attends over the paged cache.
4. ``update_from_output`` (README step 4): advance the requests, append their tokens, finish and free.

Everything else is given, imported below:

- from ``_engine_base.py``: ``Request`` (with ``RequestStatus``), ``SchedulerOutput``, and ``EngineBase``,
  the class your ``Engine`` extends: its ``__init__`` (the settings ``block_size``, ``max_num_seqs``,
  ``max_num_batched_tokens``; the queues ``waiting``, ``running``, ``finished``; ``requests`` by id;
  ``kv_manager``, lab 02-05's KV-cache manager over lab 02-01's block pool; ``runner``), ``add_request``,
  ``step``, ``generate``, ``_add_to_batch``, and ``num_new_tokens`` and ``allocate_slots`` for a running
  request. ``step`` checks the engine's state after each of your
  ``schedule``, ``prepare_inputs`` and ``update_from_output``: a mistake stops there with an
  ``EngineStateError`` that names the step, the request and what was expected.
- from ``_runner.py``: the model side (``build_model``, ``tiny_config``, ``StepInputs``, ``ModelRunner``).

Write the stubs below in the README's order, then run
``LAB_IMPL=starter pytest -q phase-99-capstone/labs/lab-01-serving-engine``.
"""

from __future__ import annotations

from _engine_base import (  # noqa: F401  (given; re-exported)
    EngineBase,
    EngineStateError,
    KVCacheManager,
    Request,
    RequestStatus,
    SchedulerOutput,
)
from _runner import ModelRunner, StepInputs, build_model, tiny_config  # noqa: F401  (given; re-exported)


class Engine(EngineBase):
    """Your engine step: ``EngineBase`` (given) has the settings, the queues, ``add_request``, ``step``,
    ``generate``, ``_add_to_batch``, ``num_new_tokens`` and ``allocate_slots``; the four methods below
    are yours."""

    # ---------------------------------------------------------------- step 1 and 2: schedule

    def schedule(self) -> SchedulerOutput:
        """This step's batch, as a ``SchedulerOutput`` (README steps 1 and 2).

        - ``scheduled_requests``: the requests that compute tokens this step, in batch order: the running
          requests that were scheduled, in their order in ``self.running``, then the newly admitted ones.
        - ``num_scheduled_tokens``: per request, the tokens it computes now: at least 1, together at most
          ``self.max_num_batched_tokens``. A request computes the next of its tokens not yet in the cache
          (``num_tokens - num_computed_tokens`` of them remain): all of them if the budget allows, else as
          many as it allows (a prefill chunk). Running requests are served first, in order; for each, ask
          ``self.num_new_tokens(request, budget)`` (given: exactly that count) and pass over a request that
          gets 0 (none does in this lab; lab 99-02's engine, built on yours, answers 0 for some).
        - ``new_block_ids``: per request, the ids of the blocks it got this step from the KV-cache manager
          (``[]`` when its last block had room): a running request's through ``self.allocate_slots(request,
          n)`` (given: the manager's ``allocate_slots``, which lab 99-02 makes cheaper), a waiting one's
          through ``self.kv_manager.allocate_slots``. A newly admitted request's list starts with its
          prefix-cache hits (``get_computed_blocks``), then its new blocks.
        - ``preempted_req_ids``: the requests preempted this step. When the pool has no room for a running
          request, the running request admitted last (maybe this one) is preempted (``_preempt``) and the
          allocation tried again; a request that preempted itself is not scheduled, nor is anyone after it.

        Waiting requests are admitted first come, first served, while the budget lasts, fewer than
        ``self.max_num_seqs`` requests run, and no request was preempted this step; admission stops at the
        first request whose tokens do not fit in the pool (it keeps its place at the head of the queue).
        An admitted request leaves ``self.waiting`` for the end of ``self.running`` with status RUNNING, its
        hit tokens counted as computed (``num_computed_tokens``) and, at its first admission only, recorded
        in ``num_cached_tokens`` (the hits of the admission that succeeds: a try the pool refused records
        nothing).
        """
        raise NotImplementedError("schedule: not implemented yet (README steps 1 and 2: serve the running "
                                  "requests, then admit waiting ones under the token budget)")

    def _preempt(self, request: Request) -> None:
        """Preempt a running request that is no longer in ``self.running``: its blocks go back to the pool,
        its block table and computed tokens are forgotten (it will recompute them; its outputs so far stay),
        its status becomes PREEMPTED, ``num_preemptions`` counts it, and it waits at the head of
        ``self.waiting``."""
        raise NotImplementedError("_preempt: not implemented yet (README step 1: free a running request's blocks "
                                  "and send it back to the head of the queue)")

    # ---------------------------------------------------------------- step 3: the batch

    def prepare_inputs(self, scheduler_output: SchedulerOutput) -> StepInputs:
        """The ``StepInputs`` of ``scheduler_output``'s requests, in their order (README step 3).

        Each request's block table (``request.block_ids``, the runner's copy) first takes the ids it got this
        step. Its chunk is its next ``num_scheduled_tokens`` tokens, from position ``num_computed_tokens``:
        their ids, their positions, and for each the cache row (slot) that receives its keys and values;
        its block table; its ``seq_len`` (the tokens in its cache once the chunk is written); its rows
        ``query_start_loc[s] .. query_start_loc[s + 1] - 1``; and one row to sample, its chunk's last.
        """
        raise NotImplementedError("prepare_inputs: not implemented yet (README step 3: flatten the scheduled "
                                  "chunks into one batch with positions, slots and block tables)")

    # ---------------------------------------------------------------- step 4: after the forward pass

    def update_from_output(self, scheduler_output: SchedulerOutput, sampled_token_ids: list[int]) -> list[Request]:
        """After the forward pass: ``sampled_token_ids[i]`` is the greedy token of the last row of
        ``scheduler_output.scheduled_requests[i]`` (README step 4).

        Each scheduled request has now computed its scheduled tokens. A request whose chunk reached its last
        token gets its sampled token appended; a prefill chunk that did not (a prompt cut by the budget)
        gets nothing. A request with ``max_new_tokens`` outputs is finished: its blocks go back to the pool,
        it leaves ``self.running`` for ``self.finished`` (by id) with status FINISHED. Several requests
        finished in one step are freed in the batch's order (``Scheduler.update_from_output`` in
        ``vllm/v1/core/sched/scheduler.py`` frees each as its loop over the batch reaches it): the order
        matters, since the pool's free queue follows it and the next requests take their blocks from its
        head. Returns the requests finished in this step.
        """
        raise NotImplementedError("update_from_output: not implemented yet (README step 4: advance the requests, "
                                  "append their tokens, finish and free)")
