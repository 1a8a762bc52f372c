"""Where Triton kernels run: on a CUDA GPU, or on the CPU through Triton's interpreter.

Triton reads ``TRITON_INTERPRET`` when it is imported, so the choice must be
made first: ``select_backend()`` sets ``TRITON_INTERPRET=1`` when there is no
CUDA device. The root ``conftest.py`` calls it before any test module imports
Triton; a lab's ``lab.py`` and ``bench.py`` call it as their first step.
"""

from __future__ import annotations

import importlib.util
import os
import sys

INSTALL_HINT = 'pip install -e ".[torch,triton]"  (CPU-only machine: install the CPU build of torch first, SETUP.md)'


def has_torch_and_triton() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "triton"))


def select_backend() -> str:
    """``"cuda"``, ``"interpreter"`` or ``"missing"`` (torch or triton not installed).

    Without a CUDA device this turns on Triton's interpreter, which must happen
    before ``import triton``; a ``TRITON_INTERPRET=1`` already set is respected.
    """
    if not has_torch_and_triton():
        return "missing"
    if os.environ.get("TRITON_INTERPRET") == "1":
        return "interpreter"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if "triton" in sys.modules:
        raise RuntimeError(
            "triton was imported before labkit.triton_env.select_backend(); "
            "with no CUDA device, call it first (or set TRITON_INTERPRET=1)"
        )
    os.environ["TRITON_INTERPRET"] = "1"
    return "interpreter"


def cuda_available() -> bool:
    """True when torch is installed and sees a CUDA device."""
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def device() -> str:
    """The torch device the Triton labs put their tensors on."""
    return "cuda" if select_backend() == "cuda" else "cpu"


def describe() -> str:
    """One line for the pytest header and the labs' printouts."""
    backend = select_backend()
    if backend == "missing":
        return f"Triton labs: torch/triton not installed, their tests skip ({INSTALL_HINT})"
    if backend == "cuda":
        import torch

        return f"Triton labs: on the GPU ({torch.cuda.get_device_name()})"
    return "Triton labs: on the CPU through Triton's interpreter (TRITON_INTERPRET=1; fp16/fp32 only)"


def require_torch_and_triton():
    """In a test module: skip it, with the install command as the reason, unless
    torch and triton are importable; otherwise pick the backend and return
    ``(torch, triton)``."""
    import pytest

    if not has_torch_and_triton():
        pytest.skip(f"needs torch and triton: {INSTALL_HINT}", allow_module_level=True)
    select_backend()
    import torch
    import triton

    return torch, triton
