"""Lab 99-03, your work: the model at the roofline.

Lab 99-02's engine (its scheduling, its persistent batch, its graphs: all given) runs your forward
pass. In the README's order, each step a piece of it that fast engines fuse:

1. Merged weights (``merge_layer_weights``, ``split_qkv``): one GEMM for q, k and v, one for gate and up.
2. Fused norms and activation (``_rms_norm_kernel``, ``rms_norm``, ``fused_add_rms_norm``;
   ``_silu_and_mul_kernel``, ``silu_and_mul``).
3. The rotary embedding fused with the KV-cache write (``_rotary_and_cache_kernel``, ``rotary_and_cache``).
4. Greedy sampling on the GPU (``_argmax_kernel``, ``argmax_rows``, ``sample_greedy``).
5. The decode attention tuned for the model's shapes (``choose_decode_config``, ``decode_attention``).

Given, imported below by name: the runner and the engine your functions plug into, ``LayerWeights``
(what step 1 returns), ``rotary_cos_sin`` (the table step 3 reads), ``PAD_SLOT_ID`` (``_fused_runner.py``);
rows and warps per program, the input checks (call them first), step 5's settings and lab 04-06's
kernels with their launch (``_kernel_host.py``). The kernels' signatures are the solution's (a
maintainer test checks it). Write the stubs in the README's order, then run
``LAB_IMPL=starter pytest -q phase-99-capstone/labs/lab-03-model-at-the-roofline``.
"""

from __future__ import annotations

import math  # noqa: F401  (step 5 may want it)

from labkit import triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402, F401
import torch.nn.functional as F  # noqa: E402, F401
import triton  # noqa: E402, F401
import triton.language as tl  # noqa: E402

# Given (_fused_runner.py): the runner and the engine your functions plug into, what step 1 returns,
# the rotary table of step 3, the padding slot.
from _fused_runner import (  # noqa: E402, F401
    FUSED_STEPS,
    PAD_SLOT_ID,
    FusedEngine,
    FusedModelRunnerBase,
    LayerWeights,
    rotary_cos_sin,
)

# Given (_kernel_host.py): rows and warps per program, the input checks (call them first), step 5's settings
# and lab 04-06's kernels with their launch.
from _kernel_host import (  # noqa: E402, F401
    DECODE_NUM_STAGES,
    DECODE_NUM_WARPS,
    MAX_TILE_TOKENS,
    MIN_SPLIT_TILES,
    MIN_TILE_TOKENS,
    TILE_BYTES,
    WAVES,
    DecodeConfig,
    check_argmax,
    check_decode,
    check_merge,
    check_rms_norm,
    check_rotary_and_cache,
    check_sample,
    check_silu_and_mul,
    check_split_qkv,
    launch_partition,
    launch_reduce,
    num_warps_for,
    partition_size,
    rows_per_program,
)

# --------------------------------------------------------------------------------------------
# Step 1: merged weights
# --------------------------------------------------------------------------------------------


def merge_layer_weights(layer) -> LayerWeights:
    """One decoder layer's weights for the fused forward pass (README step 1): q's, k's and v's rows
    stacked into one ``[out, in]`` matrix, gate's and up's into another (copied once, at load), and the
    layer's other weights as they are. ``layer``: a transformers ``LlamaDecoderLayer`` without biases
    (``check_merge`` says so). ``LayerWeights``' docstring lists the fields."""
    raise NotImplementedError("merge_layer_weights: not implemented yet (README step 1: stack q, k, v's rows into "
                              "one weight, gate and up's into another)")


def split_qkv(qkv, num_heads: int, num_kv_heads: int, head_dim: int):
    """``(q, k, v)`` of the merged projection's output ``qkv [tokens, (num_heads + 2 * num_kv_heads) *
    head_dim]`` (README step 1): views shaped ``[tokens, num_heads, head_dim]``, ``[tokens,
    num_kv_heads, head_dim]`` twice, sharing ``qkv``'s memory (no copy)."""
    raise NotImplementedError("split_qkv: not implemented yet (README step 1: three views of the merged output)")


# --------------------------------------------------------------------------------------------
# Step 2: the residual add and RMSNorm in one kernel; SiLU-and-mul in another
# --------------------------------------------------------------------------------------------


@triton.jit
def _rms_norm_kernel(
    x_ptr, residual_ptr, weight_ptr, out_ptr, num_rows, hidden, stride_x, stride_residual, stride_out, eps,
    ADD_RESIDUAL: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    """Yours, step 2. Rows ``pid * ROWS ..`` (those below ``num_rows``) of ``x`` ``[num_rows, hidden]``
    (row ``i`` at ``x_ptr + i * stride_x``, its ``hidden`` values contiguous; ``BLOCK``: a power of two
    >= hidden).

    With ``ADD_RESIDUAL``: ``residual[i] += x[i]`` in place (the sum rounded to the input's dtype, as
    the model adds), and the row normed below is that new residual; without, the row is ``x[i]``.
    ``out[i] = row / sqrt(mean(row ** 2) + eps) * weight``: statistics in float32, the normalized row
    rounded to the input's dtype before the weight multiplies it (transformers' ``LlamaRMSNorm``)."""
    pass


def rms_norm(x, weight, eps: float, out=None):
    """RMSNorm of each row of ``x`` ``[rows, hidden]`` (README step 2): ``x / sqrt(mean(x ** 2) + eps) *
    weight``, statistics in float32, as transformers' ``LlamaRMSNorm`` computes it. ``x``: float32,
    float16 or bfloat16, rows possibly strided, last dimension contiguous; ``weight`` ``[hidden]``.
    Writes and returns ``out`` (a new tensor like ``x``, or the one given); ``x`` is left unchanged.
    One Triton launch."""
    raise NotImplementedError("rms_norm: not implemented yet (README step 2: one program per row, the whole row "
                              "in registers)")


def fused_add_rms_norm(x, residual, weight, eps: float, out=None):
    """The residual add and the next RMSNorm in one kernel (README step 2; vLLM's ``fused_add_rms_norm``):
    ``residual += x`` in place (the new residual stream, rounded to its dtype), then ``out = rms_norm(
    residual, weight, eps)``. ``x``, ``residual``: ``[rows, hidden]`` of one dtype (rows possibly strided,
    last dimension contiguous). Returns ``(out, residual)``: the norm of the new residual, and the new
    residual itself. One Triton launch."""
    raise NotImplementedError("fused_add_rms_norm: not implemented yet (README step 2: the add and the norm in "
                              "one launch, the new residual written back)")


@triton.jit
def _silu_and_mul_kernel(
    gate_up_ptr, out_ptr, num_rows, width, stride_in, stride_out, ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    """Yours, step 2. Rows ``pid(0) * ROWS ..``, columns ``pid(1) * BLOCK ..`` (those below ``num_rows``
    and ``width``) of ``out [num_rows, width]``: ``out[i, j] = silu(gate[i, j]) * up[i, j]`` with
    ``gate[i, j]`` at ``gate_up_ptr + i * stride_in + j`` and ``up[i, j]`` ``width`` further; the SiLU
    rounded to the input's dtype before the product, as transformers' ``act_fn(gate) * up`` rounds it."""
    pass


SILU_BLOCK = 1024  # columns per program of _silu_and_mul_kernel (the solution's choice)


def silu_and_mul(gate_up, out=None):
    """The MLP's activation (README step 2; vLLM's ``SiluAndMul``): ``gate_up [rows, 2 * intermediate]``
    holds the gate projection's columns, then the up projection's (step 1's merged GEMM); returns
    ``out [rows, intermediate] = silu(gate) * up`` (a new tensor, or the one given), in ``gate_up``'s
    dtype. One Triton launch."""
    raise NotImplementedError("silu_and_mul: not implemented yet (README step 2: SiLU of the first half times the "
                              "second, one launch)")


# --------------------------------------------------------------------------------------------
# Step 3: the rotary embedding fused with the KV-cache write
# --------------------------------------------------------------------------------------------


@triton.jit
def _rotary_pairs(c, half: tl.constexpr):
    """Yours, step 3 (a helper of the kernel below; the solution uses it, you may not). Column ``c`` of a
    tile over the heads' first halves (``half`` columns per head): its head, its angle (the index into
    a row of cosines), and the two dimensions of the head that turn together by that angle: ``i`` and
    ``i + half`` (transformers' ``rotate_half``)."""
    pass


@triton.jit
def _rotate(x1, x2, cos, sin):
    """Yours, step 3 (a helper too): a pair of dimensions turned by the angle whose cosine and sine are
    given."""
    pass


@triton.jit
def _rotary_and_cache_kernel(
    qkv_ptr, positions_ptr, cos_sin_ptr, slot_mapping_ptr, q_out_ptr, k_cache_ptr, v_cache_ptr,
    num_tokens, stride_qkv, stride_q_token, stride_q_head, stride_cos_sin, block_size,
    stride_block, stride_slot, stride_head,
    NUM_HEADS: tl.constexpr, NUM_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr,
    Q_BLOCK: tl.constexpr, K_BLOCK: tl.constexpr, V_BLOCK: tl.constexpr,
):
    """Yours, step 3. Tokens ``pid * ROWS ..`` (those below ``num_tokens``). Token ``t``'s row of ``qkv``
    (at ``qkv_ptr + t * stride_qkv``) holds ``NUM_HEADS`` query heads, then ``NUM_KV_HEADS`` key heads,
    then as many value heads, ``HEAD_DIM`` values each. At position ``p = positions[t]``, with ``c``,
    ``s`` the first and second halves of ``cos_sin``'s row ``p``, a head ``x = (x1, x2)`` (its two
    halves) turns into ``(x1 * c - x2 * s, x2 * c + x1 * s)`` (transformers' ``q * cos + rotate_half(q)
    * sin``), in float32.

    - Rotated queries go to ``q_out[t, h, :]`` (at ``q_out_ptr + t * stride_q_token + h * stride_q_head``).
    - With ``slot = slot_mapping[t] >= 0``: rotated keys and the values as they are go to the cache row
      of that slot, ``(slot // block_size) * stride_block + (slot % block_size) * stride_slot + h *
      stride_head`` of ``k_cache`` and ``v_cache``. Slot -1 (padding) writes nothing into either.

    ``Q_BLOCK``, ``K_BLOCK``, ``V_BLOCK``: powers of two at least ``NUM_HEADS * HEAD_DIM / 2``,
    ``NUM_KV_HEADS * HEAD_DIM / 2`` and ``NUM_KV_HEADS * HEAD_DIM``."""
    pass


def rotary_and_cache(qkv, positions, cos_sin, k_cache, v_cache, slot_mapping, q_out, num_heads: int,
                     num_kv_heads: int):
    """The rotary embedding and the KV-cache write in one kernel (README step 3).

    ``qkv [tokens, (num_heads + 2 * num_kv_heads) * head_dim]``: step 1's merged output (rows possibly
    strided, last dimension contiguous); ``positions``, ``slot_mapping`` ``[tokens]`` int64 (or int32);
    ``cos_sin`` float32 ``[max_position, head_dim]`` (``rotary_cos_sin``: cosines, then sines; rows possibly
    strided); ``k_cache``, ``v_cache`` ``[num_blocks, block_size, num_kv_heads, head_dim]`` in ``qkv``'s dtype
    (any strides, last dimension contiguous); ``q_out [tokens, num_heads, head_dim]`` in ``qkv``'s dtype
    (any strides, last dimension contiguous).

    Each token's queries and keys turn by its position (transformers' convention: dimension ``i``
    with ``i + head_dim / 2``); the rotated queries go to ``q_out``; the rotated keys and the values go
    to the cache row of the token's slot, except for a token whose slot is -1 (padding), which writes
    nothing there. Returns ``q_out``. One Triton launch."""
    raise NotImplementedError("rotary_and_cache: not implemented yet (README step 3: rotate q and k by position, "
                              "write k and v at the slot, skip slot -1)")


# --------------------------------------------------------------------------------------------
# Step 4: greedy sampling on the GPU
# --------------------------------------------------------------------------------------------


@triton.jit
def _argmax_kernel(logits_ptr, out_ptr, num_rows, vocab_size, stride_row, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Yours, step 4. Rows ``pid * ROWS ..`` (those below ``num_rows``) of ``logits`` (row ``i`` at
    ``logits_ptr + i * stride_row``): ``out[i]`` (int64) = the first column of the largest value among
    columns ``0 .. vocab_size - 1`` (the row may be wider: padding columns are never read), ``BLOCK``
    columns at a time."""
    pass


ARGMAX_BLOCK = 4096  # columns per iteration of _argmax_kernel (the solution's choice)


def argmax_rows(logits, vocab_size: int, out=None):
    """The greedy token of each row (README step 4): for ``logits [rows, width]`` (rows possibly strided,
    last dimension contiguous, ``width >= vocab_size``: the columns past ``vocab_size`` are padding and
    never count), the first column of each row's largest value among its first ``vocab_size``, as
    int64 ``[rows]`` into ``out`` (a new tensor, or the one given), on the logits' device. The logits
    are finite. One Triton launch; nothing is copied to the host."""
    raise NotImplementedError("argmax_rows: not implemented yet (README step 4: the first largest of the real "
                              "vocabulary, on the device)")


def sample_greedy(hidden, residual, logits_indices, norm_weight, eps: float, lm_head_weight, vocab_size: int,
                  sampled, logits=None):
    """The end of the forward pass for the rows that sample (README step 4).

    ``hidden``, ``residual`` ``[tokens, hidden_size]``: the last layer's MLP output and the residual
    stream before its add. For each row ``logits_indices[j]``: the final residual add, the final RMSNorm
    (``norm_weight``, ``eps``), the head ``lm_head_weight [padded_vocab, hidden_size]`` (rows past
    ``vocab_size`` are padding), and its greedy token into ``sampled[j]`` (int64, on the device). Only
    those rows go through the norm and the head; ``residual`` is left unchanged. With ``logits``
    (float32 ``[len(logits_indices), vocab_size]``), the rows' logits are written there too.
    Returns ``sampled``."""
    raise NotImplementedError("sample_greedy: not implemented yet (README step 4: norm and head for the rows that "
                              "sample only, then argmax_rows)")


# --------------------------------------------------------------------------------------------
# Step 5: the decode attention, tuned for the model's shapes
# --------------------------------------------------------------------------------------------


def choose_decode_config(num_seqs: int, num_kv_heads: int, head_dim: int, itemsize: int, capacity: int,
                         num_sms: int) -> DecodeConfig:
    """How to launch the decode attention for a captured batch of ``num_seqs`` sequences (README step
    5): KV heads of ``head_dim`` values of ``itemsize`` bytes, block tables of ``capacity`` tokens, a
    GPU of ``num_sms`` streaming multiprocessors.

    - ``tile_tokens``: ``TILE_BYTES`` of keys per tile, in tokens: ``TILE_BYTES // (head_dim *
      itemsize)`` rounded down to a power of two, within ``[MIN_TILE_TOKENS, MAX_TILE_TOKENS]``;
    - ``num_splits``: as many ``(sequence, KV head, split)`` programs as ``WAVES`` per SM hold (``WAVES *
      num_sms // (num_seqs * num_kv_heads)`` splits, rounded down), rounded down to a power of two, but
      no split shorter than ``MIN_SPLIT_TILES`` tiles of the table's ``capacity``; at least 1;
    - ``num_warps``, ``num_stages``: ``DECODE_NUM_WARPS``, ``DECODE_NUM_STAGES``."""
    raise NotImplementedError("choose_decode_config: not implemented yet (README step 5: a tile sized in bytes, "
                              "splits for the batch)")


def decode_attention(q, k_cache, v_cache, block_tables, seq_lens, out, config: DecodeConfig):
    """One decode step of attention (README step 5), written into ``out``: lab 04-06's ``paged_decode``
    with ``config``'s split count, tile, warps and stages.

    ``q`` ``[batch, num_heads, head_dim]`` (float32, float16 or bfloat16) and ``out`` (like ``q``)
    contiguous; ``k_cache``, ``v_cache`` ``[num_blocks, block_size, num_kv_heads, head_dim]`` in ``q``'s
    dtype; ``block_tables`` ``[batch, max_blocks]`` int32 (contiguous), ``seq_lens`` ``[batch]`` int32.
    ``out[b, h]`` = softmax(q[b, h] . K^T / sqrt(head_dim)) V over sequence ``b``'s first ``seq_lens[b]``
    tokens (KV head ``h // (num_heads / num_kv_heads)``); zeros for a sequence of length 0. With one
    split, one launch that writes ``out`` itself; with more, the splits' summaries (``partition_size``
    tokens each, in float32) and the reduce that merges them into ``out``. Returns ``out``."""
    raise NotImplementedError("decode_attention: not implemented yet (README step 5: lab 04-06's kernels with the "
                              "configuration, straight into out)")


# --------------------------------------------------------------------------------------------
# The runner and the engine: lab 99-02's, with your functions plugged in (given)
# --------------------------------------------------------------------------------------------


class ModelRunner(FusedModelRunnerBase):
    """Lab 99-02's model runner running the fused forward pass (``_fused_runner.py``) with your functions."""

    merge_layer_weights = staticmethod(merge_layer_weights)
    split_qkv = staticmethod(split_qkv)
    rms_norm = staticmethod(rms_norm)
    fused_add_rms_norm = staticmethod(fused_add_rms_norm)
    silu_and_mul = staticmethod(silu_and_mul)
    rotary_and_cache = staticmethod(rotary_and_cache)
    argmax_rows = staticmethod(argmax_rows)
    sample_greedy = staticmethod(sample_greedy)
    choose_decode_config = staticmethod(choose_decode_config)
    decode_attention = staticmethod(decode_attention)


class Engine(FusedEngine):
    """Lab 99-02's engine over your runner (``_fused_runner.FusedEngine``: its settings, ``fused_steps``)."""

    model_runner_class = ModelRunner
