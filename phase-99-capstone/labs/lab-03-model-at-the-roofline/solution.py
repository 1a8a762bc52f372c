"""Lab 99-03, reference solution: the model at the roofline.

Lab 99-02's engine keeps the GPU busy; this lab shrinks what it keeps the GPU busy with. A decode step
at full batch should cost what its matrix products and its KV cache cost (the physical bound), yet
lab 99-02's forward pass runs transformers' modules operator by operator. Five steps, each something
fast engines do (vLLM's merged linear layers and custom ops):

1. **Merged weights** (``merge_layer_weights``, ``split_qkv``): q, k and v from one GEMM, gate and up
   from another, the weights concatenated once at load.
2. **Fused norms and activation** (``rms_norm``, ``fused_add_rms_norm``, ``silu_and_mul``): the residual
   add and the RMSNorm in one Triton kernel that returns both the new residual and its norm; SiLU of
   the gate times the up projection in another.
3. **Rotary embedding fused with the KV-cache write** (``rotary_and_cache``): one kernel reads q, k and
   v from the merged GEMM's output, rotates q and k, writes k and v into the paged cache at
   ``slot_mapping`` (padding tokens, slot -1, write nothing) and hands q on.
4. **Greedy sampling on the GPU** (``argmax_rows``, ``sample_greedy``): the final norm and the head only
   for the rows that sample, the argmax over the real vocabulary, no logits row kept.
5. **The decode attention tuned for the model's shapes** (``choose_decode_config``,
   ``decode_attention``): lab 04-06's kernels, launched with a tile sized in bytes for this head
   size and a split count for each captured batch, writing straight into the attention's output.

The runner around them is lab 99-02's (``_fused_runner.py``); the kernels' host side, the checks and
lab 04-06's launches are in ``_kernel_host.py``; ``_launches.py`` counts launches for the tests.
"""

from __future__ import annotations

import math

from labkit import triton_env

BACKEND = triton_env.select_backend()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
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
    layer's other weights as they are. ``layer``: a transformers ``LlamaDecoderLayer`` without biases."""
    check_merge("merge_layer_weights", layer)
    attn, mlp = layer.self_attn, layer.mlp
    with torch.no_grad():
        return LayerWeights(
            qkv=torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),
            o=attn.o_proj.weight.detach(),
            gate_up=torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
            down=mlp.down_proj.weight.detach(),
            input_norm=layer.input_layernorm.weight.detach(),
            post_norm=layer.post_attention_layernorm.weight.detach(),
            eps=float(layer.input_layernorm.variance_epsilon),
        )


def split_qkv(qkv, num_heads: int, num_kv_heads: int, head_dim: int):
    """``(q, k, v)`` of the merged projection's output ``qkv [tokens, (num_heads + 2 * num_kv_heads) *
    head_dim]`` (README step 1): views shaped ``[tokens, num_heads, head_dim]``, ``[tokens,
    num_kv_heads, head_dim]`` twice, sharing ``qkv``'s memory (no copy)."""
    check_split_qkv("split_qkv", qkv, num_heads, num_kv_heads, head_dim)
    tokens = qkv.shape[0]
    q_width, kv_width = num_heads * head_dim, num_kv_heads * head_dim
    q = qkv[:, :q_width].view(tokens, num_heads, head_dim)
    k = qkv[:, q_width : q_width + kv_width].view(tokens, num_kv_heads, head_dim)
    v = qkv[:, q_width + kv_width :].view(tokens, num_kv_heads, head_dim)
    return q, k, v


# --------------------------------------------------------------------------------------------
# Step 2: the residual add and RMSNorm in one kernel; SiLU-and-mul in another
# --------------------------------------------------------------------------------------------


@triton.jit
def _rms_norm_kernel(
    x_ptr, residual_ptr, weight_ptr, out_ptr, num_rows, hidden, stride_x, stride_residual, stride_out, eps,
    ADD_RESIDUAL: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    """Rows ``pid * ROWS ..`` (those below ``num_rows``) of ``x`` ``[num_rows, hidden]`` (row ``i`` at
    ``x_ptr + i * stride_x``, its ``hidden`` values contiguous; ``BLOCK``: a power of two >= hidden).

    With ``ADD_RESIDUAL``: ``residual[i] += x[i]`` in place (the sum rounded to the input's dtype, as
    the model adds), and the row normed below is that new residual; without, the row is ``x[i]``.
    ``out[i] = row / sqrt(mean(row ** 2) + eps) * weight``: statistics in float32, the normalized row
    rounded to the input's dtype before the weight multiplies it (transformers' ``LlamaRMSNorm``)."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    row_ok = rows < num_rows
    col_ok = cols < hidden
    mask = row_ok[:, None] & col_ok[None, :]
    rows = rows.to(tl.int64)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    if ADD_RESIDUAL:
        res_ptrs = residual_ptr + rows[:, None] * stride_residual + cols[None, :]
        residual = tl.load(res_ptrs, mask=mask, other=0.0)
        x = (x.to(tl.float32) + residual.to(tl.float32)).to(residual.dtype)
        tl.store(res_ptrs, x, mask=mask)
    xf = x.to(tl.float32)
    # The mean over the row's hidden values only: the padding columns of the block hold zeros.
    variance = tl.sum(xf * xf, axis=1) / hidden
    normed = (xf * tl.rsqrt(variance + eps)[:, None]).to(x.dtype).to(tl.float32)
    weight = tl.load(weight_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = normed * weight[None, :]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


def _launch_rms_norm(x, residual, weight, eps: float, out) -> None:
    num_rows, hidden = x.shape
    if num_rows == 0 or hidden == 0:
        return
    rows = rows_per_program(num_rows, x.device)
    block = triton.next_power_of_2(hidden)
    res = x if residual is None else residual  # not read without ADD_RESIDUAL
    _rms_norm_kernel[(triton.cdiv(num_rows, rows),)](
        x, res, weight, out, num_rows, hidden, x.stride(0), res.stride(0), out.stride(0), float(eps),
        ADD_RESIDUAL=residual is not None, ROWS=rows, BLOCK=block, num_warps=num_warps_for(rows * block),
    )


def rms_norm(x, weight, eps: float, out=None):
    """RMSNorm of each row of ``x`` ``[rows, hidden]`` (README step 2): ``x / sqrt(mean(x ** 2) + eps) *
    weight``, statistics in float32, as transformers' ``LlamaRMSNorm`` computes it. ``x``: float32,
    float16 or bfloat16, rows possibly strided, last dimension contiguous; ``weight`` ``[hidden]``.
    Writes and returns ``out`` (a new tensor like ``x``, or the one given); ``x`` is left unchanged.
    One Triton launch."""
    check_rms_norm("rms_norm", x, weight, eps, out)
    out = x.new_empty(x.shape) if out is None else out
    _launch_rms_norm(x, None, weight, eps, out)
    return out


def fused_add_rms_norm(x, residual, weight, eps: float, out=None):
    """The residual add and the next RMSNorm in one kernel (README step 2; vLLM's ``fused_add_rms_norm``):
    ``residual += x`` in place (the new residual stream, rounded to its dtype), then ``out = rms_norm(
    residual, weight, eps)``. ``x``, ``residual``: ``[rows, hidden]`` of one dtype (rows possibly strided,
    last dimension contiguous). Returns ``(out, residual)``: the norm of the new residual, and the new
    residual itself. One Triton launch."""
    check_rms_norm("fused_add_rms_norm", x, weight, eps, out, residual)
    out = x.new_empty(x.shape) if out is None else out
    _launch_rms_norm(x, residual, weight, eps, out)
    return out, residual


@triton.jit
def _silu_and_mul_kernel(
    gate_up_ptr, out_ptr, num_rows, width, stride_in, stride_out, ROWS: tl.constexpr, BLOCK: tl.constexpr,
):
    """Rows ``pid(0) * ROWS ..``, columns ``pid(1) * BLOCK ..`` (those below ``num_rows`` and ``width``)
    of ``out [num_rows, width]``: ``out[i, j] = silu(gate[i, j]) * up[i, j]`` with ``gate[i, j]`` at
    ``gate_up_ptr + i * stride_in + j`` and ``up[i, j]`` ``width`` further; the SiLU rounded to the
    input's dtype before the product, as transformers' ``act_fn(gate) * up`` rounds it."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows < num_rows)[:, None] & (cols < width)[None, :]
    rows = rows.to(tl.int64)
    gate_ptrs = gate_up_ptr + rows[:, None] * stride_in + cols[None, :]
    gate = tl.load(gate_ptrs, mask=mask, other=0.0)
    up = tl.load(gate_ptrs + width, mask=mask, other=0.0)
    g = gate.to(tl.float32)
    act = (g / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)
    y = act * up.to(tl.float32)
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


SILU_BLOCK = 1024  # columns per program of _silu_and_mul_kernel


def silu_and_mul(gate_up, out=None):
    """The MLP's activation (README step 2; vLLM's ``SiluAndMul``): ``gate_up [rows, 2 * intermediate]``
    holds the gate projection's columns, then the up projection's (step 1's merged GEMM); returns
    ``out [rows, intermediate] = silu(gate) * up`` (a new tensor, or the one given), in ``gate_up``'s
    dtype. One Triton launch."""
    check_silu_and_mul("silu_and_mul", gate_up, out)
    num_rows, width = gate_up.shape[0], gate_up.shape[1] // 2
    out = gate_up.new_empty((num_rows, width)) if out is None else out
    if num_rows == 0 or width == 0:
        return out
    rows = rows_per_program(num_rows, gate_up.device)
    block = min(SILU_BLOCK, triton.next_power_of_2(width))
    _silu_and_mul_kernel[(triton.cdiv(num_rows, rows), triton.cdiv(width, block))](
        gate_up, out, num_rows, width, gate_up.stride(0), out.stride(0), ROWS=rows, BLOCK=block,
        num_warps=num_warps_for(rows * block),
    )
    return out


# --------------------------------------------------------------------------------------------
# Step 3: the rotary embedding fused with the KV-cache write
# --------------------------------------------------------------------------------------------


@triton.jit
def _rotary_pairs(c, half: tl.constexpr):
    """Column ``c`` of a tile over the heads' first halves (``half`` columns per head): its head, its angle
    (the index into a row of cosines), and the two dimensions of the head that turn together by that
    angle: ``i`` and ``i + half`` (transformers' ``rotate_half``)."""
    angle = c % half
    return c // half, angle, angle, angle + half


@triton.jit
def _rotate(x1, x2, cos, sin):
    """A pair of dimensions turned by the angle whose cosine and sine are given."""
    return x1 * cos - x2 * sin, x2 * cos + x1 * sin


@triton.jit
def _rotary_and_cache_kernel(
    qkv_ptr, positions_ptr, cos_sin_ptr, slot_mapping_ptr, q_out_ptr, k_cache_ptr, v_cache_ptr,
    num_tokens, stride_qkv, stride_q_token, stride_q_head, stride_cos_sin, block_size,
    stride_block, stride_slot, stride_head,
    NUM_HEADS: tl.constexpr, NUM_KV_HEADS: tl.constexpr, HEAD_DIM: tl.constexpr, ROWS: tl.constexpr,
    Q_BLOCK: tl.constexpr, K_BLOCK: tl.constexpr, V_BLOCK: tl.constexpr,
):
    """Tokens ``pid * ROWS ..`` (those below ``num_tokens``). Token ``t``'s row of ``qkv`` (at ``qkv_ptr + t
    * stride_qkv``) holds ``NUM_HEADS`` query heads, then ``NUM_KV_HEADS`` key heads, then as many value
    heads, ``HEAD_DIM`` values each. At position ``p = positions[t]``, with ``c``, ``s`` the first and
    second halves of ``cos_sin``'s row ``p``, a head ``x = (x1, x2)`` (its two halves) turns into ``(x1
    * c - x2 * s, x2 * c + x1 * s)`` (transformers' ``q * cos + rotate_half(q) * sin``), in float32.

    - Rotated queries go to ``q_out[t, h, :]`` (at ``q_out_ptr + t * stride_q_token + h * stride_q_head``).
    - With ``slot = slot_mapping[t] >= 0``: rotated keys and the values as they are go to the cache row
      of that slot, ``(slot // block_size) * stride_block + (slot % block_size) * stride_slot + h *
      stride_head`` of ``k_cache`` and ``v_cache``. Slot -1 (padding) writes nothing into either.

    ``Q_BLOCK``, ``K_BLOCK``, ``V_BLOCK``: powers of two at least ``NUM_HEADS * HEAD_DIM / 2``,
    ``NUM_KV_HEADS * HEAD_DIM / 2`` and ``NUM_KV_HEADS * HEAD_DIM``."""
    half = HEAD_DIM // 2
    tokens = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    token_ok = tokens < num_tokens
    tokens = tokens.to(tl.int64)
    pos = tl.load(positions_ptr + tokens, mask=token_ok, other=0).to(tl.int64)
    slot = tl.load(slot_mapping_ptr + tokens, mask=token_ok, other=-1).to(tl.int64)
    row = qkv_ptr + tokens[:, None] * stride_qkv  # [ROWS, 1]: each token's row of qkv
    angles = cos_sin_ptr + pos[:, None] * stride_cos_sin  # [ROWS, 1]: each token's row of the table

    # Queries: a [ROWS, Q_BLOCK] tile, one column per pair of dimensions of a head.
    c = tl.arange(0, Q_BLOCK)
    head, angle, lo, hi = _rotary_pairs(c, half)
    ok = token_ok[:, None] & (c < NUM_HEADS * half)[None, :]
    x1 = tl.load(row + (head * HEAD_DIM + lo)[None, :], mask=ok, other=0.0).to(tl.float32)
    x2 = tl.load(row + (head * HEAD_DIM + hi)[None, :], mask=ok, other=0.0).to(tl.float32)
    cos = tl.load(angles + angle[None, :], mask=ok, other=0.0)
    sin = tl.load(angles + half + angle[None, :], mask=ok, other=0.0)
    x1, x2 = _rotate(x1, x2, cos, sin)
    q_row = q_out_ptr + tokens[:, None] * stride_q_token + (head * stride_q_head)[None, :]
    tl.store(q_row + lo[None, :], x1.to(q_out_ptr.dtype.element_ty), mask=ok)
    tl.store(q_row + hi[None, :], x2.to(q_out_ptr.dtype.element_ty), mask=ok)

    # Keys: the same rotation, then into the cache row of the token's slot; a padding token (slot -1)
    # writes nothing.
    cache_row = (slot // block_size) * stride_block + (slot % block_size) * stride_slot  # [ROWS]
    write = token_ok & (slot >= 0)
    c = tl.arange(0, K_BLOCK)
    head, angle, lo, hi = _rotary_pairs(c, half)
    ok = token_ok[:, None] & (c < NUM_KV_HEADS * half)[None, :]
    k1 = tl.load(row + (NUM_HEADS * HEAD_DIM + head * HEAD_DIM + lo)[None, :], mask=ok, other=0.0).to(tl.float32)
    k2 = tl.load(row + (NUM_HEADS * HEAD_DIM + head * HEAD_DIM + hi)[None, :], mask=ok, other=0.0).to(tl.float32)
    cos = tl.load(angles + angle[None, :], mask=ok, other=0.0)
    sin = tl.load(angles + half + angle[None, :], mask=ok, other=0.0)
    k1, k2 = _rotate(k1, k2, cos, sin)
    k_row = k_cache_ptr + cache_row[:, None] + (head * stride_head)[None, :]
    store = write[:, None] & (c < NUM_KV_HEADS * half)[None, :]
    tl.store(k_row + lo[None, :], k1.to(k_cache_ptr.dtype.element_ty), mask=store)
    tl.store(k_row + hi[None, :], k2.to(k_cache_ptr.dtype.element_ty), mask=store)

    # Values: into the same row of v_cache, as they are.
    c = tl.arange(0, V_BLOCK)
    head, d = c // HEAD_DIM, c % HEAD_DIM
    ok = token_ok[:, None] & (c < NUM_KV_HEADS * HEAD_DIM)[None, :]
    v = tl.load(row + ((NUM_HEADS + NUM_KV_HEADS) * HEAD_DIM + c)[None, :], mask=ok, other=0.0)
    v_row = v_cache_ptr + cache_row[:, None] + (head * stride_head + d)[None, :]
    tl.store(v_row, v.to(v_cache_ptr.dtype.element_ty), mask=write[:, None] & (c < NUM_KV_HEADS * HEAD_DIM)[None, :])


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
    check_rotary_and_cache("rotary_and_cache", qkv, positions, cos_sin, k_cache, v_cache, slot_mapping, q_out,
                           num_heads, num_kv_heads)
    num_tokens = qkv.shape[0]
    if num_tokens == 0:
        return q_out
    _, block_size, _, head_dim = k_cache.shape
    rows = rows_per_program(num_tokens, qkv.device)
    q_block = triton.next_power_of_2(num_heads * head_dim // 2)
    _rotary_and_cache_kernel[(triton.cdiv(num_tokens, rows),)](
        qkv, positions, cos_sin, slot_mapping, q_out, k_cache, v_cache,
        num_tokens, qkv.stride(0), q_out.stride(0), q_out.stride(1), cos_sin.stride(0), block_size,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        NUM_HEADS=num_heads, NUM_KV_HEADS=num_kv_heads, HEAD_DIM=head_dim, ROWS=rows, Q_BLOCK=q_block,
        K_BLOCK=triton.next_power_of_2(num_kv_heads * head_dim // 2),
        V_BLOCK=triton.next_power_of_2(num_kv_heads * head_dim), num_warps=num_warps_for(rows * q_block),
    )
    return q_out


# --------------------------------------------------------------------------------------------
# Step 4: greedy sampling on the GPU
# --------------------------------------------------------------------------------------------


@triton.jit
def _argmax_kernel(logits_ptr, out_ptr, num_rows, vocab_size, stride_row, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """Rows ``pid * ROWS ..`` (those below ``num_rows``) of ``logits`` (row ``i`` at ``logits_ptr + i *
    stride_row``): ``out[i]`` (int64) = the first column of the largest value among columns ``0 ..
    vocab_size - 1`` (the row may be wider: padding columns are never read), ``BLOCK`` columns at a
    time."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    row_ok = rows < num_rows
    row_ptrs = logits_ptr + rows.to(tl.int64)[:, None] * stride_row
    best = tl.full([ROWS], float("-inf"), tl.float32)
    best_col = tl.zeros([ROWS], tl.int32)
    for start in range(0, vocab_size, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        ok = row_ok[:, None] & (cols < vocab_size)[None, :]
        x = tl.load(row_ptrs + cols[None, :], mask=ok, other=float("-inf")).to(tl.float32)
        chunk_best = tl.max(x, axis=1)
        # The chunk's first column holding its largest value.
        chunk_col = tl.min(tl.where(x == chunk_best[:, None], cols[None, :], vocab_size), axis=1)
        # Strictly larger only: on a tie the earlier chunk keeps its column (torch.argmax's first index).
        better = chunk_best > best
        best_col = tl.where(better, chunk_col, best_col)
        best = tl.where(better, chunk_best, best)
    tl.store(out_ptr + rows, best_col.to(tl.int64), mask=row_ok)


ARGMAX_BLOCK = 4096  # columns per iteration of _argmax_kernel


def argmax_rows(logits, vocab_size: int, out=None):
    """The greedy token of each row (README step 4): for ``logits [rows, width]`` (rows possibly strided,
    last dimension contiguous, ``width >= vocab_size``: the columns past ``vocab_size`` are padding and
    never count), the first column of each row's largest value among its first ``vocab_size``, as
    int64 ``[rows]`` into ``out`` (a new tensor, or the one given), on the logits' device. The logits
    are finite. One Triton launch; nothing is copied to the host."""
    check_argmax("argmax_rows", logits, vocab_size, out)
    num_rows = logits.shape[0]
    out = torch.empty(num_rows, dtype=torch.int64, device=logits.device) if out is None else out
    if num_rows == 0:
        return out
    rows = rows_per_program(num_rows, logits.device)
    block = min(ARGMAX_BLOCK, triton.next_power_of_2(vocab_size))
    _argmax_kernel[(triton.cdiv(num_rows, rows),)](
        logits, out, num_rows, vocab_size, logits.stride(0), ROWS=rows, BLOCK=block,
        num_warps=num_warps_for(rows * block),
    )
    return out


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
    check_sample("sample_greedy", hidden, residual, logits_indices, norm_weight, eps, lm_head_weight, vocab_size,
                 sampled, logits)
    rows = hidden.index_select(0, logits_indices)
    stream = residual.index_select(0, logits_indices)  # a copy: the add below changes it, not the caller's
    normed, _ = fused_add_rms_norm(rows, stream, norm_weight, eps)
    row_logits = F.linear(normed, lm_head_weight)  # [rows to sample, padded_vocab], the model's dtype
    argmax_rows(row_logits, vocab_size, out=sampled)
    if logits is not None:
        logits.copy_(row_logits[:, :vocab_size])
    return sampled


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
    tile = TILE_BYTES // (head_dim * itemsize)
    tile = min(MAX_TILE_TOKENS, max(MIN_TILE_TOKENS, 1 << (max(tile, 1).bit_length() - 1)))
    wanted = max(1, WAVES * num_sms // max(1, num_seqs * num_kv_heads))
    splits = min(1 << (wanted.bit_length() - 1), max(1, capacity // (MIN_SPLIT_TILES * tile)))
    return DecodeConfig(num_splits=splits, tile_tokens=tile, num_warps=DECODE_NUM_WARPS,
                        num_stages=DECODE_NUM_STAGES)


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
    check_decode("decode_attention", q, k_cache, v_cache, block_tables, seq_lens, out, config)
    batch, num_heads, head_dim = q.shape
    block_size = k_cache.shape[1]
    if out.numel() == 0:
        return out
    capacity = max(block_tables.shape[1] * block_size, 1)
    if config.num_splits == 1:
        launch_partition(q, k_cache, v_cache, block_tables, seq_lens, out, out, out, out, capacity, 1, True, config)
        return out
    size = partition_size(capacity, config.num_splits, block_size)
    max_splits = math.ceil(capacity / size)
    m = torch.empty((batch, num_heads, max_splits), dtype=torch.float32, device=q.device)
    denom = torch.empty_like(m)
    acc = torch.empty((batch, num_heads, max_splits, head_dim), dtype=torch.float32, device=q.device)
    launch_partition(q, k_cache, v_cache, block_tables, seq_lens, out, m, denom, acc, size, max_splits, False, config)
    launch_reduce(m, denom, acc, seq_lens, out, size, max_splits)
    return out


# --------------------------------------------------------------------------------------------
# The runner and the engine: lab 99-02's, with your functions plugged in
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
