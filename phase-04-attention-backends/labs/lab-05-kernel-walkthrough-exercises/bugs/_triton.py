"""Shared imports of the Triton bugs: Triton's backend chosen before it is imported."""

from labkit import triton_env

triton_env.select_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

__all__ = ["tl", "triton"]
