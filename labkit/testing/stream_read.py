"""A streaming read kernel: how fast a GPU reads memory when it writes almost nothing.

``xor_blocks(data)`` reads every int32 of ``data`` once and writes one word per ``block``
elements (the xor of them, so no read can be skipped and the result can be checked).
:func:`labkit.testing.bench.read_bandwidth` times it over 1 GiB: the read roofline of decode,
whose kernels read K and V and write a few bytes per head. Imported only when used (it
imports torch and triton, after choosing the backend).
"""

from __future__ import annotations

from labkit.testing import triton_env

triton_env.select_backend()

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

BLOCK = 8192  # int32 elements per program: 32 KiB, 32 per thread at 8 warps
NUM_WARPS = 8


@triton.jit
def _xor_blocks_kernel(data_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    words = tl.load(data_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + tl.program_id(0), tl.xor_sum(words, axis=0))


def partials_for(data, block: int = BLOCK):
    """The output buffer of :func:`xor_blocks` for ``data``: one int32 per ``block`` elements."""
    return torch.empty(triton.cdiv(data.numel(), block), dtype=torch.int32, device=data.device)


def xor_blocks(data, out=None, block: int = BLOCK):
    """The xor of each run of ``block`` int32 of ``data`` (contiguous, 1-D; the last run may be
    short), read in one pass: ``out[i] = data[i * block] ^ ... ^ data[(i + 1) * block - 1]``."""
    if data.dtype != torch.int32 or data.dim() != 1 or not data.is_contiguous():
        raise ValueError(
            f"xor_blocks: data must be a contiguous 1-D int32 tensor, got {data.dtype} {tuple(data.shape)}"
        )
    out = partials_for(data, block) if out is None else out
    _xor_blocks_kernel[(out.numel(),)](data, out, data.numel(), BLOCK=block, num_warps=NUM_WARPS)
    return out
