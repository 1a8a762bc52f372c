"""Lab 02-02, your work: fragmentation, measured.

Two ways to hold the KV cache of a stream of requests in the same memory:

- **contiguous**: each request reserves ``max_len`` token slots when it is admitted and keeps them
  until it finishes, because nobody knows in advance how long its answer will be;
- **paged**: each request holds ``ceil(tokens / block_size)`` blocks of lab 02-01's ``BlockPool``,
  one more each time its tokens cross a block boundary.

The accounting functions count what each strategy reserves and what it actually uses; the two
``serve_*`` functions replay one request stream step by step with each strategy. Implement them
in order (README "Steps", steps 1-6), then run
``LAB_IMPL=starter pytest -q phase-02-paged-attention/labs/lab-02-fragmentation-viz``.

Units: a **slot** holds the keys and values of one token (in every layer); a block is
``block_size`` slots. Multiply by a model's KV bytes per token (lab 02-03) to get bytes.

The step model (both strategies): the step that admits a request computes its prompt's KV
(``prompt_len`` slots) and samples its first output token; each later step writes the KV of the
token sampled the step before (one slot more) and samples the next one. After ``output_len``
samples the request finishes and its memory is released at the end of that step. Its KV therefore
peaks at ``prompt_len + output_len - 1`` tokens: the last sampled token's KV is never written.
"""

from __future__ import annotations

from collections import deque  # noqa: F401  (a queue for steps 5-6)

import _stream
import numpy as np  # noqa: F401  (the records and the tradeoff are numpy arrays)
from _stream import _as_arrays, _check_lengths, _check_positive, _check_stream, _timeline  # noqa: F401

# Given in _stream.py (read it, do not edit it): lab 02-01's reference allocator (its solution, not your
# own 02-01 file; block 0 is its null block), the input checks that turn bad input into a ValueError
# naming the argument (_check_positive, _check_lengths, _check_stream), and the records a replay
# returns (_timeline(num_requests) gives the empty dict, _as_arrays(timeline) turns its lists into
# int64 arrays). Call the checks first in your functions.
BlockPool = _stream.BlockPool


# ----------------------------------------------------------------------------- steps 1-2: one request


def blocks_needed(num_tokens, block_size):
    """The number of blocks of ``block_size`` slots that hold ``num_tokens`` tokens (0 for 0 tokens).

    Exact for any integer size (no float arithmetic), Python int or numpy integer (np.int32,
    np.uint64, ...). ValueError (naming the argument) for a ``block_size`` below 1 or a negative (or
    bool) ``num_tokens``: ``_check_positive`` does the first.
    """
    raise NotImplementedError(
        "blocks_needed: not implemented yet (README step 1: ceil(num_tokens / block_size) in integers)"
    )


def internal_fragmentation(num_tokens, block_size):
    """Slots a paged request of ``num_tokens`` tokens holds but does not use: the unwritten end of its
    last block. Between 0 and ``block_size - 1``; 0 when the tokens fill their blocks exactly. Any
    integer sizes, as for ``blocks_needed`` (numpy integers too, unsigned ones included), and the
    same ValueError (naming the argument) for a ``block_size`` below 1 or a negative ``num_tokens``."""
    raise NotImplementedError(
        "internal_fragmentation: not implemented yet (README step 2: the slots of the last block past the last token)"
    )


# ----------------------------------------------------------------------------- steps 3-4: one instant


def admit_contiguous(lengths, num_slots, max_len):
    """How many of the requests (``lengths``: tokens each, in queue order) run at once in ``num_slots``
    slots when every request reserves ``max_len`` contiguous slots.

    ValueError naming ``lengths`` when a request is longer than ``max_len``; an empty list gives 0.
    """
    raise NotImplementedError(
        "admit_contiguous: not implemented yet (README step 3: every request reserves max_len slots)"
    )


def admit_paged(lengths, num_blocks, block_size):
    """How many of the requests, taken in queue order, run at once in ``BlockPool(num_blocks)`` (lab
    02-01's pool: block 0 is the null block), each holding the blocks its length needs.

    First come, first served: the first request that does not fit stops the count, even if a later,
    smaller one would fit. Take the blocks from the pool (``get_num_free_blocks``, ``get_new_blocks``).
    ValueError naming ``block_size`` when it is below 1, even with no request.
    """
    raise NotImplementedError(
        "admit_paged: not implemented yet (README step 3: take each request's blocks from a BlockPool until one "
        "does not fit)"
    )


def block_size_tradeoff(lengths, block_sizes):
    """For each block size of ``block_sizes``: the slots the requests waste in their last blocks and
    the length of their block tables.

    ``lengths`` is a list of token counts or a 1-D array of any integer dtype (np.uint8 too).
    Returns a dict of arrays with one entry per block size, in the order given (a size given twice has
    two entries): ``block_size`` (int64), ``waste`` (int64:
    total slots past the requests' last tokens), ``waste_fraction`` (float64: waste over all the
    slots allocated), ``table_len`` (float64: mean blocks per request), ``max_table_len`` (int64).
    ValueError for an empty ``lengths``.
    """
    raise NotImplementedError(
        "block_size_tradeoff: not implemented yet (README step 4: waste and table length per block size)"
    )


# ----------------------------------------------------------------------------- steps 5-6: a stream over time


def serve_contiguous(stream, num_slots, max_len):
    """Replay ``stream`` (int array [num_requests, 3]: arrival step, prompt_len, output_len; leave it
    unchanged) with a contiguous allocator: each running request reserves ``max_len`` slots, so at
    most ``num_slots // max_len`` run at once; waiting requests are admitted first come, first served.

    Follows the README's step model. Returns the timeline dict: per step (int64 arrays) ``used``,
    ``reserved``, ``running``, ``waiting``; per request (int64) ``admitted_at``, ``finished_at``;
    ``preemptions`` (an int: 0 here). ValueError naming ``stream`` when a request's
    prompt_len + output_len exceeds ``max_len``, naming ``max_len`` when it exceeds ``num_slots``.
    """
    raise NotImplementedError(
        "serve_contiguous: not implemented yet (README step 5: admit while a max_len slab is free, record "
        "used/reserved each step, release finished requests)"
    )


def serve_paged(stream, num_blocks, block_size):
    """Replay ``stream`` with lab 02-01's ``BlockPool(num_blocks)``: blocks are taken as tokens arrive.

    Each step, in this order (README step 6): running requests, oldest first, take a block when their
    newest token starts one; if the pool has none, the newest running request is preempted (its
    blocks go back, it returns to the front of the queue and later recomputes its prompt and sampled
    tokens). Then waiting requests are admitted first come, first served while their blocks fit.
    Returns ``serve_contiguous``'s timeline plus ``block_tables``: per step, a dict {request index:
    [block ids]} of the running requests. ValueError naming ``stream`` when a request could never
    fit the pool.
    """
    raise NotImplementedError(
        "serve_paged: not implemented yet (README step 6: grow (preempting the newest when the pool is empty), "
        "admit, record, release, with a BlockPool)"
    )
