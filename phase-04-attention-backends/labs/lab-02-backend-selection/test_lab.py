"""Lab 04-02 tests: vLLM v0.22.1's attention-backend selection on CUDA, and a measured dispatcher.

Run against your work with ``LAB_IMPL=starter pytest <this folder>``.

The truth here is not a float64 brute force but a table written by hand from vLLM v0.22.1's
source (the release's source distribution; paths relative to the repository). Each row says
which rule of the source gives its answer. Nothing in the expected values is computed by the
code under test. The functions the rows cite:

- ``vllm/platforms/cuda.py``: ``_get_backend_priorities`` (the priority lists: one per kind of
  layer, one for major 10 and one for every other GPU), ``CudaPlatformBase.get_attn_backend_cls``
  (the backend asked for, validated, or the first valid backend of the list) and
  ``check_if_supports_dtype`` (no bfloat16 below 8.0).
- ``vllm/v1/attention/backend.py``: ``AttentionBackend.validate_configuration``,
  ``supports_block_size`` (a multiple of a kernel block size) and ``get_preferred_block_size``
  (16, or the smallest kernel block size); ``vllm/platforms/interface.py``,
  ``Platform.update_block_size_for_backend`` (the preferred size when the user sets none).
- ``vllm/v1/attention/backends/*.py`` and ``mla/*.py``: what each backend declares
  (``supported_dtypes``, ``supported_kv_cache_dtypes``, ``get_supported_kernel_block_sizes``,
  ``supports_head_size``, ``supports_compute_capability``, ``supports_sink``,
  ``supports_combination``); ``vllm/v1/attention/backends/fa_utils.py``
  (``get_flash_attn_version``: 3 on major 9, 4 on major 10, else 2); ``vllm/utils/flashinfer.py``
  (``supports_trtllm_attention``: sinks on a 10.x GPU); ``vllm/v1/attention/ops/flashmla.py``
  (``is_flashmla_dense_supported``: Hopper only).
- The metadata builders' ``get_cudagraph_support`` and ``vllm/config/compilation.py``,
  ``CompilationConfig.resolve_cudagraph_mode_and_sizes``.

The lab's selector differs from v0.22.1 in a few places the README lists ("Where this selector
differs from v0.22.1"); rows that exercise a difference say so.

The measured dispatcher is tested on ``example_matrix.json`` (made-up timings, committed with the
lab) and on small matrices built in the tests, against a brute-force minimum written here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

import labkit

HERE = Path(__file__).resolve().parent
DENSE = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
MLA_NAMES = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "CUTLASS_MLA", "TRITON_MLA")
ALL = DENSE + MLA_NAMES
MLA = ("mla",)


def call_text(gpu, dtype, head_size, block_size=None, kv="auto", features=(), override=None) -> str:
    """The select_backend call as a learner would write it, for the failure messages."""
    args = [repr(gpu), repr(dtype), repr(head_size)] + ([repr(block_size)] if block_size is not None else [])
    args += [f"kv_cache_dtype={kv!r}"] if kv != "auto" else []
    args += [f"features={features!r}"] if features != () else []
    args += [f"override={override!r}"] if override is not None else []
    return f"select_backend({', '.join(args)})"


@dataclass(frozen=True)
class Chosen:
    sel: object  # the Selection
    call: str  # the call that returned it


def select(lab, gpu, dtype, head_size, block_size=None, kv="auto", features=(), override=None) -> Chosen:
    sel = lab.select_backend(gpu, dtype, head_size, block_size, kv_cache_dtype=kv, features=features,
                             override=override)
    return Chosen(sel, call_text(gpu, dtype, head_size, block_size, kv, features, override))


def assert_selected(chosen, backend, block_size=None, reasons=None):
    """The chosen backend and block size, a non-empty reason for every other backend, and, for the
    backends named in ``reasons``, words that reason must contain (in any case)."""
    __tracebackhide__ = True
    sel, call = chosen.sel, chosen.call
    labkit.assert_value(sel.backend, backend, what=f"{call}.backend (the reasons given: {sel.rejected})")
    if block_size is not None:
        labkit.assert_value(sel.block_size, block_size, what=f"{call}.block_size")
    others = sorted(set(ALL) - {backend})
    labkit.assert_value(sorted(sel.rejected), others, what=f"{call}.rejected: the backends it names (every other one)")
    empty = [name for name, why in sel.rejected.items() if not isinstance(why, str) or not why.strip()]
    if empty:
        raise AssertionError(f"{call}.rejected: no reason given for {empty}")
    for name, words in (reasons or {}).items():
        missing = [w for w in words if w.lower() not in sel.rejected[name].lower()]
        if missing:
            raise AssertionError(f"{call}.rejected[{name!r}] should mention {missing} (README step 5): "
                                 f"{sel.rejected[name]!r}")


def refused(call: str, fn, *words):
    """``fn()`` raises a ValueError whose message names every one of ``words`` (in any case)."""
    __tracebackhide__ = True
    try:
        got = fn()
    except ValueError as err:
        message = str(err)
    except NotImplementedError:
        raise  # the starter's stub: its message says which README step
    except Exception as err:
        raise AssertionError(f"{call}: raised {type(err).__name__}: {err}; expected a ValueError naming "
                             f"{list(words)}") from err
    else:
        got = getattr(got, "backend", got)
        raise AssertionError(f"{call}: returned {got!r}; expected a ValueError naming {list(words)}")
    missing = [w for w in words if w.lower() not in message.lower()]
    if missing:
        raise AssertionError(f"{call}: the ValueError should name {missing}; its message: {message!r}")
    return message


def select_refused(lab, words, gpu, dtype, head_size, block_size=None, kv="auto", features=(), override=None):
    """select_backend refuses the layer with a ValueError naming ``words``."""
    __tracebackhide__ = True
    return refused(call_text(gpu, dtype, head_size, block_size, kv, features, override),
                   lambda: lab.select_backend(gpu, dtype, head_size, block_size, kv_cache_dtype=kv, features=features,
                                              override=override), *words)


def problems_of(lab, backend, gpu, *layer):
    """``(backend_problems(...), the call as text)``; the answer must be a list of strings."""
    __tracebackhide__ = True
    call = f"backend_problems({backend!r}, {gpu!r}, {', '.join(map(repr, layer))})"
    problems = lab.backend_problems(backend, gpu, *layer)
    if not isinstance(problems, list) or not all(isinstance(p, str) for p in problems):
        raise AssertionError(f"{call}: expected a list of reasons (strings), got {problems!r}")
    return problems, call


def check_verdict(problems, call: str, ok: bool, word: str, yes: str, no: str) -> None:
    """``problems`` (what ``call`` returned) is empty when the backend can (``ok``: ``yes`` says what),
    and otherwise holds a reason naming ``word`` (``no`` says what it cannot)."""
    __tracebackhide__ = True
    if ok:
        labkit.assert_value(problems, [], what=f"{call} ({yes})")
    elif not any(word in p.lower() for p in problems):
        raise AssertionError(f"{call}: {no}; expected a reason naming {word!r}, got {problems}")


# ------------------------------------------------------------------------------------------
# Step 1: the GPU.


@pytest.mark.parametrize("name, capability", [
    ("V100", (7, 0)), ("T4", (7, 5)), ("A100", (8, 0)), ("A10G", (8, 6)), ("L4", (8, 9)),
    ("H100", (9, 0)), ("H200", (9, 0)), ("B200", (10, 0)),
])
def test_device_capability_of_named_gpus(lab, name, capability):
    """Pins NVIDIA's compute capabilities for the GPUs the tables name, and that a pair passes
    through unchanged. Catches a GPU table with a wrong entry (L4 is Ada, 8.9, not 8.6)."""
    labkit.assert_value(lab.device_capability(name), capability, what=f"device_capability({name!r})")
    labkit.assert_value(lab.device_capability(capability), capability, what=f"device_capability({capability!r})")


@pytest.mark.parametrize("capability", [(1, 0), (7, 9), (10, 3), (12, 1)])
def test_device_capability_passes_any_possible_pair(lab, capability):
    """Pins that every pair with major >= 1 and a one-digit minor comes back unchanged, a GPU of
    the table or not. Catches a floor on major above 1 (``major >= 7`` because the V100 is the
    oldest GPU the table names): the backends' own limits are what refuse old GPUs."""
    what = f"device_capability({capability!r}) (major >= 1 and 0 <= minor <= 9: a possible GPU)"
    try:
        got = lab.device_capability(capability)
    except ValueError as err:
        raise AssertionError(f"{what}: refused it; only impossible pairs are a ValueError "
                             f"(old GPUs are refused later, by each backend's limits): {err}") from None
    labkit.assert_value(got, capability, what=what)


@pytest.mark.parametrize("gpu", ["H1000", "h100", "", (9, 10), (9, -1), (-1, 0), (0, 0), (9,), (9, 0, 1),
                                 ("9", "0"), (9.0, 0), (True, 0), 90, None])
def test_device_capability_rejects_impossible_gpus(lab, gpu):
    """Pins a ValueError naming ``gpu`` for an unknown name or an impossible capability (minor
    above 9 breaks vLLM's ``DeviceCapability.to_int``; a negative minor; major 0 or below; wrong
    types). Catches a selector that compares garbage and answers anyway, and a minor checked
    only from above (``minor <= 9``: (9, -1) would read as 8.9)."""
    refused(f"device_capability({gpu!r})", lambda: lab.device_capability(gpu), "gpu")


# ------------------------------------------------------------------------------------------
# Step 2: what one backend cannot do.


@pytest.mark.parametrize("backend, gpu, layer, words", [
    # supports_head_size / get_supported_head_sizes
    ("FLASH_ATTN", "A100", ("float16", 100, 16), ["head size", "100"]),  # FA: a multiple of 8
    ("FLASH_ATTN", "A100", ("float16", 320, 16), ["head size", "320", "256"]),  # up to 256 without FlashAttention 4
    ("FLASH_ATTN", "H100", ("float16", 520, 16), ["head size", "520", "512"]),  # up to 512 with it
    ("FLASHINFER", "B200", ("float16", 96, 16), ["head size", "96"]),  # FlashInfer: 64, 128, 256, 512
    ("TRITON_ATTN", "A100", ("float16", 24, 16), ["head size", "24"]),  # Triton: at least 32
    ("TRITON_ATTN", "A100", ("float16", 31, 16), ["head size", "31"]),
    ("FLASHMLA", "H100", ("bfloat16", 128, 64, "auto", MLA), ["head size", "128"]),  # MLACommonBackend: 320, 576
    ("FLASHINFER_MLA", "B200", ("bfloat16", 512, 32, "auto", MLA), ["head size", "512"]),
    ("CUTLASS_MLA", "B200", ("bfloat16", 512, 128, "auto", MLA), ["head size", "512"]),
    # supported_dtypes
    ("FLASH_ATTN", "A100", ("float32", 128, 16), ["float32"]),
    ("FLASHINFER", "B200", ("float32", 128, 16), ["float32"]),
    ("FLASH_ATTN_MLA", "H100", ("float32", 576, 16, "auto", MLA), ["float32"]),
    # supports_block_size: a multiple of one of get_supported_kernel_block_sizes
    ("FLASH_ATTN", "A100", ("float16", 128, 8), ["block size", "8", "16"]),
    ("FLASHINFER", "B200", ("float16", 128, 8), ["block size", "16"]),
    ("FLASHINFER", "H100", ("float16", 128, 31), ["block size", "31"]),  # 16, 32, 64: one off either way
    ("FLASHINFER", "H100", ("float16", 128, 33), ["block size", "33"]),
    ("FLASHINFER", "H100", ("float16", 128, 63), ["block size", "63"]),
    ("FLASHINFER", "H100", ("float16", 128, 65), ["block size", "65"]),
    ("FLEX_ATTENTION", "A100", ("float16", 128, 24), ["block size", "24", "16"]),
    ("FLASHMLA", "H100", ("bfloat16", 576, 16, "auto", MLA), ["block size", "64"]),
    ("FLASHINFER_MLA", "B200", ("bfloat16", 576, 16, "auto", MLA), ["block size", "32"]),
    ("FLASHINFER_MLA", "B200", ("bfloat16", 576, 63, "auto", MLA), ["block size", "63"]),  # 32, 64
    ("FLASHINFER_MLA", "B200", ("bfloat16", 576, 65, "auto", MLA), ["block size", "65"]),
    ("CUTLASS_MLA", "B200", ("bfloat16", 576, 64, "auto", MLA), ["block size", "128"]),
    # supports_compute_capability, and the GPU checks of supports_combination
    ("FLASH_ATTN", "T4", ("float16", 128, 16), ["8.0"]),
    ("FLASHINFER", "V100", ("float16", 128, 16), ["7.5"]),
    ("FLASHINFER", (7, 4), ("float16", 128, 16), ["7.5"]),  # the range's ends are 7.5 and 12.1 exactly
    ("FLASHINFER", (12, 2), ("float16", 128, 16), ["12.1"]),
    ("FLASH_ATTN_MLA", "A100", ("bfloat16", 576, 16, "auto", MLA), ["hopper"]),
    ("FLASHMLA", "A100", ("bfloat16", 576, 64, "auto", MLA), ["hopper"]),
    ("FLASHMLA", "B200", ("bfloat16", 576, 64, "auto", MLA), ["hopper"]),  # 10.x passes the first check only
    ("CUTLASS_MLA", "H100", ("bfloat16", 576, 128, "auto", MLA), ["10.x"]),
    ("FLASHINFER_MLA", (12, 0), ("bfloat16", 576, 32, "auto", MLA), ["10.x"]),
    ("FLASHINFER_MLA", (11, 0), ("bfloat16", 576, 32, "auto", MLA), ["10.x"]),  # the major is 10, not 10 and up
    ("CUTLASS_MLA", (11, 0), ("bfloat16", 576, 128, "auto", MLA), ["10.x"]),
    ("CUTLASS_MLA", (12, 0), ("bfloat16", 576, 128, "auto", MLA), ["10.x"]),
])
def test_backend_problems_name_the_limit(lab, backend, gpu, layer, words):
    """Pins each backend's head sizes, dtypes, block-size rule and GPUs, and that the reason names
    the limit and the layer's value. Catches a limit not checked (a head size not validated, a
    dtype let through, a kernel block size read as "any"), a limit one off (a kernel block size of
    31 or 33 for 32, 7.4 for FlashInfer's 7.5), a head-size list left out (FlashInfer MLA and
    CUTLASS MLA take only 320 and 576) and reasons that do not say what is wrong (FlashAttention's
    largest head size)."""
    problems, call = problems_of(lab, backend, gpu, *layer)
    if not problems:
        raise AssertionError(f"{call}: got [], expected a reason naming {words} ({backend} cannot run this layer)")
    missing = [w for w in words if w.lower() not in " ".join(problems).lower()]
    if missing:
        raise AssertionError(f"{call}: the reasons should mention {missing} (README step 2): {problems}")


@pytest.mark.parametrize("backend, gpu, layer", [
    ("FLASH_ATTN", "A100", ("float16", 80, 16)),  # any multiple of 8 up to 256
    ("FLASH_ATTN", "H100", ("bfloat16", 512, 32)),  # FlashAttention 4 is built for 9.x: up to 512
    ("FLASH_ATTN", "B200", ("bfloat16", 256, None)),  # no block size set: no block rule
    ("FLASH_ATTN", "A100", ("float16", 256, 16)),  # 256 itself is in
    ("FLASH_ATTN", "B200", ("bfloat16", 512, None)),  # FlashAttention 4 is built for 10.x too
    ("FLASH_ATTN", (11, 0), ("float16", 512, 16)),  # and for 11.x
    ("FLASHINFER", "T4", ("float16", 64, 48, "auto", ("sliding_window",))),  # 7.5 and up; 48 is 3 x 16
    ("FLASHINFER", (12, 1), ("float16", 256, None)),  # up to 12.1 included; 256 is one of its head sizes
    ("TRITON_ATTN", "V100", ("float32", 72, 16, "fp8_e5m2", ("sinks", "sliding_window"))),
    ("TRITON_ATTN", "A100", ("float16", 32, 16)),  # 32 itself is in
    ("FLEX_ATTENTION", "A100", ("float32", 20, 32)),
    ("FLEX_ATTENTION", "A100", ("float16", 1, 16)),  # any head size, 1 included: a positive int
    ("FLASH_ATTN_MLA", "H100", ("bfloat16", 576, 16, "auto", MLA)),
    ("FLASHMLA", "H200", ("bfloat16", 320, 128, "fp8", MLA)),  # 128 is a multiple of 64
    ("FLASHINFER_MLA", "B200", ("float16", 576, 96, "fp8_e4m3", MLA)),  # 96 is a multiple of 32
    ("FLASHINFER_MLA", "B200", ("bfloat16", 320, 64, "auto", MLA)),  # MLACommonBackend: 320 too
    ("CUTLASS_MLA", (10, 3), ("float16", 576, 256, "auto", MLA)),  # capability.major == 10
    ("CUTLASS_MLA", "B200", ("bfloat16", 320, 128, "fp8", MLA)),  # 320; an fp8 (e4m3) cache
    ("TRITON_MLA", "L4", ("float16", 192, None, "fp8", MLA)),  # any head size, any GPU
])
def test_backend_problems_empty_when_it_can_run(lab, backend, gpu, layer):
    """Pins that a layer inside every limit gets no reason at all. Catches checks that are too
    strict (a head-size list where the rule is "a multiple of 8", a kernel block size taken as the
    only block size, a GPU rule tested on the whole capability where the source tests the major), a
    limit's own value left out (FlashAttention's 256 and 512, Triton's 32, FlashInfer's 256 and
    12.1, MLA's 320, head size 1), FlashAttention 4's 512 kept to Hopper, and CUTLASS MLA's fp8
    cache forgotten."""
    problems, call = problems_of(lab, backend, gpu, *layer)
    labkit.assert_value(problems, [], what=f"{call} ({backend} can run this layer)")


@pytest.mark.parametrize("backend, gpu, kv, ok", [
    # FlashAttentionBackend.supports_kv_cache_dtype: fp8 / fp8_e4m3 with FlashAttention 3 on 9.x only
    ("FLASH_ATTN", "H100", "fp8", True),
    ("FLASH_ATTN", "H100", "fp8_e4m3", True),
    ("FLASH_ATTN", "H100", "fp8_e5m2", False),
    ("FLASH_ATTN", "A100", "fp8", False),
    ("FLASH_ATTN", "B200", "fp8", False),  # Blackwell runs FlashAttention 4, which reads no fp8 here
    ("FLASH_ATTN", (11, 0), "fp8", False),  # FlashAttention 2 there: only version 3 reads fp8
    # supported_kv_cache_dtypes
    ("FLASHINFER", "B200", "fp8_e5m2", True),
    ("FLASHINFER", "A100", "fp8", True),
    ("TRITON_ATTN", "A100", "fp8", True),
    ("TRITON_ATTN", "B200", "fp8_e5m2", True),
    ("FLEX_ATTENTION", "H100", "fp8", False),
    ("FLASH_ATTN_MLA", "H100", "fp8", False),
    ("FLASHMLA", "H100", "fp8", True),
    ("FLASHMLA", "H100", "fp8_e5m2", False),
    ("FLASHINFER_MLA", "B200", "fp8_e4m3", True),
    ("CUTLASS_MLA", "B200", "fp8_e5m2", False),
    ("TRITON_MLA", "A100", "fp8", True),
])
def test_fp8_cache_per_backend(lab, backend, gpu, kv, ok):
    """Pins which backend reads which fp8 KV cache on which GPU. Catches fp8 allowed on a backend
    that lacks it (FlexAttention, FlashAttention 2 or 4, e5m2 on the MLA backends) and refused on
    one that has it (Triton reads both formats on any GPU)."""
    layer = ("bfloat16", 576, None, kv, MLA) if backend in MLA_NAMES else ("float16", 128, 16, kv)
    check_verdict(*problems_of(lab, backend, gpu, *layer), ok, "fp8", yes=f"{backend} on {gpu} reads a {kv} cache",
                  no=f"{backend} on {gpu} cannot read a {kv} cache")


@pytest.mark.parametrize("backend, gpu, ok", [
    ("FLASH_ATTN", "H100", True),  # flash_attn_supports_sinks: FlashAttention 3 or 4
    ("FLASH_ATTN", "B200", True),
    ("FLASH_ATTN", "A100", False),  # FlashAttention 2 (and supports_combination: below 9.0)
    ("FLASH_ATTN", (11, 0), False),  # get_flash_attn_version: 4 on major 10 only, so 11.x runs FlashAttention 2
    ("FLASH_ATTN", (12, 0), False),  # 12.x runs FlashAttention 2
    ("FLASHINFER", "B200", True),  # TRT-LLM attention: a 10.x GPU
    ("FLASHINFER", (10, 3), True),
    ("FLASHINFER", "H100", False),
    ("FLASHINFER", (11, 0), False),
    ("FLASHINFER", (12, 0), False),
    ("TRITON_ATTN", "A100", True),
    ("FLEX_ATTENTION", "A100", False),  # the base class's supports_sink
    ("FLASHMLA", "H100", False),
    ("TRITON_MLA", "A100", False),
])
def test_sinks_per_backend(lab, backend, gpu, ok):
    """Pins which backend takes attention sinks on which GPU. Catches sinks let through where the
    backend does not declare them, FlashInfer's 10.x read as "10.0 exactly" or "10.0 or newer", and
    FlashAttention's sinks tied to version 3 only."""
    layer = ("bfloat16", 576, None, "auto", ("mla", "sinks")) if backend in MLA_NAMES else \
        ("bfloat16", 64, 16, "auto", ("sinks",))
    check_verdict(*problems_of(lab, backend, gpu, *layer), ok, "sink", yes=f"{backend} on {gpu} takes attention sinks",
                  no=f"{backend} on {gpu} takes no attention sinks")


def test_sliding_window_gqa_and_paged_kv_change_no_limit(lab):
    """Pins that a sliding window, GQA and a paged cache change no backend's problems: v0.22.1's
    selector does not see them (every dense backend takes a window, and an MLA layer has none).
    Catches FlexAttention refusing a sliding window (an older release's rule)."""
    for backend in ALL:
        layer = ("bfloat16", 576, None, "auto") if backend in MLA_NAMES else ("bfloat16", 128, 16, "auto")
        base = ("mla",) if backend in MLA_NAMES else ()
        plain, _ = problems_of(lab, backend, "H100", *layer, base)
        for extra in (("sliding_window",), ("gqa", "paged_kv")):
            got, call = problems_of(lab, backend, "H100", *layer, base + extra)
            labkit.assert_value(got, plain, what=f"{call} (as without {extra})")


def test_mla_and_dense_backends_do_not_mix(lab):
    """Pins that a dense backend refuses an MLA layer and an MLA backend refuses a dense one, with
    a reason that says MLA. Catches MLA routed to a non-MLA backend."""
    for backend in DENSE:
        problems, call = problems_of(lab, backend, "H100", "bfloat16", 576, 16, "auto", MLA)
        if not any("mla" in p.lower() for p in problems):
            raise AssertionError(f"{call}: a dense backend takes no MLA layer; expected a reason naming 'MLA', "
                                 f"got {problems}")
    for backend in MLA_NAMES:
        problems, call = problems_of(lab, backend, "H100", "bfloat16", 576, 64)
        if not any("mla" in p.lower() for p in problems):
            raise AssertionError(f"{call}: an MLA backend takes no dense layer; expected a reason naming 'MLA', "
                                 f"got {problems}")


# ------------------------------------------------------------------------------------------
# Step 3: the platform's check.


@pytest.mark.parametrize("gpu, dtype, refuses", [
    ("V100", "bfloat16", True),  # check_if_supports_dtype: bfloat16 needs has_device_capability(80)
    ("T4", "bfloat16", True),
    ((7, 9), "bfloat16", True),
    ("V100", "float16", False),
    ("T4", "float32", False),
    ("A100", "bfloat16", False),
    ("L4", "bfloat16", False),
    ("B200", "bfloat16", False),
    ((12, 0), "bfloat16", False),
])
def test_platform_refusal(lab, gpu, dtype, refuses):
    """Pins the platform's dtype check: bfloat16 below compute capability 8.0 is refused with a
    message naming bfloat16 and 8.0, everything else passes. Catches the capability compared as
    text ("10.0" < "8.0") and a floor set at Hopper."""
    call = f"platform_refusal({gpu!r}, {dtype!r})"
    reason = lab.platform_refusal(gpu, dtype)
    if not refuses:
        labkit.assert_value(reason, None, what=f"{call} (the platform runs this dtype)")
    elif not isinstance(reason, str) or [w for w in ("bfloat16", "8.0") if w not in reason.lower()]:
        raise AssertionError(f"{call}: got {reason!r}; expected a refusal naming 'bfloat16' and '8.0' (README step 3)")


def test_platform_refusal_of_a_bad_dtype(lab):
    """Pins a ValueError naming ``dtype`` for a dtype that is not one of ``DTYPES``."""
    refused("platform_refusal('A100', 'half')", lambda: lab.platform_refusal("A100", "half"), "dtype")


# ------------------------------------------------------------------------------------------
# Step 4: the priority lists.

_DENSE_ORDER = ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")
_DENSE_ORDER_10 = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
_MLA_ORDER = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA")
_MLA_ORDER_10 = ("FLASHINFER_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")


@pytest.mark.parametrize("gpu, features, order", [
    ("A100", (), _DENSE_ORDER),
    ("V100", ("gqa",), _DENSE_ORDER),
    ("H100", ("sinks",), _DENSE_ORDER),  # no rule for sinks in the list: validation decides
    ("B200", (), _DENSE_ORDER_10),
    ((10, 3), (), _DENSE_ORDER_10),  # device_capability.major == 10
    ((11, 0), (), _DENSE_ORDER),  # 11.x is not major 10: the list for every other GPU
    ((12, 0), (), _DENSE_ORDER),
    ("H100", ("mla",), _MLA_ORDER),
    ("A100", ("mla", "gqa"), _MLA_ORDER),
    ("B200", ("mla",), _MLA_ORDER_10),
    ((10, 3), ("mla", "sinks"), _MLA_ORDER_10),
    ((11, 0), ("mla",), _MLA_ORDER),
    ((12, 0), ("mla",), _MLA_ORDER),
])
def test_candidate_order(lab, gpu, features, order):
    """Pins _get_backend_priorities, less the backends the lab leaves out: FlashInfer first on a
    major-10 GPU, FlashAttention first elsewhere; for MLA, FlashInfer MLA then CUTLASS MLA on
    major 10, FlashAttention MLA then FlashMLA elsewhere (CUTLASS MLA only in the major-10 list).
    Catches the major tested as an exact capability (10.3 is Blackwell), as "at least 10" (12.0
    is not) or as "10 or 11" (11.x gets the list of every other GPU), and MLA routed to the dense
    list."""
    got = lab.candidate_order(gpu, features)
    labkit.assert_value(tuple(got) if isinstance(got, (list, tuple)) else got, order,
                        what=f"candidate_order({gpu!r}, {features!r})")


# ------------------------------------------------------------------------------------------
# Step 5: the choice. Tables by feature; each row cites the rule that decides it.

DENSE_DEFAULTS = [
    # gpu, dtype, head, expected, {backend: words its reason must contain}
    ("A100", "float16", 128, "FLASH_ATTN", {"FLASHINFER": ["lower priority", "FLASH_ATTN"],
                                            "FLEX_ATTENTION": ["lower priority"], "CUTLASS_MLA": ["mla"]}),
    ("A100", "bfloat16", 64, "FLASH_ATTN", {}),
    ("A100", "float16", 80, "FLASH_ATTN", {"FLASHINFER": ["head size", "80"]}),  # FA: any multiple of 8
    ("A100", "float16", 72, "FLASH_ATTN", {}),
    ("A100", "float16", 100, "TRITON_ATTN", {"FLASH_ATTN": ["head size", "100"], "FLASHINFER": ["100"]}),
    ("A100", "float16", 320, "TRITON_ATTN", {"FLASH_ATTN": ["320"]}),  # FA up to 256 on 8.x
    ("A100", "bfloat16", 576, "TRITON_ATTN", {"FLASH_ATTN": ["576"], "TRITON_MLA": ["mla"]}),
    ("A100", "float32", 128, "TRITON_ATTN", {"FLASH_ATTN": ["float32"], "FLASHINFER": ["float32"]}),
    ("A100", "float32", 16, "FLEX_ATTENTION", {"TRITON_ATTN": ["head size", "16"]}),
    ("A100", "float16", 20, "FLEX_ATTENTION", {"FLASH_ATTN": ["20"], "TRITON_ATTN": ["20"]}),
    ("A10G", "float16", 128, "FLASH_ATTN", {}),
    ("L4", "bfloat16", 80, "FLASH_ATTN", {}),
    ("H100", "float16", 128, "FLASH_ATTN", {"TRITON_ATTN": ["lower priority"], "CUTLASS_MLA": ["10.x"]}),
    ("H100", "bfloat16", 512, "FLASH_ATTN", {}),  # FlashAttention 4 built for 9.x
    ("H100", "float32", 64, "TRITON_ATTN", {"FLASH_ATTN": ["float32"]}),
    ("B200", "float16", 128, "FLASHINFER", {"FLASH_ATTN": ["lower priority", "FLASHINFER"]}),
    ("B200", "bfloat16", 512, "FLASHINFER", {}),
    ("B200", "float16", 96, "FLASH_ATTN", {"FLASHINFER": ["head size", "96"]}),
    ("B200", "float16", 80, "FLASH_ATTN", {"FLASHINFER": ["80"]}),
    ("B200", "float32", 128, "TRITON_ATTN", {"FLASHINFER": ["float32"], "FLASH_ATTN": ["float32"]}),
    ((11, 0), "float16", 128, "FLASH_ATTN", {"FLASHINFER": ["lower priority"]}),  # not the major-10 list
    ((12, 0), "float16", 128, "FLASH_ATTN", {"FLASHINFER": ["lower priority"]}),
    ((12, 0), "float16", 512, "FLASHINFER", {"FLASH_ATTN": ["512"]}),  # 12.x runs FlashAttention 2: up to 256
    ((12, 2), "float16", 512, "TRITON_ATTN", {"FLASHINFER": ["12.1"]}),
    ("T4", "float16", 128, "FLASHINFER", {"FLASH_ATTN": ["8.0"]}),
    ("V100", "float16", 128, "TRITON_ATTN", {"FLASH_ATTN": ["8.0"], "FLASHINFER": ["7.5"]}),
    ("V100", "float32", 16, "FLEX_ATTENTION", {}),
]


@pytest.mark.parametrize("gpu, dtype, head, expected, reasons", DENSE_DEFAULTS)
def test_dense_defaults(lab, gpu, dtype, head, expected, reasons):
    """Pins the default choice for dense layers across GPUs, dtypes and head sizes, the default
    block size (16), and that every other backend gets its reason. Catches a refused backend
    chosen (a head size, dtype or GPU not validated), the Blackwell list used on other GPUs, and
    reasons missing."""
    assert_selected(select(lab, gpu, dtype, head), expected, 16, reasons)


@pytest.mark.parametrize("gpu", ["V100", "T4", (7, 5)])
def test_pre_ampere_bfloat16_is_refused(lab, gpu):
    """Pins that a bfloat16 model on a GPU below 8.0 is refused before any backend is considered,
    with a message naming bfloat16 and 8.0. Catches the platform's check skipped (Triton or
    FlashInfer would be chosen there)."""
    select_refused(lab, ["bfloat16", "8.0"], gpu, "bfloat16", 128)


@pytest.mark.parametrize("gpu, dtype, head, block, expected", [
    ("A100", "float16", 128, 32, "FLASH_ATTN"),
    ("A100", "float16", 128, 48, "FLASH_ATTN"),  # a multiple of 16 is enough
    ("A100", "float16", 128, 256, "FLASH_ATTN"),
    ("B200", "float16", 128, 96, "FLASHINFER"),  # kernel blocks 16, 32, 64: 96 is a multiple of 16
    ("H100", "float32", 128, 16, "TRITON_ATTN"),
])
def test_block_sizes(lab, gpu, dtype, head, block, expected):
    """Pins that the block size the user set is kept, and accepted when it is a multiple of a
    kernel block size. Catches the user's block size replaced by the backend's preferred one, and
    a kernel block size read as the only block size."""
    assert_selected(select(lab, gpu, dtype, head, block), expected, block)


@pytest.mark.parametrize("gpu, dtype, head, block", [
    ("A100", "float16", 128, 8),
    ("H100", "bfloat16", 64, 1),
    ("B200", "float16", 128, 24),
])
def test_block_size_with_no_backend(lab, gpu, dtype, head, block):
    """Pins a ValueError naming the block size when no dense backend takes it: every one wants a
    multiple of 16 (FlexAttention too, in v0.22.1). Catches a block rule skipped."""
    select_refused(lab, ["block size"], gpu, dtype, head, block)


@pytest.mark.parametrize("gpu, dtype, head, kv, expected", [
    ("H100", "float16", 128, "fp8", "FLASH_ATTN"),  # FlashAttention 3 reads e4m3
    ("H100", "bfloat16", 64, "fp8_e4m3", "FLASH_ATTN"),
    ("H100", "float16", 128, "fp8_e5m2", "FLASHINFER"),  # ... and not e5m2
    ("H100", "float16", 96, "fp8_e5m2", "TRITON_ATTN"),  # FlashInfer: head size 96
    ("A100", "float16", 128, "fp8", "FLASHINFER"),  # FlashAttention 2 reads no fp8
    ("A100", "float16", 96, "fp8", "TRITON_ATTN"),
    ("L4", "bfloat16", 128, "fp8_e4m3", "FLASHINFER"),
    ("B200", "float16", 128, "fp8", "FLASHINFER"),
    ("B200", "bfloat16", 96, "fp8", "TRITON_ATTN"),  # FlashAttention 4 reads no fp8 here
    ("V100", "float16", 128, "fp8", "TRITON_ATTN"),
])
def test_fp8_cache_choices(lab, gpu, dtype, head, kv, expected):
    """Pins the backends that serve an fp8 KV cache by default: FlashAttention 3 on Hopper for
    e4m3, FlashInfer where its head sizes fit, Triton on any GPU. Catches fp8 refused where a
    backend reads it (an A100 with an fp8 cache is served) and allowed where it does not."""
    assert_selected(select(lab, gpu, dtype, head, kv=kv), expected, 16, {"FLEX_ATTENTION": ["fp8"]})


@pytest.mark.parametrize("gpu, dtype, head, kv", [
    ("A100", "float16", 20, "fp8"),  # FA: fp8; FlashInfer, Triton: head size 20; Flex: no fp8
    ("H100", "float32", 16, "fp8_e5m2"),
])
def test_fp8_cache_with_no_backend(lab, gpu, dtype, head, kv):
    """Pins a ValueError that says fp8 when no backend reads this cache for this layer. Catches fp8
    allowed on FlexAttention."""
    select_refused(lab, ["fp8"], gpu, dtype, head, kv=kv)


@pytest.mark.parametrize("gpu, head, expected, reasons", [
    ("A100", 64, "TRITON_ATTN", {"FLASH_ATTN": ["sinks"], "FLASHINFER": ["sinks"]}),
    ("L4", 128, "TRITON_ATTN", {}),
    ("H100", 64, "FLASH_ATTN", {"TRITON_ATTN": ["lower priority"]}),  # FlashAttention 3 takes sinks
    ("B200", 64, "FLASHINFER", {"FLASH_ATTN": ["lower priority"]}),  # TRT-LLM attention on 10.x
    ("B200", 96, "FLASH_ATTN", {"FLASHINFER": ["96"]}),  # FlashAttention 4 takes sinks
    ((11, 0), 64, "TRITON_ATTN", {"FLASH_ATTN": ["sinks"], "FLASHINFER": ["sinks"]}),  # FlashAttention 2 on 11.x
    ((12, 0), 64, "TRITON_ATTN", {"FLASH_ATTN": ["sinks"], "FLASHINFER": ["sinks"]}),
])
def test_sinks_choices(lab, gpu, head, expected, reasons):
    """Pins the attention-sink choices: whoever comes first in the list and takes sinks, Triton
    where nobody before it does. Catches FlashAttention's sinks tied to version 3, and FlashInfer's
    tied to 10.0 or newer."""
    assert_selected(select(lab, gpu, "bfloat16", head, features=("sinks",)), expected, 16, reasons)


@pytest.mark.parametrize("gpu, block, kv, expected, expected_block, reasons", [
    ("H100", None, "auto", "FLASH_ATTN_MLA", 16, {"FLASHMLA": ["lower priority"], "CUTLASS_MLA": ["10.x"]}),
    ("H100", 64, "auto", "FLASH_ATTN_MLA", 64, {}),
    ("H100", None, "fp8", "FLASHMLA", 64, {"FLASH_ATTN_MLA": ["fp8"]}),  # its preferred block size
    ("H200", 128, "fp8_e4m3", "FLASHMLA", 128, {}),
    ("H100", 16, "fp8", "TRITON_MLA", 16, {"FLASHMLA": ["block size", "64"]}),  # the user's 16 rules FlashMLA out
    ("B200", None, "auto", "FLASHINFER_MLA", 32, {"CUTLASS_MLA": ["lower priority"], "FLASHMLA": ["hopper"]}),
    ("B200", 128, "auto", "FLASHINFER_MLA", 128, {}),
    ("B200", 16, "auto", "TRITON_MLA", 16, {"FLASHINFER_MLA": ["block size"], "CUTLASS_MLA": ["block size"]}),
    ("B200", None, "fp8", "FLASHINFER_MLA", 32, {}),
    ((10, 3), None, "auto", "FLASHINFER_MLA", 32, {}),
    ("A100", None, "auto", "TRITON_MLA", 16, {"FLASH_ATTN_MLA": ["hopper"], "FLASHINFER_MLA": ["10.x"]}),
    ("L4", 64, "fp8", "TRITON_MLA", 64, {}),
    # FlashInfer MLA and CUTLASS MLA test major == 10: 11.x and 12.x are not Blackwell for them
    ((11, 0), None, "fp8", "TRITON_MLA", 16, {"FLASHINFER_MLA": ["10.x"], "CUTLASS_MLA": ["10.x"]}),
    ((12, 0), None, "auto", "TRITON_MLA", 16, {"FLASHINFER_MLA": ["10.x"], "CUTLASS_MLA": ["10.x"]}),
])
def test_mla_choices(lab, gpu, block, kv, expected, expected_block, reasons):
    """Pins the MLA choices: FlashAttention MLA first on Hopper (FlashMLA for an fp8 cache),
    FlashInfer MLA first on Blackwell, Triton MLA elsewhere or when the user's block size rules
    the others out, and the block size: the user's, or the chosen backend's preferred one (16, or
    its smallest kernel block size: 64 for FlashMLA, 32 for FlashInfer MLA). Catches MLA routed to
    a dense backend, a block size forced over the user's, and the largest kernel block size preferred."""
    chosen = select(lab, gpu, "bfloat16", 576, block, kv=kv, features=MLA)
    assert_selected(chosen, expected, expected_block, {**{name: ["mla"] for name in DENSE}, **reasons})


@pytest.mark.parametrize("gpu, head, features, expected, reasons", [
    ("H100", 128, MLA, "TRITON_MLA", {"FLASH_ATTN_MLA": ["head size", "128"]}),  # Triton MLA: any head size
    ("H100", 320, MLA, "FLASH_ATTN_MLA", {}),
])
def test_mla_head_sizes(lab, gpu, head, features, expected, reasons):
    """Pins MLACommonBackend's head sizes (320 and 576) and Triton MLA's exception (any)."""
    assert_selected(select(lab, gpu, "bfloat16", head, features=features), expected, 16, reasons)


@pytest.mark.parametrize("gpu, dtype, block, kv, features, word", [
    ("H100", "float32", None, "auto", MLA, "float32"),
    ("H100", "bfloat16", None, "fp8_e5m2", MLA, "e5m2"),
    ("A100", "bfloat16", None, "fp8_e5m2", MLA, "e5m2"),
    ("H100", "bfloat16", None, "auto", ("mla", "sinks"), "sinks"),
    ("B200", "bfloat16", 8, "auto", MLA, "block size"),
    # Blackwell, where FlashInfer MLA and CUTLASS MLA come first: neither takes these either
    ("B200", "float32", None, "auto", MLA, "float32"),
    ("B200", "bfloat16", None, "fp8_e5m2", MLA, "e5m2"),
    ("B200", "bfloat16", None, "auto", ("mla", "sinks"), "sinks"),
])
def test_mla_with_no_backend(lab, gpu, dtype, block, kv, features, word):
    """Pins a ValueError naming the limit when no MLA backend can run the layer, on Hopper and on
    Blackwell. Catches an MLA layer handed to a dense backend (Triton would take float32, e5m2 or
    sinks), and FlashInfer MLA credited with what FlashInfer has (float32 aside): an e5m2 cache,
    or sinks on 10.x (FlashInfer's TRT-LLM rule applied to every FlashInfer backend)."""
    select_refused(lab, [word], gpu, dtype, 576, block, kv=kv, features=features)


def test_gqa_paged_kv_and_sliding_window_change_nothing(lab):
    """Pins that GQA, a paged cache and a sliding window change no choice: every backend serves
    them (the selector does not see them). Catches a selector that refuses a feature every backend
    has."""
    for gpu in ("A100", "H100", "B200"):
        for head in (64, 80, 128):
            plain = select(lab, gpu, "bfloat16", head).sel
            both = select(lab, gpu, "bfloat16", head, features=("paged_kv", "gqa", "sliding_window"))
            labkit.assert_value((both.sel.backend, both.sel.block_size), (plain.backend, plain.block_size),
                                what=f"{both.call}: (backend, block_size), as without the features")


# ------------------------------------------------------------------------------------------
# Step 5: the override (--attention-backend, AttentionConfig.backend).


@pytest.mark.parametrize("gpu, dtype, head, features, override, backend, block", [
    ("H100", "float16", 128, (), "TRITON_ATTN", "TRITON_ATTN", 16),
    ("A100", "float16", 128, (), "flashinfer", "FLASHINFER", 16),  # AttentionConfig upper-cases the name
    ("A100", "bfloat16", 128, (), "FLEX_ATTENTION", "FLEX_ATTENTION", 16),
    ("B200", "bfloat16", 96, (), "Flash_Attn", "FLASH_ATTN", 16),
    ("H100", "bfloat16", 576, MLA, "TRITON_MLA", "TRITON_MLA", 16),
    ("H100", "bfloat16", 576, MLA, "FLASHMLA", "FLASHMLA", 64),  # no block size set: FlashMLA's preferred one
    ("B200", "bfloat16", 576, MLA, "CUTLASS_MLA", "CUTLASS_MLA", 128),
    ("B200", "bfloat16", 576, MLA, "FLASHINFER_MLA", "FLASHINFER_MLA", 32),
])
def test_override_is_obeyed(lab, gpu, dtype, head, features, override, backend, block):
    """Pins that a runnable override wins over the priority list (get_attn_backend_cls validates it
    and returns it), whatever its case, with every other backend's reason naming
    ``--attention-backend``, and the block size the backend prefers when the user set none.
    Catches the override ignored, matched case-sensitively, and the block size left at 16 for a
    backend that cannot run it."""
    try:
        chosen = select(lab, gpu, dtype, head, features=features, override=override)
    except ValueError as err:
        raise AssertionError(
            f"select_backend({gpu!r}, {dtype!r}, {head}, features={features}, override={override!r}) refused "
            f"an override that runs here with its preferred block size ({block}): {err}"
        ) from None
    assert_selected(chosen, backend, block, {name: ["--attention-backend"] for name in ALL if name != backend})


@pytest.mark.parametrize("override", [None, "auto", "AUTO"])
def test_override_auto_is_no_override(lab, override):
    """Pins that ``"auto"``, in any case, selects as if nothing were asked for (AttentionConfig
    reads it as None). Catches "auto" refused as an unknown backend."""
    assert_selected(select(lab, "H100", "float16", 128, override=override), "FLASH_ATTN", 16,
                    {"TRITON_ATTN": ["lower priority"]})


@pytest.mark.parametrize("gpu, dtype, head, block, features, override, word", [
    ("A100", "float16", 80, None, (), "FLASHINFER", "80"),  # FlashInfer's head sizes
    ("A100", "float32", 128, None, (), "FLASH_ATTN", "float32"),
    ("H100", "float16", 24, None, (), "TRITON_ATTN", "24"),
    ("A100", "bfloat16", 64, None, ("sinks",), "FLASH_ATTN", "sinks"),
    ("A100", "bfloat16", 576, None, MLA, "FLASHMLA", "Hopper"),
    ("B200", "bfloat16", 576, None, MLA, "FLASHMLA", "Hopper"),
    ("H100", "bfloat16", 576, None, MLA, "CUTLASS_MLA", "10.x"),
    ("H100", "bfloat16", 576, 16, MLA, "FLASHMLA", "64"),  # the user's block size is kept, and refused
    ("H100", "bfloat16", 576, None, MLA, "FLASH_ATTN", "MLA"),
    ("H100", "bfloat16", 128, None, (), "TRITON_MLA", "MLA"),
])
def test_override_that_cannot_run_is_rejected(lab, gpu, dtype, head, block, features, override, word):
    """Pins a ValueError that names the override and the reason when the override cannot run the
    layer (get_attn_backend_cls: "Selected backend ... is not valid for this configuration").
    Catches an unsupported override accepted."""
    select_refused(lab, [override, word], gpu, dtype, head, block, features=features, override=override)


@pytest.mark.parametrize("override", ["FLASH", "XFORMERS", "TRITON_ATTN_VLLM_V1", "TOKENSPEED_MLA", "", 3])
def test_unknown_override_names_the_backends(lab, override):
    """Pins a ValueError that lists the backends when the override is not one of them (v0.22.1's
    enum raises "Unknown attention backend" and lists its members; TRITON_ATTN_VLLM_V1 is the old
    name of TRITON_ATTN; TOKENSPEED_MLA is left out of this lab), and says it is the override that
    is wrong. Catches a misspelt override silently ignored, and a message that blames a "backend"."""
    select_refused(lab, ["override", "FLASH_ATTN", "FLEX_ATTENTION"], "H100", "float16", 128, override=override)


def test_platform_check_comes_before_the_override(lab):
    """Pins that an override does not bring bfloat16 to a GPU the platform refuses it on. Catches
    the override returned before the platform's check."""
    select_refused(lab, ["bfloat16", "8.0"], "T4", "bfloat16", 128, override="TRITON_ATTN")


@pytest.mark.parametrize("kwargs", [
    {"dtype": "fp16"}, {"dtype": "half"}, {"head_size": 0}, {"head_size": -64}, {"head_size": 64.0},
    {"head_size": True}, {"block_size": 0}, {"block_size": -16}, {"block_size": 16.0}, {"block_size": True},
    {"kv": "fp8_e4m3fnuz"}, {"kv": None}, {"features": "mla"}, {"features": ("flash",)}, {"features": 3},
    {"features": (["mla"],)},  # a list inside: unhashable, still a bad feature
])
def test_bad_arguments_get_a_clear_error(lab, kwargs):
    """Pins a ValueError naming the argument for inputs vLLM does not accept. Catches a traceback
    from deep inside the rules instead (a TypeError from hashing a list given as a feature)."""
    args = {"gpu": "H100", "dtype": "float16", "head_size": 128, "block_size": None, "kv": "auto", "features": ()}
    args.update(kwargs)
    name = {"kv": "kv_cache_dtype"}.get(next(iter(kwargs)), next(iter(kwargs)))
    select_refused(lab, [name], args["gpu"], args["dtype"], args["head_size"], args["block_size"], args["kv"],
                   args["features"])


@pytest.mark.parametrize("call, args, word", [
    ("backend_problems", ("FLASH", "H100", "float16", 128, 16), "backend"),
    ("backend_problems", ("flash_attn", "H100", "float16", 128, 16), "backend"),
    ("backend_problems", ("FLASH_ATTN", "H100", "float64", 128, 16), "dtype"),
    ("backend_problems", ("FLEX_ATTENTION", "H100", "float16", 0, 16), "head_size"),
    ("backend_problems", ("TRITON_ATTN", "H100", "float16", 128, 16, "fp8_e4m3fnuz"), "kv_cache_dtype"),
    ("backend_problems", ("TRITON_ATTN", "H100", "float16", 128, 16, "auto", "mla"), "features"),
    ("candidate_order", ("H100", "mla"), "features"),
    ("candidate_order", ("H100", ("flash",)), "features"),
    ("candidate_order", ("H100", [{"mla"}]), "features"),  # a set inside: unhashable
])
def test_backend_problems_and_candidate_order_refuse_bad_arguments(lab, call, args, word):
    """Pins a ValueError naming the argument when backend_problems or candidate_order is called
    directly with one vLLM does not accept (an unknown or lower-case backend, a dtype, head size,
    KV-cache dtype or features outside the vocabulary). Catches the checks made only in
    select_backend: a KeyError from LIMITS, a float64 layer given reasons, head size 0 passed, the
    string "mla" read as the feature set {"m", "l", "a"} or as the MLA list."""
    refused(f"{call}{args!r}", lambda: getattr(lab, call)(*args), word)


def test_features_may_be_any_iterable(lab):
    """Pins that ``features`` is read once, whatever iterable it comes as (a generator is read only
    once): an MLA layer on an H100 gets FlashAttention MLA with block size 16, as with a set.
    Catches select_backend handing the raw iterable to every backend's check, the first emptying it:
    the other backends see a dense layer and TRITON_ATTN runs an MLA layer."""
    expected = ("FLASH_ATTN_MLA", 16)  # Hopper: FlashAttention MLA first, kernel block size 16
    choice = lab.select_backend("H100", "bfloat16", 576, features=(f for f in ["mla"]))
    labkit.assert_value((choice.backend, choice.block_size), expected,
                        what="select_backend('H100', 'bfloat16', 576, features=<a generator of 'mla'>): "
                             "(backend, block_size)")


# ------------------------------------------------------------------------------------------
# Step 6: CUDA graphs.


@pytest.mark.parametrize("backend, gpu, support", [
    ("FLASH_ATTN", "H100", "ALWAYS"),  # FlashAttention 3
    ("FLASH_ATTN", "A100", "UNIFORM_BATCH"),  # FlashAttention 2
    ("FLASH_ATTN", "B200", "UNIFORM_BATCH"),  # FlashAttention 4
    ("FLASHINFER", "B200", "UNIFORM_BATCH"),  # TRT-LLM attention for the decodes
    ("FLASHINFER", (10, 3), "UNIFORM_BATCH"),
    ("FLASHINFER", "H100", "UNIFORM_SINGLE_TOKEN_DECODE"),
    ("FLASHINFER", (11, 0), "UNIFORM_SINGLE_TOKEN_DECODE"),  # TRT-LLM attention on major 10 only
    ("FLASHINFER", (12, 0), "UNIFORM_SINGLE_TOKEN_DECODE"),
    ("FLASH_ATTN", (12, 0), "UNIFORM_BATCH"),  # FlashAttention 2 on 12.x
    ("TRITON_ATTN", "A100", "ALWAYS"),
    ("FLEX_ATTENTION", "H100", "ALWAYS"),
    ("FLASH_ATTN_MLA", "H100", "UNIFORM_BATCH"),
    ("FLASHMLA", "H100", "UNIFORM_BATCH"),
    ("FLASHINFER_MLA", "B200", "UNIFORM_BATCH"),
    ("CUTLASS_MLA", "B200", "UNIFORM_SINGLE_TOKEN_DECODE"),
    ("TRITON_MLA", "A100", "UNIFORM_BATCH"),
])
def test_cudagraph_support_table(lab, backend, gpu, support):
    """Pins each metadata builder's CUDA-graph support in v0.22.1. Catches FlashAttention 3's
    ALWAYS given to versions 2 and 4, FlashInfer's TRT-LLM level given off Blackwell (to Hopper,
    or to every major from 10 on: 11.x and 12.x have no TRT-LLM attention), and FlexAttention
    left at the base class's NEVER."""
    labkit.assert_value(lab.cudagraph_support(backend, gpu), support, what=f"cudagraph_support({backend!r}, {gpu!r})")


@pytest.mark.parametrize("requested, supports, spec, expected", [
    ("FULL_AND_PIECEWISE", ["ALWAYS"], False, "FULL_AND_PIECEWISE"),  # v0.22.1's default mode
    ("FULL", ["ALWAYS"], False, "FULL"),
    ("FULL", ["ALWAYS"], True, "FULL"),
    ("FULL", ["UNIFORM_BATCH"], False, "FULL_AND_PIECEWISE"),  # mixed batches drop to piecewise
    ("FULL", ["ALWAYS", "UNIFORM_SINGLE_TOKEN_DECODE"], False, "FULL_AND_PIECEWISE"),  # the weakest group decides
    ("FULL", ["UNIFORM_SINGLE_TOKEN_DECODE"], True, "PIECEWISE"),  # both downgrades, one after the other
    ("FULL_AND_PIECEWISE", ["UNIFORM_SINGLE_TOKEN_DECODE"], True, "PIECEWISE"),  # spec decode needs UNIFORM_BATCH
    ("FULL_AND_PIECEWISE", ["UNIFORM_BATCH"], True, "FULL_AND_PIECEWISE"),
    ("FULL_DECODE_ONLY", ["ALWAYS", "UNIFORM_BATCH"], True, "FULL_DECODE_ONLY"),
    ("FULL_DECODE_ONLY", ["NEVER"], False, "PIECEWISE"),  # no full graph: piecewise remains
    ("FULL_AND_PIECEWISE", ["UNIFORM_BATCH", "NEVER"], False, "PIECEWISE"),
    ("PIECEWISE", ["NEVER"], True, "PIECEWISE"),
    ("NONE", ["NEVER"], True, "NONE"),
])
def test_resolve_cudagraph_mode(lab, requested, supports, spec, expected):
    """Pins resolve_cudagraph_mode_and_sizes's downgrades against the weakest attention group: full
    graphs for mixed batches need ALWAYS, full decode graphs need more than NEVER, and with
    speculative decoding UNIFORM_BATCH. Catches the downgrade skipped (a graph the backend cannot
    replay), applied to a level that needs none, the first group read instead of the weakest,
    decode graphs on NEVER refused instead of downgraded, and the resolution stopped at the first
    downgrade (FULL with speculative decoding on UNIFORM_SINGLE_TOKEN_DECODE loses its full decode
    graphs too)."""
    labkit.assert_value(lab.resolve_cudagraph_mode(requested, supports, spec), expected,
                        what=f"resolve_cudagraph_mode({requested!r}, {supports!r}, spec_decode={spec})")


def test_resolve_cudagraph_mode_default_is_no_spec_decode(lab):
    """Pins ``spec_decode=False`` as the default: FULL_AND_PIECEWISE on a group with
    UNIFORM_SINGLE_TOKEN_DECODE keeps its full decode graphs (one query token per request). Catches
    a default of True, which drops them to PIECEWISE for every run without speculative decoding."""
    labkit.assert_value(lab.resolve_cudagraph_mode("FULL_AND_PIECEWISE", ["UNIFORM_SINGLE_TOKEN_DECODE"]),
                        "FULL_AND_PIECEWISE",
                        what="resolve_cudagraph_mode('FULL_AND_PIECEWISE', ['UNIFORM_SINGLE_TOKEN_DECODE'])")


def test_resolve_cudagraph_mode_takes_any_iterable(lab):
    """Pins that ``supports`` may come as any iterable of levels, a generator included (say, over
    the groups' backends): FULL on UNIFORM_BATCH becomes FULL_AND_PIECEWISE. Catches the levels read
    twice, once to check them and once to rank them: the second pass of a generator finds nothing."""
    supports = (level for level in ["ALWAYS", "UNIFORM_BATCH"])
    labkit.assert_value(lab.resolve_cudagraph_mode("FULL", supports, False), "FULL_AND_PIECEWISE",
                        what="resolve_cudagraph_mode('FULL', <a generator of 'ALWAYS', 'UNIFORM_BATCH'>, False)")


@pytest.mark.parametrize("supports", [["NEVER"], ["ALWAYS", "NEVER"]])
def test_no_full_graph_of_mixed_batches_on_never(lab, supports):
    """Pins the ValueError for FULL (full graphs of mixed batches too) when an attention group
    supports no full graph: the one mode v0.22.1 refuses rather than downgrades."""
    refused(f"resolve_cudagraph_mode('FULL', {supports!r})", lambda: lab.resolve_cudagraph_mode("FULL", supports),
            "full", "PIECEWISE")


@pytest.mark.parametrize("backend", ["FLASH", "flash_attn", "XFORMERS", "TRITON_ATTN_VLLM_V1", None])
def test_cudagraph_support_rejects_unknown_backends(lab, backend):
    """Pins a ValueError that lists the backends when ``backend`` is not one of them. Catches the
    table looked up without ``_check_backend`` (a bare KeyError from inside the table)."""
    refused(f"cudagraph_support({backend!r}, 'H100')", lambda: lab.cudagraph_support(backend, "H100"),
            "FLASH_ATTN", "FLEX_ATTENTION")


@pytest.mark.parametrize("requested, supports, word", [
    ("FULL_ALWAYS", ["ALWAYS"], "requested"),
    (["FULL"], ["ALWAYS"], "requested"),  # a list: unhashable, no key of CUDAGRAPH_MODES
    ("FULL", "ALWAYS", "supports"),
    ("FULL", [], "supports"),
    ("FULL", None, "supports"),
    ("FULL", 3, "supports"),
    ("FULL", ["SOMETIMES"], "supports"),
])
def test_resolve_cudagraph_mode_rejects_bad_input(lab, requested, supports, word):
    """Pins a ValueError naming ``requested`` for a mode that does not exist (a list too, which
    no dictionary lookup can hash), and ``supports`` for levels that are not a non-empty
    collection of ``CUDAGRAPH_SUPPORT``'s. Catches a TypeError from the lookup of a list."""
    refused(f"resolve_cudagraph_mode({requested!r}, {supports!r})",
            lambda: lab.resolve_cudagraph_mode(requested, supports), word)


# ------------------------------------------------------------------------------------------
# Step 7: choosing from measurements.


def load_example():
    return json.loads((HERE / "example_matrix.json").read_text())


def fastest_f64(entry, names, allowed=None):
    """Brute force: (time, name) pairs sorted by time, ties in the matrix's order."""
    pairs = [(entry["times_us"][n], i, n) for i, n in enumerate(names)
             if entry["times_us"].get(n) is not None and (allowed is None or n in allowed)]
    return [(t, n) for t, _, n in sorted(pairs)]


def test_choose_measured_on_every_example_entry(lab):
    """Pins the fastest backend, its time, the runner-up and the margin for every shape of the
    committed example matrix, against a brute-force sort. Catches the slowest picked and a
    margin taken the wrong way round."""
    matrix = load_example()
    for entry in matrix["entries"]:
        shape = {k: entry[k] for k in ("phase", "dtype", "batch", "seq_len")}
        ranked = fastest_f64(entry, matrix["backends"])
        choice = lab.choose_measured(shape, matrix)
        what = f"choose_measured({shape}, example_matrix.json)"
        labkit.assert_value((choice.backend, choice.time_us, choice.runner_up),
                            (ranked[0][1], ranked[0][0], ranked[1][1]), what=f"{what}: (backend, time_us, runner_up)")
        margin = ranked[1][0] / ranked[0][0]  # >= 1: the runner-up's time over the fastest
        if not isinstance(choice.margin, float) or not math.isclose(choice.margin, margin, rel_tol=1e-12):
            raise AssertionError(f"{what}.margin: got {choice.margin!r}, expected {margin!r} "
                                 f"(runner-up {ranked[1][0]} us / fastest {ranked[0][0]} us)")


def small_matrix():
    return {
        "backends": ["sdpa_flash", "flex_paged", "triton_paged", "gather_sdpa"],
        "entries": [
            {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024,
             "times_us": {"sdpa_flash": 20.0, "flex_paged": 30.0, "triton_paged": 25.0, "gather_sdpa": 40.0}},
            {"phase": "decode", "dtype": "bfloat16", "batch": 1, "seq_len": 1024,
             "times_us": {"sdpa_flash": None, "flex_paged": 30.0, "triton_paged": 25.0, "gather_sdpa": 40.0}},
            {"phase": "prefill", "dtype": "float16", "batch": 1, "seq_len": 4096,
             "times_us": {"sdpa_flash": 50.0, "flex_paged": 70.0, "triton_paged": 50.0, "gather_sdpa": 50.0}},
        ],
    }


def test_choose_measured_respects_allowed(lab):
    """Pins that only allowed backends compete: with the dense SDPA kernel excluded (a paged request
    it cannot read), the paged Triton kernel wins. Catches the support filter ignored."""
    m = small_matrix()
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    what = f"choose_measured({shape}, <small matrix>"
    labkit.assert_value(lab.choose_measured(shape, m).backend, "sdpa_flash", what=f"{what}).backend")
    choice = lab.choose_measured(shape, m, allowed={"flex_paged", "triton_paged", "gather_sdpa"})
    margin = round(choice.margin, 12) if isinstance(choice.margin, float) else choice.margin
    labkit.assert_value((choice.backend, choice.runner_up, margin), ("triton_paged", "flex_paged", 1.2),
                        what=f"{what}, allowed=the paged backends): (backend, runner_up, margin)")
    only = lab.choose_measured(shape, m, allowed=["gather_sdpa"])
    labkit.assert_value((only.backend, only.time_us, only.runner_up, only.margin), ("gather_sdpa", 40.0, None, None),
                        what=f"{what}, allowed=['gather_sdpa']): (backend, time_us, runner_up, margin)")


def test_choose_measured_skips_unmeasured(lab):
    """Pins that a backend with no time (None: not run, failed, or wrong) never wins. Catches None
    read as 0 us, the fastest time there is."""
    m = small_matrix()
    shape = {"phase": "decode", "dtype": "bfloat16", "batch": 1, "seq_len": 1024}
    choice = lab.choose_measured(shape, m)
    labkit.assert_value((choice.backend, choice.runner_up), ("triton_paged", "flex_paged"),
                        what=f"choose_measured({shape}, <small matrix, sdpa_flash's time None>): (backend, runner_up)")


def test_choose_measured_only_listed_backends_compete(lab):
    """Pins that only the backends of ``matrix["backends"]`` compete: a time in an entry's
    ``times_us`` under another name (a backend measured once, then dropped from the list) is not
    a candidate, however fast. Catches the candidates read from ``times_us`` instead of the list."""
    m = small_matrix()
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    m["entries"][0]["times_us"]["sdpa_cudnn"] = 5.0  # not in m["backends"]
    listed = sorted((t, n) for n, t in m["entries"][0]["times_us"].items() if n in m["backends"])
    expected = (listed[0][1], listed[0][0], listed[1][1])  # the brute force, before the call
    choice = lab.choose_measured(shape, m)
    labkit.assert_value((choice.backend, choice.time_us, choice.runner_up), expected,
                        what=f"choose_measured({shape}, <small matrix, a time for sdpa_cudnn, which "
                             "matrix['backends'] does not list>): (backend, time_us, runner_up)")


def test_choose_measured_breaks_ties_by_matrix_order(lab):
    """Pins that equal times go to the backend listed first in ``matrix["backends"]``, whatever the
    order of ``times_us``: the same matrix always gives the same answer, and the margin of a tie is
    exactly 1. Catches a tie broken by the last one seen, by name, or by dict order."""
    m = small_matrix()
    shape = {"phase": "prefill", "dtype": "float16", "batch": 1, "seq_len": 4096}
    what = f"choose_measured({shape}, <three backends tied at 50 us>"
    choice = lab.choose_measured(shape, m)
    labkit.assert_value((choice.backend, choice.runner_up, choice.margin), ("sdpa_flash", "triton_paged", 1.0),
                        what=f"{what}): (backend, runner_up, margin)")
    entry = m["entries"][2]
    entry["times_us"] = dict(reversed(list(entry["times_us"].items())))
    labkit.assert_value(lab.choose_measured(shape, m).backend, "sdpa_flash",
                        what=f"{what}, times_us in reverse order).backend")
    m["backends"] = ["gather_sdpa", "triton_paged", "flex_paged", "sdpa_flash"]
    choice = lab.choose_measured(shape, m)
    labkit.assert_value((choice.backend, choice.runner_up), ("gather_sdpa", "triton_paged"),
                        what=f"{what}, backends listed in reverse order): (backend, runner_up)")


@pytest.mark.parametrize("shape, allowed, word", [
    ({"phase": "decode", "dtype": "float16", "batch": 2, "seq_len": 1024}, None, "no entry"),
    ({"phase": "decode", "dtype": "float16", "batch": 1}, None, "shape"),
    ({"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}, {"sdpa_cudnn"}, "sdpa_cudnn"),
    ({"phase": "decode", "dtype": "bfloat16", "batch": 1, "seq_len": 1024}, {"sdpa_flash"}, "no allowed"),
    ({"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}, set(), "no allowed"),  # none allowed
    ({"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}, [], "no allowed"),
])
def test_choose_measured_bad_requests(lab, shape, allowed, word):
    """Pins a ValueError that says what is wrong: a shape that was not measured, a shape missing a
    key, an allowed name the matrix does not have, nothing left to choose (an empty ``allowed``
    too: it allows nothing, unlike None). Catches a KeyError or an IndexError from the inside, a
    made-up answer, and an empty ``allowed`` read as "no filter"."""
    refused(f"choose_measured({shape}, <small matrix>, allowed={allowed})",
            lambda: lab.choose_measured(shape, small_matrix(), allowed), word)


@pytest.mark.parametrize("matrix", [
    None,
    [],
    {"entries": small_matrix()["entries"]},
    {"backends": small_matrix()["backends"]},
    {"backends": "sdpa_flash", "entries": small_matrix()["entries"]},
    {"backends": small_matrix()["backends"], "entries": ["decode", None]},
], ids=["None", "a-list", "no-backends", "no-entries", "backends-a-string", "entries-not-mappings"])
def test_choose_measured_bad_matrix(lab, matrix):
    """Pins a ValueError naming the matrix when it is not a mapping with lists ``backends`` and
    ``entries`` whose entries are mappings (a file of another shape, loaded). Catches the matrix
    read unchecked: a KeyError, an AttributeError or a TypeError from the inside."""
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    refused(f"choose_measured({shape}, {matrix!r})", lambda: lab.choose_measured(shape, matrix), "matrix")


@pytest.mark.parametrize("allowed", [5, "gather_sdpa", [["gather_sdpa"]], ["gather_sdpa", None]],
                         ids=["an-int", "one-string", "a-nested-list", "a-name-and-None"])
def test_choose_measured_refuses_allowed_of_the_wrong_type(lab, allowed):
    """Pins a ValueError naming ``allowed`` when it is not None or a collection of backend names: a
    number, one name as a bare string (its letters are no names), a list holding a list, a name beside
    None. Catches ``set(allowed)`` taken unchecked: a bare TypeError from the inside ("'int' object is
    not iterable", "unhashable type: 'list'")."""
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    refused(f"choose_measured({shape}, <small matrix>, allowed={allowed!r})",
            lambda: lab.choose_measured(shape, small_matrix(), allowed), "allowed")


@pytest.mark.parametrize("time", [0, 0.0, -20.0, float("nan"), float("inf"), "20.0", True],
                         ids=["0", "0.0", "negative", "nan", "inf", "a-string", "True"])
def test_choose_measured_refuses_a_time_that_is_not_positive(lab, time):
    """Pins a ValueError naming ``times_us`` and the backend when a listed backend's time is not None or a
    finite number of microseconds > 0 (a measurement cannot take 0 us; the margin divides by the fastest
    time), and when ``times_us`` is not a mapping. Catches the times read unchecked: a ZeroDivisionError
    for a fastest time of 0, a TypeError comparing a string, a made-up answer for a negative or NaN
    time."""
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    m = small_matrix()
    m["entries"][0]["times_us"]["flex_paged"] = time
    refused(f"choose_measured({shape}, <small matrix, flex_paged's time {time!r}>)",
            lambda: lab.choose_measured(shape, m), "times_us", "flex_paged")
    m["entries"][0]["times_us"] = [20.0, 30.0, 25.0, 40.0]
    refused(f"choose_measured({shape}, <small matrix, times_us a list>)",
            lambda: lab.choose_measured(shape, m), "times_us")


@pytest.mark.parametrize("kind", ["float32", "float64", "int64"])
def test_choose_measured_takes_numpy_times(lab, kind):
    """Pins that a time may be any real number, a numpy scalar included (a matrix built from
    ``np.median`` of the measured runs): the answer is that of the same times as Python floats,
    worked out here by sorting. Catches a time check that takes only Python's int and float."""
    import numpy as np

    m = small_matrix()
    shape = {"phase": "decode", "dtype": "float16", "batch": 1, "seq_len": 1024}
    times = m["entries"][0]["times_us"]
    ranked = sorted((t, m["backends"].index(n), n) for n, t in times.items())
    expected = (ranked[0][2], ranked[0][0], ranked[1][2], ranked[1][0] / ranked[0][0])  # before the call
    m["entries"][0]["times_us"] = {n: np.dtype(kind).type(t) for n, t in times.items()}
    choice = lab.choose_measured(shape, m)
    got = (choice.backend, float(choice.time_us), choice.runner_up, round(float(choice.margin), 12))
    labkit.assert_value(got, expected, what=f"choose_measured({shape}, <small matrix, times as np.{kind}>): "
                                            "(backend, time_us, runner_up, margin)")


def test_choose_measured_error_lists_shapes_of_mixed_types(lab):
    """Pins the ValueError of a shape the matrix does not have when one of its entries lacks a key
    (written by hand, or by an older bench.py): the message still lists the matrix's shapes.
    Catches the shapes sorted as they are: None (the missing key) and an int do not compare, and a
    TypeError from the sort replaces the message."""
    m = small_matrix()
    m["entries"].append({"phase": "decode", "dtype": "float16", "seq_len": 2048,
                         "times_us": {"sdpa_flash": 30.0, "flex_paged": 45.0}})
    shape = {"phase": "decode", "dtype": "float16", "batch": 2, "seq_len": 1024}
    refused(f"choose_measured({shape}, <small matrix and an entry without batch>)",
            lambda: lab.choose_measured(shape, m), "no entry")


def test_choose_measured_leaves_the_matrix_alone(lab):
    """Pins that the matrix is read, not changed (the dispatcher reads it on every request).
    Catches times sorted or popped in place. The choices are checked too (the fastest measured
    time, ties to the matrix's order): leaving the matrix alone earns nothing without them."""
    m = small_matrix()
    before = json.dumps(m, sort_keys=False)
    fastest = ["sdpa_flash", "triton_paged", "sdpa_flash"]  # 20 us; 25 us (sdpa_flash unmeasured); a tie at 50 us
    for entry, want in zip(small_matrix()["entries"], fastest, strict=True):
        shape = {k: entry[k] for k in ("phase", "dtype", "batch", "seq_len")}
        labkit.assert_value(lab.choose_measured(shape, m).backend, want,
                            what=f"choose_measured({shape}, <small matrix>).backend")
    if json.dumps(m, sort_keys=False) != before:
        raise AssertionError(f"choose_measured changed the matrix it was given: before {before}, after "
                             f"{json.dumps(m, sort_keys=False)}")
