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

The rest is given: ``_engine_base.py`` (``Request``, ``SchedulerOutput``, ``EngineBase``: the engine's
settings and queues, ``add_request``, ``step``, ``generate``, the checks ``step`` runs), lab 02-05's
KV-cache manager (over lab 02-01's block pool) and the model runner (``_runner.py``). Names follow vLLM
v0.22.1's v1 engine (``vllm/v1/core/sched/scheduler.py``, ``vllm/v1/request.py``,
``vllm/v1/worker/gpu_model_runner.py``).
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
    """Continuous batching over a paged KV cache (``EngineBase`` has the settings, the queues and the
    given methods): the four methods below are the engine step."""

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
            num_new_tokens = self.num_new_tokens(request, budget)  # given: at most the budget
            if num_new_tokens == 0:
                index += 1
                continue  # nothing to compute this step (never here; in lab 99-02's engine, yes)
            new_blocks = self.allocate_slots(request, num_new_tokens)
            while new_blocks is None:
                # No block for it: preempt the most recently admitted request, then try again.
                victim = self.running.pop()
                self._preempt(victim)
                output.preempted_req_ids.append(victim.request_id)
                if victim is request:
                    break  # it was the last one: nobody left to make room for
                new_blocks = self.allocate_slots(request, num_new_tokens)
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
        its request's tokens; finish and free the requests that reached ``max_new_tokens`` (README step 4),
        in the batch's order (the pool's free queue follows it: the next requests' block ids depend on it).
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
