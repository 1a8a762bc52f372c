"""Lab 99-02, given: the requests, the scheduler's output and the engine's given half (you do not
edit this file).

``starter.py`` (yours) and ``solution.py`` (the reference) both build on what is here, so that the
given code is written once:

- ``Request``: lab 99-01's request plus the tokens on their way (``num_output_placeholders``).
- ``NewRequestData``, ``CachedRequestData``, ``SchedulerOutput``: what one ``schedule`` call decides,
  and what the runner's batch must change.
- ``EngineBase``: everything of the engine but the methods you write (README steps 4 and 5): the
  constructor (settings, queues, the KV-cache manager and the model runner of the class that
  inherits it, named by its ``kv_manager_class`` and ``model_runner_class``),
  ``has_unfinished_requests``, ``generate``, and ``schedule``. It extends lab 99-01's engine (its
  reference solution, through ``labkit.load_reference``): ``add_request`` is lab 99-01's, and so is
  the scheduling. ``schedule`` runs lab 99-01's ``schedule`` (which asks your ``num_new_tokens`` and
  ``allocate_slots`` for each running request, and preempts with lab 99-01's ``_preempt``), turns
  its decisions into this lab's ``SchedulerOutput`` and hands it to your ``_update_after_schedule``.

Names follow vLLM v0.22.1's v1 engine (``vllm/v1/request.py``, ``vllm/v1/core/sched/output.py``,
``vllm/v1/core/sched/scheduler.py``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from _model_runner import ModelRunnerOutput

import labkit

_engine = labkit.load_reference("99-01")  # lab 99-01's engine: its Request, RequestStatus and scheduling
RequestStatus = _engine.RequestStatus


# --------------------------------------------------------------------------------------------
# Requests and the scheduler's output
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Request(_engine.Request):
    """Lab 99-01's request, plus the tokens on their way: ``num_output_placeholders`` counts the steps
    that will give it a token and whose output the host has not read yet.

    ``all_token_ids`` and ``output_token_ids`` hold the tokens the host knows; ``num_tokens`` counts
    the placeholders too: it is what the scheduler plans with (the next token to compute is at
    ``num_computed_tokens``, whether or not the host knows its value yet). vLLM's ``Request.num_tokens``
    does not count them (``len(_all_token_ids)``): its scheduler adds ``num_output_placeholders`` where
    it needs them."""

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
# The engine's given half
# --------------------------------------------------------------------------------------------


class EngineBase(_engine.Engine):
    """Lab 99-01's engine (the same scheduling, the same tokens), at GPU speed: its given half.

    Settings as lab 99-01's (``num_gpu_blocks``, ``block_size``, ``max_num_seqs``,
    ``max_num_batched_tokens``, ``enable_prefix_caching``, ``backend``, ``keep_logits``), and:

    - ``async_scheduling``: the host runs one step ahead (README step 4); False waits for every step;
    - ``cudagraph_mode``: ``"full_and_piecewise"`` (every step from graphs, README step 3),
      ``"full_decode_only"`` (lab 99-01's choice) or ``"none"``; ``cudagraph_capture_sizes``: the
      sizes to capture (default: vLLM's);
    - ``cpu_timing``: on a CPU, when the device work runs (``_device.Stream``).

    Queues as in lab 99-01: ``waiting``, ``running``, ``finished``, ``requests``. ``in_flight``: the step
    launched and not yet read back (its scheduler output and model-runner output), or None.

    What lab 99-01's engine does and this one does not is overridden here or by your ``Engine``:
    ``step`` and ``update_from_output`` are yours, the batch is the runner's (lab 99-01's
    ``prepare_inputs`` is never called), and the constructor builds this lab's KV-cache manager and
    runner."""

    kv_manager_class: type  # the KV-cache manager the engine builds (README step 5's)
    model_runner_class: type  # the model runner it builds (README steps 1-3's)
    request_class = Request  # what lab 99-01's add_request (the same checks, the same ValueErrors) queues

    def __init__(self, model, num_gpu_blocks: int, block_size: int = 16, max_num_seqs: int = 8,
                 max_num_batched_tokens: int = 64, enable_prefix_caching: bool = True, backend: str | None = None,
                 keep_logits: bool = False, async_scheduling: bool = True, cudagraph_mode: str = "full_and_piecewise",
                 cudagraph_capture_sizes=None, cpu_timing: str = "lazy") -> None:
        num_gpu_blocks, block_size, max_num_seqs, max_num_batched_tokens = self._check_settings(
            num_gpu_blocks, block_size, max_num_seqs, max_num_batched_tokens)  # as Python ints
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.keep_logits = keep_logits
        self.async_scheduling = bool(async_scheduling)
        self.kv_manager = self.kv_manager_class(num_gpu_blocks, block_size, enable_caching=enable_prefix_caching)
        self.runner = self.model_runner_class(model, num_gpu_blocks, block_size, max_num_seqs, max_num_batched_tokens,
                                              backend, cudagraph_mode, cudagraph_capture_sizes, cpu_timing, keep_logits)
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

    def has_unfinished_requests(self) -> bool:
        return bool(self.waiting or self.running or self.in_flight)

    def generate(self, prompts: dict, max_new_tokens=16, max_steps: int = 100_000) -> dict[str, list[int]]:
        """Serve ``prompts`` (request id -> prompt token ids) to the end; ``max_new_tokens`` is one int or a
        dict by request id with an entry for each prompt. Returns each request's output token ids.

        A batch is taken whole or not at all: ``prompts`` that is not a dict (a list of prompts), a limit
        missing from the dict, or a request that ``add_request`` refuses, raises its ValueError with none of
        the batch's requests left queued (the corrected batch can be sent again under the same ids)."""
        self._queue_batch(prompts, max_new_tokens)  # lab 99-01's: the batch whole or not at all
        calls = 0
        while self.has_unfinished_requests():
            if calls >= max_steps:
                raise RuntimeError(f"still unfinished after {max_steps} steps")
            self.step()
            calls += 1
        return {request_id: list(self.requests[request_id].output_token_ids) for request_id in prompts}

    # ---------------------------------------------------------------- given: the scheduler

    def schedule(self) -> SchedulerOutput:
        """Lab 99-01's scheduling (running requests first, preemption of the newest, then the waiting
        queue), with the token counts of your step 4 and the allocation of your step 5, as this lab's
        ``SchedulerOutput``: what the runner's batch must change. Then your ``_update_after_schedule``."""
        decided = super().schedule()  # lab 99-01's: who runs, with how many tokens and which new blocks
        output = SchedulerOutput(preempted_req_ids=list(decided.preempted_req_ids),
                                 finished_req_ids=self._finished_since_schedule)
        self._finished_since_schedule = set()
        # A preempted request lost its row's blocks: when it comes back, it needs a new row. Its token
        # still on its way stays counted; it arrives with the next output.
        self._in_batch.difference_update(decided.preempted_req_ids)
        for request in decided.scheduled_requests:
            request_id = request.request_id
            self._add_to_step(output, request, decided.num_scheduled_tokens[request_id],
                              decided.new_block_ids[request_id])
        self._update_after_schedule(output)
        if output.num_scheduled_tokens:  # a step runs: its requests are the runner's rows from now on
            self._in_batch = set(output.num_scheduled_tokens)
        return output

    def _add_to_step(self, output: SchedulerOutput, request: Request, num_new_tokens: int,
                     new_block_ids: list[int]) -> None:
        """One scheduled request into ``output``: its table grows by the blocks it got; the runner gets
        what changed for a request that has a row, everything for one that needs a row."""
        request_id = request.request_id
        request.block_ids.extend(new_block_ids)
        output.scheduled_requests.append(request)
        output.num_scheduled_tokens[request_id] = num_new_tokens
        if request_id in self._in_batch:  # it has a row: send what changed
            cached = output.scheduled_cached_reqs
            cached.req_ids.append(request_id)
            cached.new_block_ids.append(list(new_block_ids))
            cached.num_computed_tokens.append(request.num_computed_tokens)
        else:  # it needs a row: send everything
            output.scheduled_new_reqs.append(NewRequestData(request_id, list(request.all_token_ids),
                                                            list(request.block_ids), request.num_computed_tokens))
