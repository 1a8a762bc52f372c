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

Everything else is given: ``Request``, ``SchedulerOutput``, ``Engine.__init__``, ``add_request``,
``step``, ``generate``; the KV-cache manager is lab 02-05's reference solution (over lab 02-01's block
pool), the model runner is ``_runner.py``. Write the stubs below in the README's order, then run
``LAB_IMPL=starter pytest -q phase-99-capstone/labs/lab-01-serving-engine``.
"""

from __future__ import annotations

import enum
import operator
from collections import deque
from dataclasses import dataclass, field

from _runner import ModelRunner, StepInputs, build_model, tiny_config  # noqa: F401  (given; re-exported)

import labkit

_manager = labkit.load_reference("02-05")  # KVCacheManager and its Request, over lab 02-01's BlockPool
KVCacheManager = _manager.KVCacheManager


# --------------------------------------------------------------------------------------------
# Requests and the scheduler's output (given)
# --------------------------------------------------------------------------------------------


class RequestStatus(enum.Enum):
    WAITING = "waiting"  # in the waiting queue, never run
    RUNNING = "running"  # in the running list: holds blocks
    PREEMPTED = "preempted"  # back in the waiting queue, blocks freed, to be recomputed
    FINISHED = "finished"  # done: blocks freed


@dataclass(eq=False)
class Request(_manager.Request):
    """A request as the engine sees it: lab 02-05's request (``request_id``, ``prompt_token_ids``,
    ``output_token_ids``, ``num_computed_tokens``, ``block_hashes``) plus what serving adds."""

    max_new_tokens: int = 16
    status: RequestStatus = RequestStatus.WAITING
    num_cached_tokens: int = -1  # prefix-cache hit tokens at its first admission; -1 until admitted
    num_preemptions: int = 0
    block_ids: list[int] = field(default_factory=list)  # the runner's copy of its block table
    logits: list = field(default_factory=list)  # the logits of each output token, if the engine keeps them
    _token_ids: list[int] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._token_ids = list(self.prompt_token_ids) + list(self.output_token_ids)

    @property
    def all_token_ids(self) -> list[int]:
        """Prompt then output tokens (one list kept up to date: no copy per step)."""
        return self._token_ids

    @property
    def num_tokens(self) -> int:
        return len(self._token_ids)

    def append_output_token_ids(self, token_ids: list[int]) -> None:
        self.output_token_ids.extend(token_ids)
        self._token_ids.extend(token_ids)


@dataclass
class SchedulerOutput:
    """What one ``schedule`` call decided, in the order the batch runs."""

    scheduled_requests: list[Request] = field(default_factory=list)
    num_scheduled_tokens: dict[str, int] = field(default_factory=dict)  # request id -> tokens computed now
    new_block_ids: dict[str, list[int]] = field(default_factory=dict)  # request id -> blocks it got now
    preempted_req_ids: list[str] = field(default_factory=list)

    @property
    def total_num_scheduled_tokens(self) -> int:
        return sum(self.num_scheduled_tokens.values())


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class Engine:
    """Continuous batching over a paged KV cache of ``num_gpu_blocks`` blocks of ``block_size`` tokens.

    - ``max_num_seqs``: the most requests running at once.
    - ``max_num_batched_tokens``: the token budget of one step (prefill chunks and decode tokens).
    - ``enable_prefix_caching``: new requests reuse the cached blocks of a shared prompt prefix.
    - ``backend``: the runner's attention, ``"reference"`` (CPU) or ``"triton"`` (GPU); default by device.
    - ``keep_logits``: keep each output token's logits on its request (``request.logits``), for tests.

    The engine takes the model over (its attention becomes the course's). Queues are plain attributes:
    ``waiting`` (a deque), ``running`` (a list, in admission order), ``finished`` (by request id).
    """

    def __init__(self, model, num_gpu_blocks: int, block_size: int = 16, max_num_seqs: int = 8,
                 max_num_batched_tokens: int = 64, enable_prefix_caching: bool = True, backend: str | None = None,
                 keep_logits: bool = False) -> None:
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
        self.kv_manager = KVCacheManager(num_gpu_blocks, block_size, enable_caching=enable_prefix_caching)
        self.runner = ModelRunner(model, num_gpu_blocks, block_size, backend)
        self.max_model_len = self.runner.max_model_len
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.finished: dict[str, Request] = {}
        self.requests: dict[str, Request] = {}  # every request ever added, by id
        self.num_steps = 0
        self.last_inputs: StepInputs | None = None  # the batch of the last step (to inspect it)

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
        # The K/V of every token but the last output token is written: the request alone must fit.
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
        return bool(self.waiting or self.running)

    def step(self) -> SchedulerOutput:
        """One engine step: schedule, prepare the batch, run the model, sample, update."""
        scheduler_output = self.schedule()
        if not scheduler_output.scheduled_requests:
            if self.has_unfinished_requests():
                raise RuntimeError(f"step {self.num_steps}: nothing was scheduled although {len(self.waiting)} "
                                   f"requests wait and {len(self.running)} run")
            return scheduler_output
        inputs = self.prepare_inputs(scheduler_output)
        logits = self.runner.execute_model(inputs)
        sampled = self.runner.sample(logits)
        emitted_before = [len(r.output_token_ids) for r in scheduler_output.scheduled_requests]
        self.update_from_output(scheduler_output, sampled)
        if self.keep_logits:
            for row, (request, before) in enumerate(zip(scheduler_output.scheduled_requests, emitted_before,
                                                        strict=True)):
                if len(request.output_token_ids) > before:
                    request.logits.append(logits[row].cpu())
        self.last_inputs = inputs
        self.num_steps += 1
        return scheduler_output

    def generate(self, prompts: dict, max_new_tokens=16, max_steps: int = 100_000) -> dict[str, list[int]]:
        """Serve ``prompts`` (request id -> prompt token ids) to the end; ``max_new_tokens`` is one int or a
        dict by request id. Returns each request's output token ids."""
        for request_id, prompt in prompts.items():
            limit = max_new_tokens[request_id] if isinstance(max_new_tokens, dict) else max_new_tokens
            self.add_request(request_id, prompt, limit)
        while self.has_unfinished_requests():
            if self.num_steps >= max_steps:
                raise RuntimeError(f"still unfinished after {max_steps} steps")
            self.step()
        return {request_id: list(self.requests[request_id].output_token_ids) for request_id in prompts}

    # ---------------------------------------------------------------- step 1 and 2: schedule

    def schedule(self) -> SchedulerOutput:
        """This step's batch, as a ``SchedulerOutput`` (README steps 1 and 2).

        - ``scheduled_requests``: the requests that compute tokens this step, in batch order: the running
          requests that were scheduled, in their order in ``self.running``, then the newly admitted ones.
        - ``num_scheduled_tokens``: per request, the tokens it computes now: at least 1, together at most
          ``self.max_num_batched_tokens``. A request computes the next of its tokens not yet in the cache
          (``num_tokens - num_computed_tokens`` of them remain): all of them if the budget allows, else as
          many as it allows (a prefill chunk). Running requests are served first, in order.
        - ``new_block_ids``: per request, the ids of the blocks it got this step from the KV-cache manager
          (``allocate_slots``; ``[]`` when its last block had room). A newly admitted request's list starts
          with its prefix-cache hits (``get_computed_blocks``), then its new blocks.
        - ``preempted_req_ids``: the requests preempted this step. When the pool has no room for a running
          request, the running request admitted last (maybe this one) is preempted (``_preempt``) and the
          allocation tried again; a request that preempted itself is not scheduled, nor is anyone after it.

        Waiting requests are admitted first come, first served, while the budget lasts, fewer than
        ``self.max_num_seqs`` requests run, and no request was preempted this step; admission stops at the
        first request whose tokens do not fit in the pool (it keeps its place at the head of the queue).
        An admitted request leaves ``self.waiting`` for the end of ``self.running`` with status RUNNING, its
        hit tokens counted as computed (``num_computed_tokens``) and, at its first admission only, recorded
        in ``num_cached_tokens``.
        """
        raise NotImplementedError("schedule: not implemented yet (README steps 1 and 2: serve the running "
                                  "requests, then admit waiting ones under the token budget)")

    @staticmethod
    def _add_to_batch(output: SchedulerOutput, request: Request, num_new_tokens: int, new_blocks) -> None:
        output.scheduled_requests.append(request)
        output.num_scheduled_tokens[request.request_id] = num_new_tokens
        output.new_block_ids[request.request_id] = [block.block_id for block in new_blocks]

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
        it leaves ``self.running`` for ``self.finished`` (by id) with status FINISHED. Returns the requests
        finished in this step.
        """
        raise NotImplementedError("update_from_output: not implemented yet (README step 4: advance the requests, "
                                  "append their tokens, finish and free)")
