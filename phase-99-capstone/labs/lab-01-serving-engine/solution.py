"""Lab 99-01, reference solution: a serving engine that runs a real transformer through the course's
paged KV cache and kernels.

One engine step, in the order ``step`` runs it:

1. ``schedule``: decide who runs and how many tokens each computes. Running requests first, each
   catching up by as many tokens as the token budget leaves (chunked prefill); when the pool has no
   block for one of them, the most recently admitted request is preempted (its blocks freed, its
   progress reset, back to the front of the queue). Then waiting requests, first come first served,
   each starting after its prefix-cache hits, while budget, seats and blocks last.
2. ``prepare_inputs``: the flattened batch: token ids, positions, the slot of each new token, block
   tables, ``query_start_loc``, ``seq_lens`` and the rows to sample.
3. (given) ``ModelRunner.execute_model``: the forward pass; every layer writes its keys and values
   through the slot mapping and attends over the paged cache.
4. ``update_from_output``: advance each request, append its greedy token when its chunk reached the
   end of its tokens, finish and free the requests that are done.

The KV-cache manager is lab 02-05's reference solution (over lab 02-01's block pool); the model
runner (``_runner.py``) is given. Names follow vLLM v0.10.1's v1 engine
(``vllm/v1/core/sched/scheduler.py``, ``vllm/v1/request.py``, ``vllm/v1/worker/gpu_model_runner.py``).
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
        """Decide this step's batch (README steps 1 and 2)."""
        output = SchedulerOutput()
        budget = self.max_num_batched_tokens

        # Step 1: the running requests, in admission order. Each catches up by as many of its
        # uncomputed tokens as the budget allows: the rest of its prompt, or its last sampled token.
        index = 0
        while index < len(self.running) and budget > 0:
            request = self.running[index]
            num_new_tokens = min(request.num_tokens - request.num_computed_tokens, budget)
            new_blocks = self.kv_manager.allocate_slots(request, num_new_tokens)
            while new_blocks is None:
                # No block for it: preempt the most recently admitted request, then try again.
                victim = self.running.pop()
                self._preempt(victim)
                output.preempted_req_ids.append(victim.request_id)
                if victim is request:
                    break  # it was the last one: nobody left to make room for
                new_blocks = self.kv_manager.allocate_slots(request, num_new_tokens)
            if new_blocks is None:
                break
            self._add_to_batch(output, request, num_new_tokens, new_blocks)
            budget -= num_new_tokens
            index += 1

        # Step 2: the waiting requests, first come first served, while the budget, the seats and the
        # blocks last. Not in a step that had to preempt: memory is short already.
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs and not output.preempted_req_ids:
            request = self.waiting[0]
            # Its prefix-cache hits: full blocks whose keys and values are already in the cache.
            hits, num_hit_tokens = self.kv_manager.get_computed_blocks(request)
            num_new_tokens = min(request.num_tokens - num_hit_tokens, budget)
            new_blocks = self.kv_manager.allocate_slots(request, num_new_tokens, num_hit_tokens, hits)
            if new_blocks is None:
                break  # not enough blocks: it waits, and so does everyone behind it
            self.waiting.popleft()
            request.num_computed_tokens = num_hit_tokens  # the hits are computed: never again
            if request.num_cached_tokens < 0:
                request.num_cached_tokens = num_hit_tokens
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            self._add_to_batch(output, request, num_new_tokens, hits + new_blocks)
            budget -= num_new_tokens
        return output

    @staticmethod
    def _add_to_batch(output: SchedulerOutput, request: Request, num_new_tokens: int, new_blocks) -> None:
        output.scheduled_requests.append(request)
        output.num_scheduled_tokens[request.request_id] = num_new_tokens
        output.new_block_ids[request.request_id] = [block.block_id for block in new_blocks]

    def _preempt(self, request: Request) -> None:
        """Free a running request's blocks and send it back to the front of the waiting queue; it will
        recompute its tokens (those still cached come back as prefix-cache hits)."""
        self.kv_manager.free(request)
        request.block_ids = []
        request.num_computed_tokens = 0
        request.status = RequestStatus.PREEMPTED
        request.num_preemptions += 1
        self.waiting.appendleft(request)

    # ---------------------------------------------------------------- step 3: the batch

    def prepare_inputs(self, scheduler_output: SchedulerOutput) -> StepInputs:
        """The flattened batch of the scheduled requests, in their order (README step 3)."""
        inputs = StepInputs()
        block_size = self.block_size
        for request in scheduler_output.scheduled_requests:
            request_id = request.request_id
            num_new_tokens = scheduler_output.num_scheduled_tokens[request_id]
            # The block table grows first: the new tokens' slots may be in blocks it got this step.
            request.block_ids.extend(scheduler_output.new_block_ids[request_id])
            table = request.block_ids
            start = request.num_computed_tokens  # the chunk continues where the cache ends
            positions = range(start, start + num_new_tokens)
            inputs.input_ids.extend(request.all_token_ids[start : start + num_new_tokens])
            inputs.positions.extend(positions)
            # Lab 02-06's slot mapping: block table[p // block_size] * block_size + p % block_size.
            inputs.slot_mapping.extend(table[p // block_size] * block_size + p % block_size for p in positions)
            inputs.block_tables.append(list(table))
            inputs.seq_lens.append(start + num_new_tokens)  # the cache once this chunk is written
            inputs.query_start_loc.append(inputs.query_start_loc[-1] + num_new_tokens)
            inputs.logits_indices.append(inputs.query_start_loc[-1] - 1)  # the chunk's last token
        return inputs

    # ---------------------------------------------------------------- step 4: after the forward pass

    def update_from_output(self, scheduler_output: SchedulerOutput, sampled_token_ids: list[int]) -> list[Request]:
        """Advance the scheduled requests by their tokens; append each sampled token whose chunk completed
        its request's tokens; finish and free the requests that reached ``max_new_tokens`` (README step 4).
        Returns the requests finished in this step."""
        finished = []
        for request, token in zip(scheduler_output.scheduled_requests, sampled_token_ids, strict=True):
            request.num_computed_tokens += scheduler_output.num_scheduled_tokens[request.request_id]
            if request.num_computed_tokens < request.num_tokens:
                continue  # a prefill chunk that is not the prompt's last: its sample means nothing
            request.append_output_token_ids([token])
            if len(request.output_token_ids) >= request.max_new_tokens:
                finished.append(request)
        for request in finished:
            self.kv_manager.free(request)
            request.status = RequestStatus.FINISHED
            self.finished[request.request_id] = request
        if finished:
            self.running = [r for r in self.running if r.status is not RequestStatus.FINISHED]
        return finished
