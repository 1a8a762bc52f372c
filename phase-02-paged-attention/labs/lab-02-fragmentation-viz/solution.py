"""Lab 02-02, reference solution: fragmentation, measured.

Two ways to hold the KV cache of a stream of requests in the same memory:

- **contiguous**: each request reserves ``max_len`` token slots when it is admitted and keeps them
  until it finishes, because nobody knows in advance how long its answer will be;
- **paged**: each request holds ``ceil(tokens / block_size)`` blocks of lab 02-01's ``BlockPool``,
  one more each time its tokens cross a block boundary.

The accounting functions count what each strategy reserves and what it actually uses; the two
``serve_*`` functions replay one request stream step by step with each strategy.

Units: a **slot** holds the keys and values of one token (in every layer); a block is
``block_size`` slots. Multiply by a model's KV bytes per token (lab 02-03) to get bytes.

The step model (both strategies): the step that admits a request computes its prompt's KV
(``prompt_len`` slots) and samples its first output token; each later step writes the KV of the
token sampled the step before (one slot more) and samples the next one. After ``output_len``
samples the request finishes and its memory is released at the end of that step. Its KV therefore
peaks at ``prompt_len + output_len - 1`` tokens: the last sampled token's KV is never written.
"""

from __future__ import annotations

from collections import deque

import _stream
import numpy as np
from _stream import _as_arrays, _check_lengths, _check_positive, _check_stream, _timeline

# Given in _stream.py: lab 02-01's reference allocator (never the learner's file; block 0 is its null
# block), the input checks (_check_positive, _check_lengths, _check_stream) and the timeline records
# (_timeline, _as_arrays).
BlockPool = _stream.BlockPool


# ----------------------------------------------------------------------------- steps 1-2: one request


def blocks_needed(num_tokens, block_size):
    """The number of blocks that hold ``num_tokens`` tokens: ``ceil(num_tokens / block_size)``."""
    block_size = _check_positive("block_size", block_size)
    if isinstance(num_tokens, bool) or not isinstance(num_tokens, int | np.integer) or num_tokens < 0:
        raise ValueError(f"num_tokens must be a non-negative integer, got {num_tokens!r}")
    return -(-int(num_tokens) // block_size)  # ceiling division in integers: no float rounding


def internal_fragmentation(num_tokens, block_size):
    """Slots a paged request holds but does not use: the unwritten end of its last block."""
    # In Python ints (blocks_needed has checked both): times a numpy block_size such as np.int32(16), the
    # product would be a fixed-width integer, which overflows, or refuses a Python int it cannot hold.
    return blocks_needed(num_tokens, block_size) * int(block_size) - int(num_tokens)


# ----------------------------------------------------------------------------- steps 3-4: one instant


def admit_contiguous(lengths, num_slots, max_len):
    """How many of the requests, taken in order, fit at once when each reserves ``max_len`` slots."""
    lengths = _check_lengths(lengths)
    num_slots, max_len = _check_positive("num_slots", num_slots), _check_positive("max_len", max_len)
    if any(n > max_len for n in lengths):
        raise ValueError(f"lengths: a request of {max(lengths)} tokens does not fit a max_len of {max_len}")
    # The length of a request does not matter: every reservation is max_len slots.
    return min(len(lengths), num_slots // max_len)


def admit_paged(lengths, num_blocks, block_size):
    """How many of the requests, taken in order, fit at once in a ``BlockPool(num_blocks)``, each
    holding the blocks its length needs. The first request that does not fit stops the count."""
    lengths = _check_lengths(lengths)
    pool = BlockPool(_check_positive("num_blocks", num_blocks))
    block_size = _check_positive("block_size", block_size)  # here, not only in blocks_needed: there may be no request
    admitted = 0
    for n in lengths:
        need = blocks_needed(n, block_size)
        if need > pool.get_num_free_blocks():
            break  # first come, first served: a later, smaller request does not jump the queue
        pool.get_new_blocks(need)
        admitted += 1
    return admitted


def block_size_tradeoff(lengths, block_sizes):
    """For each block size: the slots wasted in last blocks and the length of the block tables.

    Returns a dict of arrays, one entry per block size: ``block_size`` (int64), ``waste`` (int64,
    total slots allocated past the requests' last tokens), ``waste_fraction`` (float64, waste over
    allocated slots), ``table_len`` (float64, mean blocks per request), ``max_table_len`` (int64).
    """
    lengths = _check_lengths(lengths)
    if not lengths:
        raise ValueError("lengths must name at least one request")
    sizes = [_check_positive("block_sizes", b) for b in np.atleast_1d(block_sizes)]
    waste, fraction, table_len, max_table_len = [], [], [], []
    for b in sizes:
        tables = [blocks_needed(n, b) for n in lengths]
        wasted = sum(internal_fragmentation(n, b) for n in lengths)
        waste.append(wasted)
        fraction.append(wasted / (sum(tables) * b))
        table_len.append(sum(tables) / len(tables))
        max_table_len.append(max(tables))
    return {
        "block_size": np.array(sizes, dtype=np.int64),
        "waste": np.array(waste, dtype=np.int64),
        "waste_fraction": np.array(fraction, dtype=np.float64),
        "table_len": np.array(table_len, dtype=np.float64),
        "max_table_len": np.array(max_table_len, dtype=np.int64),
    }


# ----------------------------------------------------------------------------- steps 5-6: a stream over time


def serve_contiguous(stream, num_slots, max_len):
    """Replay ``stream`` with a contiguous allocator that reserves ``max_len`` slots per request.

    ``stream`` is an int array [num_requests, 3] of (arrival step, prompt_len, output_len). At most
    ``num_slots // max_len`` requests run at once; waiting requests are admitted first come, first
    served. Returns the timeline (see README): per step ``used``, ``reserved``, ``running``,
    ``waiting``; per request ``admitted_at``, ``finished_at``; ``preemptions`` (always 0 here).
    """
    stream = _check_stream(stream)
    num_slots, max_len = _check_positive("num_slots", num_slots), _check_positive("max_len", max_len)
    if max_len > num_slots:
        raise ValueError(f"max_len ({max_len}) is larger than the memory (num_slots={num_slots})")
    if len(stream) and (stream[:, 1] + stream[:, 2]).max() > max_len:
        raise ValueError(f"stream: prompt_len + output_len must be <= max_len ({max_len})")
    arrival, prompt, output = (stream[:, i].tolist() for i in range(3))
    capacity = num_slots // max_len
    timeline = _timeline(len(stream))
    sampled = [0] * len(stream)  # output tokens sampled so far, per request
    waiting = deque(sorted(range(len(stream)), key=lambda r: (arrival[r], r)))
    running: list[int] = []  # in admission order
    t = 0
    while waiting or running:
        while waiting and arrival[waiting[0]] <= t and len(running) < capacity:
            r = waiting.popleft()
            running.append(r)
            timeline["admitted_at"][r] = t
        timeline["used"].append(sum(prompt[r] + sampled[r] for r in running))
        timeline["reserved"].append(len(running) * max_len)  # the whole reservation, used or not
        timeline["running"].append(len(running))
        timeline["waiting"].append(sum(arrival[r] <= t for r in waiting))
        for r in running:
            sampled[r] += 1
            if sampled[r] == output[r]:
                timeline["finished_at"][r] = t
        running = [r for r in running if sampled[r] < output[r]]  # finished: released at the end of the step
        t += 1
    return _as_arrays(timeline)


def serve_paged(stream, num_blocks, block_size):
    """Replay ``stream`` with lab 02-01's ``BlockPool(num_blocks)``, blocks allocated on demand.

    Each step: running requests (oldest first) get a block when their next token starts one; when
    the pool is empty, the newest running request is preempted (its blocks freed; it goes back to
    the front of the queue and later recomputes its prompt and the tokens it had sampled). Then
    waiting requests are admitted first come, first served while their blocks fit. Returns the same
    timeline as ``serve_contiguous`` plus ``block_tables``: per step, a dict {request index: [block
    ids]} of the running requests.
    """
    stream = _check_stream(stream)
    num_blocks, block_size = _check_positive("num_blocks", num_blocks), _check_positive("block_size", block_size)
    if len(stream):
        peak = int((stream[:, 1] + stream[:, 2] - 1).max())
        if blocks_needed(peak, block_size) > num_blocks - 1:  # block 0 is the null block
            raise ValueError(f"stream: a request peaks at {peak} tokens, more than a pool of {num_blocks} blocks "
                             f"of {block_size} can ever hold (block 0 is the null block)")
    arrival, prompt, output = (stream[:, i].tolist() for i in range(3))
    pool = BlockPool(num_blocks)
    timeline = _timeline(len(stream))
    timeline["block_tables"] = []
    sampled = [0] * len(stream)
    tables: dict[int, list] = {}  # the running requests, in admission order -> their blocks
    waiting = deque(sorted(range(len(stream)), key=lambda r: (arrival[r], r)))

    def preempt_newest() -> int:
        victim = next(reversed(tables))
        pool.free_blocks(reversed(tables.pop(victim)))  # tail first, as vLLM frees
        waiting.appendleft(victim)
        timeline["preemptions"] += 1
        return victim

    t = 0
    while waiting or tables:
        for r in list(tables):  # grow: the token sampled last step needs a slot now
            if r not in tables:
                continue  # preempted earlier in this loop
            need = blocks_needed(prompt[r] + sampled[r], block_size) - len(tables[r])
            while need > pool.get_num_free_blocks():
                if preempt_newest() == r:
                    break
            if r in tables:
                tables[r] += pool.get_new_blocks(need)
        while waiting and arrival[waiting[0]] <= t:  # admit
            r = waiting[0]
            need = blocks_needed(prompt[r] + sampled[r], block_size)
            if need > pool.get_num_free_blocks():
                break
            tables[waiting.popleft()] = pool.get_new_blocks(need)
            if timeline["admitted_at"][r] < 0:
                timeline["admitted_at"][r] = t
        if not tables and waiting and arrival[waiting[0]] <= t:  # an empty pool fits any one request
            raise RuntimeError(f"step {t}: nothing runs, yet request {waiting[0]} does not fit the "
                               f"{pool.get_num_free_blocks()} free blocks: blocks were never given back")
        timeline["used"].append(sum(prompt[r] + sampled[r] for r in tables))
        timeline["reserved"].append(sum(len(blocks) for blocks in tables.values()) * block_size)
        timeline["running"].append(len(tables))
        timeline["waiting"].append(sum(arrival[r] <= t for r in waiting))
        timeline["block_tables"].append({r: [b.block_id for b in blocks] for r, blocks in tables.items()})
        for r in list(tables):
            sampled[r] += 1
            if sampled[r] == output[r]:
                timeline["finished_at"][r] = t
                pool.free_blocks(reversed(tables.pop(r)))
        t += 1
    return _as_arrays(timeline)
