"""Shared pieces of the GPU benchmarks: timing, copy bandwidth, the results table.

Timings are ``triton.testing.do_bench`` medians (it flushes the L2 cache before
each run). Bandwidths count bytes read plus bytes written.
"""

from __future__ import annotations

from labkit.text import markdown_table

__all__ = ["copy_bandwidth", "device_line", "markdown_table", "time_us"]


def time_us(fn) -> float:
    """Median time of ``fn()`` in microseconds, L2 flushed between runs."""
    import triton

    return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in bytes/s: (read + written) / time of
    copying ``nbytes`` (1 GiB) once, the ceiling a memory-bound kernel can reach."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    seconds = time_us(lambda: dst.copy_(src)) * 1e-6
    return 2 * nbytes / seconds


def device_line() -> str:
    """GPU name, torch and triton versions: the header of every results table."""
    import torch
    import triton

    return (
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
