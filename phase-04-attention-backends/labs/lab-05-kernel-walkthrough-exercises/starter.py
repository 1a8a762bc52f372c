"""Lab 04-05, starter: the exercises of the paged-attention kernel walkthrough.

Three exercises, each a piece of vLLM's CUDA paged-attention kernel (v0.22.1,
``csrc/attention/attention_kernels.cuh`` and its launchers) made small enough to test:

1. Block-table arithmetic (numpy): blocks per sequence, the slot of every token,
   which logical blocks and tokens one warp visits in the warp-stride loop.
2. The shared-memory budget of one v2 thread block (plain integers), the largest
   partition that fits a limit, the reduce kernel's budget.
3. A QK score kernel: one program (Triton) or one thread block (CUDA) per sequence,
   the query loaded once, a strided loop over the tokens, ``-inf`` past ``seq_len``.

Exercises 1-2 need only numpy; exercise 3 needs torch and triton (and, for the
CUDA version, a GPU with nvcc and ninja).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import numpy as np
from _walkthrough_checks import (  # noqa: F401  (given: the input checks, in _walkthrough_checks.py; call them first)
    _as_seq_lens,
    _check_integer,
    _check_positive,
    _check_qk_inputs,
)

from labkit import triton_env

# Triton must learn whether to interpret before it is imported (no GPU: its interpreter).
BACKEND = triton_env.select_backend()
if BACKEND != "missing":
    import torch
    import triton
    import triton.language as tl

    jit = triton.jit
else:  # exercises 1-2 need numpy only and still run; exercise 3 says what to install
    torch = triton = tl = None

    def jit(fn):
        return fn


WARP_SIZE = 32

# ---------------------------------------------------------------------------
# Exercise 1: block-table arithmetic
# ---------------------------------------------------------------------------


def blocks_per_seq(seq_lens, block_size: int) -> np.ndarray:
    """Logical blocks each sequence occupies: ``ceil(seq_len / block_size)``, int64.

    A sequence of 0 tokens holds 0 blocks; 16 tokens in blocks of 16 hold 1; 17 hold 2.
    ``seq_lens`` is not modified. Bad input raises ``ValueError`` naming the argument: the
    given ``_as_seq_lens`` and ``_check_positive`` (in ``_walkthrough_checks.py``) do those checks.
    """
    raise NotImplementedError("blocks_per_seq: not implemented yet (README step 1: blocks per sequence)")


def slot_mapping(block_tables, seq_lens, block_size: int) -> np.ndarray:
    """The physical slot of every token: ``[num_seqs, max(seq_lens)]`` int64.

    Token ``t`` of sequence ``s`` lives in logical block ``t // block_size`` at
    offset ``t % block_size``; the block table turns the logical block into a
    physical one, so its slot is ``block_tables[s, t // block_size] * block_size +
    t % block_size``. Positions at or past ``seq_len`` hold -1 (vLLM's padding
    slot id): slot 0 is a real slot, so padding must never look like one.

    The tables may have more columns than a sequence needs (padding, any value); a table
    with fewer columns than ``ceil(seq_len / block_size)``, a negative id among the needed
    ones, or a batch size that differs from ``seq_lens`` raises ``ValueError`` saying which
    sequence and how many blocks it needs. The inputs are not modified (they may be
    read-only). Slots of large caches pass 2**31: compute them in int64.
    """
    raise NotImplementedError("slot_mapping: not implemented yet (README step 2: the slot of every token)")


def warp_blocks(seq_len: int, block_size: int, num_warps: int, warp: int,
                partition_size: int = 0, partition: int = 0) -> np.ndarray:
    """The logical blocks warp ``warp`` visits, in order, in the kernel's warp-stride loop.

    Without partitioning (``partition_size=0``, vLLM's v1) the thread block owns every
    block of the sequence; with it (v2) partition ``p`` owns ``partition_size /
    block_size`` blocks starting at ``p * partition_size / block_size``, cut at the
    sequence's last block. Warp ``w`` takes the owned blocks ``start + w, start + w +
    num_warps, ...``. A partition past the end of the sequence owns nothing (the kernel
    returns early). Returns int64. An argument that is not an integer (``100.5``, ``16.0``), a
    warp outside ``[0, num_warps)``, a partition size that is not 0 or a positive multiple of
    ``block_size``, or a partition index without partitioning raises ``ValueError`` naming the argument.
    """
    raise NotImplementedError("warp_blocks: not implemented yet (README step 3: the warp-stride loop)")


def warp_tokens(seq_len: int, block_size: int, num_warps: int, warp: int,
                partition_size: int = 0, partition: int = 0) -> np.ndarray:
    """The valid logical tokens (``< seq_len``) warp ``warp`` scores, in visiting order.

    Each visited block contributes its tokens ``b * block_size ...``, up to ``seq_len``.
    The last block's tail past ``seq_len`` is visited by the kernel's threads too, but
    holds no token: its logits are stored as 0 and reach the value loop only as zero
    probabilities, next to zeroed values. It is not listed.
    """
    raise NotImplementedError("warp_tokens: not implemented yet (README step 3: the valid tokens of warp_blocks)")


# ---------------------------------------------------------------------------
# Exercise 2: the shared-memory budget of a v2 thread block
# ---------------------------------------------------------------------------

FLOAT32_BYTES = 4
DEFAULT_SMEM_BYTES = 48 * 1024  # 49,152: what a block may use without opting in
H100_OPTIN_SMEM_BYTES = 227 * 1024  # 232,448: an H100 block's limit after cudaFuncSetAttribute


@dataclass(frozen=True)
class SmemBudget:
    """Bytes of shared memory one thread block of the v2 kernel uses."""

    logits_bytes: int  # dynamic: PARTITION_SIZE fp32 logits
    outputs_bytes: int  # dynamic: (NUM_WARPS / 2) * head_size fp32, the cross-warp output sum
    dynamic_bytes: int  # the two above share one buffer: their max
    query_bytes: int  # static: q_vecs, head_size elements of the query's dtype
    reduction_bytes: int  # static: red_smem, 2 * NUM_WARPS fp32 (max, then sum)
    static_bytes: int
    total_bytes: int


def shared_memory_budget(head_size: int, partition_size: int, num_threads: int = 128,
                         query_itemsize: int = 2) -> SmemBudget:
    """The shared memory of one v2 thread block, following vLLM's v2 launcher.

    Dynamic (the launch's third argument): the fp32 logits of one partition, a buffer
    the kernel later reuses to sum the warps' partial outputs, so its size is the max
    of the two uses. Static (``__shared__`` arrays in the kernel): the query vectors
    and the two-stage reduction scratch. ``query_itemsize`` is the query's element size,
    2 (fp16, bf16) or 4 (fp32); an fp8 KV cache does not change it (the kernel converts
    the cache's vectors to the query's type, the query is never fp8). Every byte count is a
    Python int, for numpy integer arguments too (the given checks hand their values back as
    Python ints). Bad arguments raise ``ValueError`` naming the argument.
    """
    raise NotImplementedError("shared_memory_budget: not implemented yet (README step 4: the v2 launcher's budget)")


def smem_fits(budget: SmemBudget, limit_bytes: int = DEFAULT_SMEM_BYTES) -> bool:
    """Whether the block's shared memory fits ``limit_bytes`` (a limit is inclusive)."""
    raise NotImplementedError("smem_fits: not implemented yet (README step 4: compare with the limit)")


def largest_partition_size(head_size: int, block_size: int, limit_bytes: int = DEFAULT_SMEM_BYTES,
                           num_threads: int = 128, query_itemsize: int = 2) -> int:
    """The largest positive multiple of ``block_size`` whose budget fits ``limit_bytes``; 0 if none.

    The total is ``max(4 P, outputs) + static``: it fits iff ``4 P + static <= limit``
    and ``outputs + static <= limit``. The partition must hold whole blocks (vLLM's
    kernel assumes ``PARTITION_SIZE % block_size == 0``, and its test asserts it). Returns a
    Python int, for numpy integer arguments too. A limit that is not an integer raises ``ValueError``.
    """
    raise NotImplementedError(
        "largest_partition_size: not implemented yet (README step 5: the largest partition that fits)"
    )


def reduce_shared_memory_bytes(max_seq_len: int, partition_size: int, num_threads: int = 128) -> int:
    """Shared memory of one block of the v2 reduce kernel.

    Dynamic: each partition's max logit and rescaled exp-sum, ``2 * max_num_partitions``
    fp32 with ``max_num_partitions = ceil(max_seq_len / partition_size)``; static: the
    same ``2 * NUM_WARPS`` fp32 reduction scratch as the main kernel. Returns a Python int, for
    numpy integer arguments too. Arguments that are not integers, or out of range, raise
    ``ValueError`` naming the argument.
    """
    raise NotImplementedError(
        "reduce_shared_memory_bytes: not implemented yet (README step 5: the reduce kernel's budget)"
    )


# ---------------------------------------------------------------------------
# Exercise 3: a QK score kernel, in Triton and in CUDA
# ---------------------------------------------------------------------------

QK_BLOCK_T = 64  # tokens one Triton loop iteration scores
QK_CUDA_THREADS = 128  # threads of one CUDA block: fewer than most sequences' tokens


@jit
def qk_scores_kernel(q_ptr, k_ptr, seq_lens_ptr, scores_ptr, scale, max_len, head_dim,
                     BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """Program ``seq = tl.program_id(0)`` writes row ``seq`` of ``scores`` ``[num_seqs, max_len]``
    (fp32): ``scale * q[seq] . k[seq, t]`` for ``t < seq_lens[seq]``, ``-inf`` for the other
    ``t < max_len``.

    ``q`` ``[num_seqs, head_dim]`` and ``k`` ``[num_seqs, max_len, head_dim]`` are contiguous;
    ``BLOCK_D`` is ``head_dim`` rounded up to a power of two (``tl.arange`` needs one), so lanes
    past ``head_dim`` exist and must not count. The program reads the query once, then works
    through the tokens ``BLOCK_T`` at a time (any ``max_len``), does its arithmetic in fp32,
    and never lets a padding row of ``k`` (``t >= seq_len``, which may hold NaN) reach a score.
    """
    pass  # README step 6


def qk_scores_triton(q, k, seq_lens, scale=None):
    """``[num_seqs, max_len]`` fp32 scores ``scale * q[s] . k[s, t]``; ``-inf`` for ``t >= seq_lens[s]``.

    q ``[num_seqs, head_dim]``, k ``[num_seqs, max_len, head_dim]`` (fp16, bf16 or fp32,
    same dtype and device), seq_lens ``[num_seqs]`` ints in ``[0, max_len]``; ``scale``
    defaults to ``1 / sqrt(head_dim)``. Empty batches and ``max_len`` 0 give empty results;
    the inputs are not modified; bad input raises ``ValueError`` (the given ``_check_qk_inputs``).
    """
    raise NotImplementedError(
        "qk_scores_triton: not implemented yet (README step 6: write qk_scores_kernel, launch it)"
    )
    q, k, seq_lens, scale = _check_qk_inputs(q, k, seq_lens, scale)
    num_seqs, max_len, head_dim = k.shape
    scores = torch.empty((num_seqs, max_len), dtype=torch.float32, device=q.device)
    # README step 6: launch qk_scores_kernel here.
    return scores


QK_CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cmath>

// One thread block per sequence; thread i scores tokens i, i + blockDim.x, ...
template <typename scalar_t>
__global__ void qk_scores_kernel(float* __restrict__ scores,          // [num_seqs, max_len]
                                 const scalar_t* __restrict__ q,      // [num_seqs, head_dim]
                                 const scalar_t* __restrict__ k,      // [num_seqs, max_len, head_dim]
                                 const int* __restrict__ seq_lens,    // [num_seqs]
                                 const float scale, const int max_len, const int head_dim) {
  extern __shared__ float q_smem[];  // head_dim floats: the query, staged once per block
  // README step 7. Block blockIdx.x writes row blockIdx.x of scores: for every t < max_len,
  // scale * dot(q[seq], k[seq, t]) in float where t < seq_lens[seq], -INFINITY elsewhere.
  // The query is staged in q_smem once, by all the threads, before any thread reads it; the
  // block has blockDim.x threads, far fewer than a long sequence's tokens; seq * max_len *
  // head_dim overflows int for long caches (index in int64_t).
}

torch::Tensor qk_scores(torch::Tensor q, torch::Tensor k, torch::Tensor seq_lens, double scale,
                        int64_t threads) {
  // Shapes, dtypes and devices were checked in Python; all three are contiguous.
  const int num_seqs = q.size(0), head_dim = q.size(1), max_len = k.size(1);
  auto scores = torch::empty({num_seqs, max_len}, q.options().dtype(torch::kFloat32));
  if (num_seqs == 0 || max_len == 0) return scores;
  const size_t smem = head_dim * sizeof(float);
  const auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, q.scalar_type(), "qk_scores", [&] {
    qk_scores_kernel<scalar_t><<<num_seqs, threads, smem, stream>>>(
        scores.data_ptr<float>(), q.data_ptr<scalar_t>(), k.data_ptr<scalar_t>(),
        seq_lens.data_ptr<int>(), static_cast<float>(scale), max_len, head_dim);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return scores;
}
"""

_QK_CPP_DECLARATION = (
    "torch::Tensor qk_scores(torch::Tensor q, torch::Tensor k, torch::Tensor seq_lens, double scale, int64_t threads);"
)


def qk_scores_cuda(q, k, seq_lens, scale=None):
    """The same scores as :func:`qk_scores_triton`, from the CUDA kernel in ``QK_CUDA_SOURCE``.

    Compiled on first use with ``torch.utils.cpp_extension.load_inline`` (needs a GPU,
    nvcc and ninja; torch's extension cache keeps the build).
    """
    raise NotImplementedError("qk_scores_cuda: not implemented yet (README step 7: the kernel body in QK_CUDA_SOURCE)")
    q, k, seq_lens, scale = _check_qk_inputs(q, k, seq_lens, scale)
    if q.device.type != "cuda":
        raise ValueError(f"qk_scores_cuda needs CUDA tensors; got device {q.device} "
                         "(on a machine without a GPU, use qk_scores_triton)")
    return _cuda_extension(QK_CUDA_SOURCE).qk_scores(q, k, seq_lens, scale, QK_CUDA_THREADS)


@functools.cache
def _cuda_extension(source: str):
    """Build (or load from torch's cache) the extension for this exact source."""
    from torch.utils.cpp_extension import load_inline

    digest = hashlib.sha1(source.encode()).hexdigest()[:12]  # an edited kernel gets a fresh build
    return load_inline(name=f"lab0405_qk_{digest}", cpp_sources=[_QK_CPP_DECLARATION], cuda_sources=[source],
                       functions=["qk_scores"], extra_cuda_cflags=["-O3"], verbose=False)
