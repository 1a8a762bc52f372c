"""Lab 04-02 tests: vLLM v0.10.1's attention-backend selection on CUDA, and a measured dispatcher.

Run against your work with ``LAB_IMPL=starter pytest <this folder>``.

The truth here is not a float64 brute force but a table written by hand from vLLM v0.10.1's
source (the wheel of that release; paths relative to ``vllm/``). Each row says which function
of the source gives its answer. Nothing in the expected values is computed by the code under
test. The functions the rows cite:

- ``platforms/cuda.py`` ``CudaPlatformBase.get_attn_backend_cls`` (the V1 branch: FlashInfer
  first on SM 10.0, Triton for attention sinks off SM 9.0, FlashAttention on SM 8.0+ when
  ``is_attn_backend_supported`` says the head size and dtype fit, FlexAttention otherwise);
  ``check_and_update_config`` (block size 16 by default; MLA forces 64 for FlashMLA, 128 for
  CUTLASS MLA); ``is_kv_cache_dtype_supported`` (fp8 caches on V1).
- ``engine/arg_utils.py`` ``EngineArgs._is_v1_supported_oracle`` (no V1 below SM 8.0).
- ``v1/attention/backends/*.py``: each backend's ``get_supported_dtypes``,
  ``get_supported_head_sizes``, ``get_kv_cache_shape`` and ``Impl.__init__`` checks.
- ``attention/utils/fa_utils.py`` ``get_flash_attn_version`` / ``flash_attn_supports_fp8``
  (FlashAttention 3 on major 9 only); ``attention/ops/flashmla.py`` ``is_flashmla_supported``
  (Hopper only); ``utils/flashinfer.py`` ``supports_trtllm_attention`` (sinks on SM 10.0).
- ``v1/worker/gpu_model_runner.py`` ``initialize_cudagraph_capture`` and the metadata
  builders' ``cudagraph_support``.

The lab's selector differs from v0.10.1 in a few places the README lists ("Where this selector
differs from v0.10.1"); rows that exercise a difference say so.

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
ALL = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN_VLLM_V1", "FLEX_ATTENTION", "CUTLASS_MLA", "FLASHMLA", "TRITON_MLA")
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


@pytest.mark.parametrize("capability", [(1, 0), (7, 9), (12, 1)])
def test_device_capability_passes_any_possible_pair(lab, capability):
    """Pins that every pair with major >= 1 and a one-digit minor comes back unchanged, a GPU of
    the table or not. Catches a floor on major above 1 (``major >= 7`` because the V100 is the
    oldest GPU the table names): the selector's own rules are what refuse old GPUs."""
    what = f"device_capability({capability!r}) (major >= 1 and 0 <= minor <= 9: a possible GPU)"
    try:
        got = lab.device_capability(capability)
    except ValueError as err:
        raise AssertionError(f"{what}: refused it; only impossible pairs are a ValueError "
                             f"(old GPUs are refused later, by v1_engine_refusal): {err}") from None
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
    # get_supported_head_sizes of each dense backend
    ("FLASH_ATTN", "H100", ("float16", 80, 16), ["head size", "80"]),
    ("FLASHINFER", "B200", ("float16", 96, 16), ["head size", "96"]),
    ("TRITON_ATTN_VLLM_V1", "A100", ("float16", 72, 16), ["head size", "72"]),
    # get_supported_dtypes
    ("FLASH_ATTN", "A100", ("float32", 128, 16), ["float32"]),
    ("FLASHINFER", "B200", ("float32", 128, 16), ["float32"]),
    ("TRITON_ATTN_VLLM_V1", "A100", ("float32", 128, 16), ["float32"]),
    # get_kv_cache_shape: "Block size must be a multiple of 16."
    ("FLASH_ATTN", "A100", ("float16", 128, 8), ["block size", "16"]),
    ("TRITON_ATTN_VLLM_V1", "A100", ("float16", 128, 8), ["block size", "16"]),
    # the MLA backends: head size 576 only, their GPU, their block size
    ("TRITON_MLA", "A100", ("bfloat16", 128, 16, "auto", MLA), ["head size", "128"]),
    ("FLASHMLA", "A100", ("bfloat16", 576, 64, "auto", MLA), ["hopper"]),
    ("FLASHMLA", "H100", ("bfloat16", 576, 16, "auto", MLA), ["block size", "64"]),
    ("CUTLASS_MLA", "H100", ("bfloat16", 576, 128, "auto", MLA), ["10.0"]),
    ("CUTLASS_MLA", "B200", ("bfloat16", 576, 64, "auto", MLA), ["block size", "128"]),
    ("TRITON_MLA", "H100", ("float32", 576, 16, "auto", MLA), ["float32"]),
])
def test_backend_problems_name_the_limit(lab, backend, gpu, layer, words):
    """Pins each backend's declared head sizes, dtypes and block-size rule, and that the reason
    names the limit and the layer's value. Catches a limit not checked (a head size not
    validated, a dtype let through) and reasons that do not say what is wrong."""
    problems, call = problems_of(lab, backend, gpu, *layer)
    if not problems:
        raise AssertionError(f"{call}: got [], expected a reason naming {words} ({backend} cannot run this layer)")
    missing = [w for w in words if w.lower() not in " ".join(problems).lower()]
    if missing:
        raise AssertionError(f"{call}: the reasons should mention {missing} (README step 2): {problems}")


@pytest.mark.parametrize("backend, gpu, layer", [
    ("FLASH_ATTN", "A100", ("float16", 128, 16)),
    ("FLASH_ATTN", "B200", ("bfloat16", 256, 32)),
    ("FLASHINFER", "A100", ("bfloat16", 64, 8, "auto", ("sliding_window",))),
    ("TRITON_ATTN_VLLM_V1", "L4", ("float16", 96, 16, "auto", ("sinks", "sliding_window"))),
    ("FLEX_ATTENTION", "A100", ("float32", 80, 1)),
    ("FLASHMLA", "H100", ("bfloat16", 576, 64, "auto", MLA)),
    ("CUTLASS_MLA", "B200", ("float16", 576, 128, "auto", MLA)),
    ("TRITON_MLA", "L4", ("float16", 576, 8, "auto", MLA)),
])
def test_backend_problems_empty_when_it_can_run(lab, backend, gpu, layer):
    """Pins that a layer inside every limit gets no reason at all. Catches checks that are too
    strict (FlexAttention refusing float32 or an odd head size, a block-size rule applied to a
    backend that has none)."""
    problems, call = problems_of(lab, backend, gpu, *layer)
    labkit.assert_value(problems, [], what=f"{call} ({backend} can run this layer)")


@pytest.mark.parametrize("backend, gpu, kv, ok", [
    # FlashAttentionImpl: fp8 needs flash_attn_supports_fp8() (FA3, major 9); e4m3 only
    ("FLASH_ATTN", "H100", "fp8", True),
    ("FLASH_ATTN", "H100", "fp8_e4m3", True),
    ("FLASH_ATTN", "H100", "fp8_e5m2", False),
    ("FLASH_ATTN", "A100", "fp8", False),
    ("FLASH_ATTN", "B200", "fp8", False),  # Blackwell runs FA2: is Hopper (== 9), not "at least 9"
    # get_fp8_dtype_for_flashinfer: both formats
    ("FLASHINFER", "B200", "fp8_e5m2", True),
    ("FLASHINFER", "A100", "fp8", True),
    # TritonAttentionImpl views the cache as float8_e4m3fn
    ("TRITON_ATTN_VLLM_V1", "B200", "fp8", True),
    ("TRITON_ATTN_VLLM_V1", "B200", "fp8_e5m2", False),
    # FlexAttentionImpl: "FlexAttention does not support quantized kv-cache"
    ("FLEX_ATTENTION", "H100", "fp8", False),
])
def test_fp8_cache_per_backend(lab, backend, gpu, kv, ok):
    """Pins which backend reads which fp8 KV cache on which GPU. Catches fp8 allowed on a backend
    that lacks it (FlexAttention, FA2) and FA3 tested as ``major >= 9`` (Blackwell is not Hopper)."""
    problems, call = problems_of(lab, backend, gpu, "float16", 128, 16, kv)
    if ok:
        labkit.assert_value(problems, [], what=f"{call} ({backend} on {gpu} reads a {kv} cache)")
    elif not any("fp8" in p.lower() for p in problems):
        raise AssertionError(f"{call}: {backend} on {gpu} cannot read a {kv} cache; expected a reason naming 'fp8', "
                             f"got {problems}")


@pytest.mark.parametrize("backend, gpu, ok", [
    ("FLASH_ATTN", "H100", True),  # FlashAttentionImpl asserts FA3 for sinks
    ("FLASH_ATTN", "A100", False),
    ("FLASH_ATTN", "B200", False),
    ("FLASHINFER", "B200", True),  # TRT-LLM attention, SM 10.0 only
    ("FLASHINFER", "H100", False),
    ("FLASHINFER", (12, 0), False),  # supports_trtllm_attention: is_device_capability(100), an equality
    ("TRITON_ATTN_VLLM_V1", "A100", True),
    ("FLEX_ATTENTION", "A100", False),  # FlexAttentionImpl has no sinks parameter
])
def test_sinks_per_backend(lab, backend, gpu, ok):
    """Pins which backend takes attention sinks on which GPU. Catches sinks let through where the
    Impl asserts or has no parameter for them, and FlashInfer's SM 10.0 read as "10.0 or newer" (a
    consumer Blackwell card, 12.0, has no TRT-LLM attention in v0.10.1)."""
    problems, call = problems_of(lab, backend, gpu, "bfloat16", 64, 16, "auto", ("sinks",))
    if ok:
        labkit.assert_value(problems, [], what=f"{call} ({backend} on {gpu} takes attention sinks)")
    elif not any("sink" in p.lower() for p in problems):
        raise AssertionError(f"{call}: {backend} on {gpu} takes no attention sinks; expected a reason naming 'sinks', "
                             f"got {problems}")


def test_sliding_window_per_backend(lab):
    """Pins that FlexAttention and every MLA backend refuse a sliding window (their Impls raise
    NotImplementedError) and the three other dense backends take it. Catches the check skipped."""
    for backend in ALL:
        mla = backend.endswith("MLA")
        layer = ("bfloat16", 576, 64, "auto", ("mla", "sliding_window")) if mla else \
            ("bfloat16", 128, 16, "auto", ("sliding_window",))
        gpu = "H100"
        problems, call = problems_of(lab, backend, gpu, *layer)
        takes = backend in ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN_VLLM_V1")
        window = [p for p in problems if "sliding window" in p.lower()]
        if takes and window:
            raise AssertionError(f"{call}: {backend} takes a sliding window, got {window}")
        if not takes and not window:
            raise AssertionError(f"{call}: {backend} takes no sliding window; expected a reason naming "
                                 f"'sliding window', got {problems}")


def test_mla_and_dense_backends_do_not_mix(lab):
    """Pins that a dense backend refuses an MLA layer and an MLA backend refuses a dense one, with
    a reason that says MLA. Catches MLA routed to a non-MLA backend."""
    for backend in ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN_VLLM_V1", "FLEX_ATTENTION"):
        problems, call = problems_of(lab, backend, "H100", "bfloat16", 576, 16, "auto", MLA)
        if not any("mla" in p.lower() for p in problems):
            raise AssertionError(f"{call}: a dense backend takes no MLA layer; expected a reason naming 'MLA', "
                                 f"got {problems}")
    for backend in ("CUTLASS_MLA", "FLASHMLA", "TRITON_MLA"):
        problems, call = problems_of(lab, backend, "H100", "bfloat16", 576, 64)
        if not any("mla" in p.lower() for p in problems):
            raise AssertionError(f"{call}: an MLA backend takes no dense layer; expected a reason naming 'MLA', "
                                 f"got {problems}")


# ------------------------------------------------------------------------------------------
# Step 3: the V1 engine's gate.


@pytest.mark.parametrize("gpu, kv, override, refuses, words", [
    ("V100", "auto", None, True, ["8.0"]),  # _is_v1_supported_oracle: "Compute Capability < 8.0"
    ("T4", "auto", None, True, ["8.0"]),
    ("T4", "auto", "FLEX_ATTENTION", True, ["8.0"]),
    ("A100", "auto", None, False, []),
    ("L4", "auto", None, False, []),
    ("B200", "auto", None, False, []),
    ("H100", "fp8", None, False, []),  # is_kv_cache_dtype_supported: FA will be used and has fp8
    ("A100", "fp8", None, True, ["fp8"]),
    ("L4", "fp8_e4m3", None, True, ["fp8"]),
    ("H100", "fp8", "FLASHINFER", True, ["fp8", "FLASHINFER"]),  # will_use_fa is False
    ("H100", "fp8", "FLASH_ATTN", True, ["fp8"]),  # only "FLASH_ATTN_VLLM_V1" counts as FA there
    ("B200", "fp8_e5m2", "TRITON_ATTN_VLLM_V1", False, []),  # SM 10.0: always supported
    ((12, 0), "auto", None, False, []),
])
def test_v1_engine_gate(lab, gpu, kv, override, refuses, words):
    """Pins the V1 engine's gate: no V1 below compute capability 8.0, and fp8 caches only on SM
    10.0 or with no override on Hopper. Catches the capability compared as strings ("10.0" <
    "8.0") or floats of a wrong form, and the gate forgotten."""
    call = f"v1_engine_refusal({gpu!r}, {kv!r}, {override!r})"
    reason = lab.v1_engine_refusal(gpu, kv, override)
    if not refuses:
        labkit.assert_value(reason, None, what=f"{call} (the V1 engine runs this)")
    elif not isinstance(reason, str) or not reason.strip():
        raise AssertionError(f"{call}: got {reason!r}; the V1 engine refuses this, expected a reason naming {words}")
    elif [w for w in words if w.lower() not in reason.lower()]:
        raise AssertionError(f"{call}: the refusal should mention {words} (README step 3): {reason!r}")


# ------------------------------------------------------------------------------------------
# Step 4: the default priority.


@pytest.mark.parametrize("gpu, features, order", [
    ("A100", (), ("FLASH_ATTN", "FLEX_ATTENTION")),
    ("L4", (), ("FLASH_ATTN", "FLEX_ATTENTION")),
    ("H100", (), ("FLASH_ATTN", "FLEX_ATTENTION")),
    ("B200", (), ("FLASHINFER", "FLASH_ATTN", "FLEX_ATTENTION")),
    ((12, 0), (), ("FLASH_ATTN", "FLEX_ATTENTION")),  # is_device_capability(100) is exact
    ("A100", ("sinks",), ("TRITON_ATTN_VLLM_V1", "FLASH_ATTN", "FLEX_ATTENTION")),
    ("H100", ("sinks",), ("FLASH_ATTN", "FLEX_ATTENTION")),
    ("B200", ("sinks",), ("FLASHINFER", "TRITON_ATTN_VLLM_V1", "FLASH_ATTN", "FLEX_ATTENTION")),
    ("H100", ("mla",), ("CUTLASS_MLA", "FLASHMLA", "TRITON_MLA")),
    ("A100", ("mla", "gqa"), ("CUTLASS_MLA", "FLASHMLA", "TRITON_MLA")),
])
def test_candidate_order(lab, gpu, features, order):
    """Pins get_attn_backend_cls's priority: FlashInfer first only on SM 10.0 exactly, Triton for
    sinks except on SM 9.0, then FlashAttention, then FlexAttention; MLA layers get MLA backends
    only. Catches ``>=`` where the source tests equality, and MLA routed to the dense list."""
    got = lab.candidate_order(gpu, features)
    labkit.assert_value(tuple(got) if isinstance(got, (list, tuple)) else got, order,
                        what=f"candidate_order({gpu!r}, {features!r})")


# ------------------------------------------------------------------------------------------
# Step 5: the choice. Tables by feature; each row cites the rule that decides it.

DENSE = [
    # gpu, dtype, head, expected, {backend: words its reason must contain}
    ("A100", "float16", 128, "FLASH_ATTN", {"FLEX_ATTENTION": ["lower priority"], "FLASHINFER": ["default"]}),
    ("A100", "bfloat16", 64, "FLASH_ATTN", {}),
    ("A100", "float16", 96, "FLASH_ATTN", {}),
    ("A100", "float16", 256, "FLASH_ATTN", {}),
    ("A100", "float32", 128, "FLEX_ATTENTION", {"FLASH_ATTN": ["float32"]}),  # FA dtypes fp16/bf16
    ("A100", "float16", 80, "FLEX_ATTENTION", {"FLASH_ATTN": ["head size", "80"]}),  # 80 not in FA's list
    ("A100", "float16", 72, "FLEX_ATTENTION", {"FLASH_ATTN": ["72"]}),
    ("A100", "bfloat16", 576, "FLEX_ATTENTION", {"FLASH_ATTN": ["576"], "TRITON_MLA": ["mla"]}),
    ("A10G", "float16", 128, "FLASH_ATTN", {}),
    ("L4", "float16", 128, "FLASH_ATTN", {}),
    ("L4", "bfloat16", 80, "FLEX_ATTENTION", {}),
    ("H100", "float16", 128, "FLASH_ATTN", {"TRITON_ATTN_VLLM_V1": ["default"]}),
    ("H100", "bfloat16", 256, "FLASH_ATTN", {}),
    ("H100", "float32", 64, "FLEX_ATTENTION", {"FLASH_ATTN": ["float32"]}),
    ("B200", "float16", 128, "FLASHINFER", {"FLASH_ATTN": ["lower priority", "FLASHINFER"]}),
    ("B200", "bfloat16", 64, "FLASHINFER", {}),
    ("B200", "float16", 96, "FLASH_ATTN", {"FLASHINFER": ["head size", "96"]}),  # FlashInfer: 64/128/256
    ("B200", "float16", 80, "FLEX_ATTENTION", {"FLASHINFER": ["80"], "FLASH_ATTN": ["80"]}),
    ("B200", "float32", 128, "FLEX_ATTENTION", {"FLASHINFER": ["float32"]}),
    ((12, 0), "float16", 128, "FLASH_ATTN", {}),
]


@pytest.mark.parametrize("gpu, dtype, head, expected, reasons", DENSE)
def test_dense_defaults(lab, gpu, dtype, head, expected, reasons):
    """Pins the default choice for dense layers across GPUs, dtypes and head sizes, the default
    block size (16), and that every other backend gets its reason. Catches a rejected backend
    chosen (a head size or dtype not validated), the Blackwell rule read as ``>= 10``, and
    reasons missing."""
    assert_selected(select(lab, gpu, dtype, head), expected, 16, reasons)


@pytest.mark.parametrize("gpu", ["V100", "T4", (7, 5)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_pre_ampere_gpus_get_no_v1_backend(lab, gpu, dtype):
    """Pins that V100 and T4 never reach a V1 backend: the engine's oracle sends compute capability
    below 8.0 to V0 (and raises with VLLM_USE_V1=1), with a message that says 8.0. Catches the
    gate skipped (cuda.py's own branch would answer FLEX_ATTENTION there)."""
    select_refused(lab, ["8.0"], gpu, dtype, 128)


@pytest.mark.parametrize("gpu, dtype, head, block, expected, reasons", [
    ("A100", "float16", 128, 32, "FLASH_ATTN", {}),
    ("A100", "float16", 128, 64, "FLASH_ATTN", {}),
    ("A100", "float16", 128, 128, "FLASH_ATTN", {}),
    # FA's get_kv_cache_shape wants a multiple of 16 (README: v0.10.1 would pick FA and fail there)
    ("A100", "float16", 128, 8, "FLEX_ATTENTION", {"FLASH_ATTN": ["block size"]}),
    ("H100", "bfloat16", 64, 1, "FLEX_ATTENTION", {"FLASH_ATTN": ["block size"]}),
    ("B200", "float16", 128, 8, "FLASHINFER", {}),  # FlashInfer has no block-size rule
])
def test_block_sizes(lab, gpu, dtype, head, block, expected, reasons):
    """Pins that the requested block size is kept for dense layers and FlashAttention's multiple
    of 16. Catches block sizes not checked, and a block size silently replaced by the default."""
    assert_selected(select(lab, gpu, dtype, head, block), expected, block, reasons)


@pytest.mark.parametrize("gpu, dtype, head, features, expected", [
    ("A100", "float16", 128, ("sliding_window",), "FLASH_ATTN"),
    ("H100", "bfloat16", 64, ("sliding_window", "gqa"), "FLASH_ATTN"),
    ("B200", "float16", 128, ("sliding_window",), "FLASHINFER"),
    ("B200", "float16", 96, ("sliding_window",), "FLASH_ATTN"),
])
def test_sliding_window_choices(lab, gpu, dtype, head, features, expected):
    """Pins that a sliding window leaves the usual choice alone where that backend takes it."""
    assert_selected(select(lab, gpu, dtype, head, features=features), expected, 16)


@pytest.mark.parametrize("gpu, dtype, head, block", [
    ("A100", "float32", 128, None),  # FA: dtype; Flex: no sliding window
    ("A100", "float16", 80, None),  # FA: head size; Flex: no sliding window
    ("B200", "float16", 80, None),
    ("A100", "float16", 128, 8),  # FA: block size; Flex: no sliding window
])
def test_sliding_window_with_no_backend(lab, gpu, dtype, head, block):
    """Pins a ValueError naming the sliding window when the only backend left is FlexAttention,
    whose Impl raises "FlexAttention does not support sliding window yet". Catches the sliding
    window check skipped (FLEX_ATTENTION returned)."""
    select_refused(lab, ["sliding window"], gpu, dtype, head, block, features=("sliding_window",))


@pytest.mark.parametrize("gpu, dtype, head, kv, expected", [
    ("H100", "float16", 128, "fp8", "FLASH_ATTN"),  # FA3 reads e4m3
    ("H100", "bfloat16", 64, "fp8_e4m3", "FLASH_ATTN"),
    ("B200", "float16", 128, "fp8", "FLASHINFER"),
    ("B200", "bfloat16", 256, "fp8_e5m2", "FLASHINFER"),
])
def test_fp8_cache_choices(lab, gpu, dtype, head, kv, expected):
    """Pins the backends that serve an fp8 KV cache by default: FA3 on Hopper, FlashInfer on SM 10.0."""
    assert_selected(select(lab, gpu, dtype, head, kv=kv), expected, 16, {"FLEX_ATTENTION": ["fp8"]})


@pytest.mark.parametrize("gpu, dtype, head, kv, words", [
    ("A100", "float16", 128, "fp8", ["fp8"]),  # the engine's gate: no FA3
    ("L4", "bfloat16", 128, "fp8_e4m3", ["fp8"]),
    ("H100", "float16", 128, "fp8_e5m2", ["e5m2"]),  # FA3 reads e4m3 only; Flex none
    ("H100", "float16", 80, "fp8", ["fp8"]),  # FA: head size; Flex: no fp8
    ("B200", "float16", 96, "fp8", ["fp8"]),  # FlashInfer: head size; FA2: no fp8; Flex: no fp8
])
def test_fp8_cache_with_no_backend(lab, gpu, dtype, head, kv, words):
    """Pins a ValueError that says fp8 when no V1 backend reads this cache here. Catches fp8
    allowed on a backend that lacks it (FA2 on Blackwell, FlexAttention) and the gate skipped."""
    select_refused(lab, words, gpu, dtype, head, kv=kv)


@pytest.mark.parametrize("gpu, head, expected, reasons", [
    ("A100", 64, "TRITON_ATTN_VLLM_V1", {"FLASH_ATTN": ["sinks"]}),  # has_sink and not SM 9.0
    ("L4", 128, "TRITON_ATTN_VLLM_V1", {}),
    ("H100", 64, "FLASH_ATTN", {"TRITON_ATTN_VLLM_V1": ["default"]}),  # FA3 takes sinks
    ("B200", 64, "FLASHINFER", {"TRITON_ATTN_VLLM_V1": ["lower priority"]}),  # FlashInfer is tried first
    ("B200", 96, "TRITON_ATTN_VLLM_V1", {"FLASHINFER": ["96"]}),
])
def test_sinks_choices(lab, gpu, head, expected, reasons):
    """Pins the attention-sink rule: Triton off SM 9.0, FA3 on it, FlashInfer first on SM 10.0.
    Catches the SM 9.0 test written as ``>= 9.0`` (Blackwell would skip Triton and fail)."""
    assert_selected(select(lab, gpu, "bfloat16", head, features=("sinks",)), expected, 16, reasons)


@pytest.mark.parametrize("gpu, block, expected, expected_block, reasons", [
    ("H100", None, "FLASHMLA", 64, {"TRITON_MLA": ["lower priority"], "CUTLASS_MLA": ["10.0"]}),
    ("H100", 16, "FLASHMLA", 64, {}),  # check_and_update_config forces 64 whatever was asked
    ("H200", 128, "FLASHMLA", 64, {}),
    ("B200", None, "CUTLASS_MLA", 128, {}),  # SM 10.0: CUTLASS MLA, block forced to 128
    ("B200", 64, "CUTLASS_MLA", 128, {}),
    ("A100", None, "TRITON_MLA", 16, {"FLASHMLA": ["hopper"], "FLASH_ATTN": ["mla"]}),
    ("L4", 32, "TRITON_MLA", 32, {}),
    ("A100", 64, "TRITON_MLA", 64, {}),  # README: v0.10.1 falls through to the dense chain here
])
def test_mla_choices(lab, gpu, block, expected, expected_block, reasons):
    """Pins the MLA rules: CUTLASS MLA on SM 10.0 with 128-token blocks, FlashMLA on Hopper with
    64-token blocks, Triton MLA elsewhere, and the block size the platform forces. Catches MLA
    routed to a non-MLA backend, the forced block size forgotten, and FlashMLA offered off Hopper."""
    chosen = select(lab, gpu, "bfloat16", 576, block, features=MLA)
    assert_selected(chosen, expected, expected_block,
                    {**{name: ["mla"] for name in ALL if not name.endswith("MLA")}, **reasons})


@pytest.mark.parametrize("gpu, dtype, head, kv, features, word", [
    ("H100", "float32", 576, "auto", MLA, "float32"),
    ("H100", "bfloat16", 128, "auto", MLA, "576"),
    ("H100", "bfloat16", 576, "fp8", MLA, "fp8"),  # FlashMLA V1: "FP8 KV cache not yet supported"
    ("B200", "bfloat16", 576, "fp8", MLA, "fp8"),
    ("A100", "bfloat16", 576, "fp8", MLA, "fp8"),  # the engine's gate
    ("H100", "bfloat16", 576, "auto", ("mla", "sliding_window"), "sliding window"),
])
def test_mla_with_no_backend(lab, gpu, dtype, head, kv, features, word):
    """Pins a ValueError naming the limit when no MLA backend can run the layer. Catches an MLA
    layer handed to a dense backend (FlexAttention would take float32, head 128 or a window)."""
    select_refused(lab, [word], gpu, dtype, head, kv=kv, features=features)


def test_gqa_and_paged_kv_change_nothing(lab):
    """Pins that GQA and a paged cache are served by every V1 backend: the features are accepted
    and change no choice. Catches a selector that refuses a feature every backend has."""
    for gpu in ("A100", "H100", "B200"):
        for head in (64, 80, 128):
            plain = select(lab, gpu, "bfloat16", head).sel
            both = select(lab, gpu, "bfloat16", head, features=("paged_kv", "gqa"))
            labkit.assert_value((both.sel.backend, both.sel.block_size), (plain.backend, plain.block_size),
                                what=f"{both.call}: (backend, block_size), as without the features")


# ------------------------------------------------------------------------------------------
# Step 5: the override (VLLM_ATTENTION_BACKEND).


@pytest.mark.parametrize("gpu, dtype, head, features, override, block", [
    ("H100", "float16", 128, (), "TRITON_ATTN_VLLM_V1", 16),
    ("A100", "float16", 128, (), "FLASHINFER", 16),
    ("A100", "bfloat16", 128, (), "FLEX_ATTENTION", 16),
    ("B200", "bfloat16", 96, (), "FLASH_ATTN", 16),
    ("H100", "bfloat16", 576, MLA, "TRITON_MLA", 16),  # forced case: nothing forces the block size
    ("B200", "bfloat16", 576, MLA, "TRITON_MLA", 16),
    ("H100", "bfloat16", 576, MLA, "FLASHMLA", 64),
    ("B200", "bfloat16", 576, MLA, "CUTLASS_MLA", 128),  # forced case: use_cutlass_mla forces 128 too
])
def test_override_is_obeyed(lab, gpu, dtype, head, features, override, block):
    """Pins that a runnable override wins over the default (get_attn_backend_cls returns it at
    once), with every other backend's reason naming the override, and the block size the platform
    forces for a named FlashMLA (64) or CUTLASS MLA (128). Catches the override ignored, and a
    block size forced only in the default case (CUTLASS MLA named then keeps 16-token blocks it
    cannot run)."""
    try:
        chosen = select(lab, gpu, dtype, head, features=features, override=override)
    except ValueError as err:
        raise AssertionError(
            f"select_backend({gpu!r}, {dtype!r}, {head}, features={features}, override={override!r}) refused "
            f"an override that runs here with the block size the platform forces for it ({block}): {err}"
        ) from None
    assert_selected(chosen, override, block, {name: ["VLLM_ATTENTION_BACKEND"] for name in ALL if name != override})


@pytest.mark.parametrize("gpu, dtype, head, features, override, word", [
    ("A100", "float16", 80, (), "FLASHINFER", "80"),  # FlashInfer's get_supported_head_sizes
    ("A100", "float32", 128, (), "FLASH_ATTN", "float32"),
    ("H100", "float16", 80, (), "TRITON_ATTN_VLLM_V1", "80"),  # TritonAttentionImpl.validate_head_size
    ("A100", "float16", 128, ("sliding_window",), "FLEX_ATTENTION", "sliding window"),
    ("A100", "bfloat16", 64, ("sinks",), "FLASH_ATTN", "sinks"),
    ("A100", "bfloat16", 576, MLA, "FLASHMLA", "Hopper"),
    ("H100", "bfloat16", 576, MLA, "CUTLASS_MLA", "10.0"),
    ("H100", "bfloat16", 576, MLA, "FLASH_ATTN", "MLA"),
    ("H100", "bfloat16", 128, (), "TRITON_MLA", "MLA"),
])
def test_override_that_cannot_run_is_rejected(lab, gpu, dtype, head, features, override, word):
    """Pins a ValueError that names the override and the reason when the override cannot run the
    layer (v0.10.1 accepts it and fails later, or ignores it: README). Catches an unsupported
    override accepted."""
    select_refused(lab, [override, word], gpu, dtype, head, features=features, override=override)


@pytest.mark.parametrize("override", ["FLASH", "flash_attn", "XFORMERS", "TORCH_SDPA", "", 3])
def test_unknown_override_names_the_backends(lab, override):
    """Pins a ValueError that lists the backends when the override is not one of them (selector.py
    raises "Invalid attention backend" for names outside its enum). Catches a misspelt override
    silently ignored."""
    select_refused(lab, ["FLASH_ATTN", "FLEX_ATTENTION"], "H100", "float16", 128, override=override)


def test_engine_gate_comes_before_the_override(lab):
    """Pins that an override does not bring V1 to a GPU the engine refuses, nor an fp8 cache the
    gate refuses. Catches the override checked first."""
    select_refused(lab, ["8.0"], "T4", "float16", 128, override="FLEX_ATTENTION")
    select_refused(lab, ["fp8"], "H100", "float16", 128, kv="fp8", override="TRITON_ATTN_VLLM_V1")


@pytest.mark.parametrize("kwargs", [
    {"dtype": "fp16"}, {"dtype": "half"}, {"head_size": 0}, {"head_size": -64}, {"head_size": 64.0},
    {"head_size": True}, {"block_size": 24}, {"block_size": 0}, {"kv": "fp8_e4m3fnuz"}, {"kv": None},
    {"features": "mla"}, {"features": ("flash",)}, {"features": 3},
])
def test_bad_arguments_get_a_clear_error(lab, kwargs):
    """Pins a ValueError naming the argument for inputs vLLM does not accept. Catches a traceback
    from deep inside the rules instead."""
    args = {"gpu": "H100", "dtype": "float16", "head_size": 128, "block_size": None, "kv": "auto", "features": ()}
    args.update(kwargs)
    name = {"kv": "kv_cache_dtype"}.get(next(iter(kwargs)), next(iter(kwargs)))
    select_refused(lab, [name], args["gpu"], args["dtype"], args["head_size"], args["block_size"], args["kv"],
                   args["features"])


# ------------------------------------------------------------------------------------------
# Step 6: CUDA graphs.


@pytest.mark.parametrize("backend, gpu, support", [
    ("FLASH_ATTN", "H100", "ALWAYS"),  # FA3
    ("FLASH_ATTN", "A100", "UNIFORM_BATCH"),  # FA2
    ("FLASH_ATTN", "B200", "UNIFORM_BATCH"),  # Blackwell runs FA2
    ("FLASHINFER", "B200", "UNIFORM_SINGLE_TOKEN_DECODE"),
    ("TRITON_ATTN_VLLM_V1", "A100", "ALWAYS"),
    ("FLEX_ATTENTION", "H100", "NEVER"),
    ("FLASHMLA", "H100", "UNIFORM_BATCH"),
    ("CUTLASS_MLA", "B200", "NEVER"),  # its builder sets a misspelt attribute
    ("TRITON_MLA", "A100", "NEVER"),
])
def test_cudagraph_support_table(lab, backend, gpu, support):
    """Pins each metadata builder's ``cudagraph_support`` in v0.10.1. Catches FA3's ALWAYS given
    to FA2 (or to Blackwell) and the declared-but-unread CUTLASS MLA value taken at its word."""
    labkit.assert_value(lab.cudagraph_support(backend, gpu), support, what=f"cudagraph_support({backend!r}, {gpu!r})")


@pytest.mark.parametrize("requested, backend, gpu, spec, expected", [
    ("PIECEWISE", "FLEX_ATTENTION", "A100", False, "PIECEWISE"),  # v0.10.1's default mode
    ("NONE", "FLEX_ATTENTION", "A100", True, "NONE"),
    ("FULL", "FLASH_ATTN", "H100", False, "FULL"),  # FA3: ALWAYS
    ("FULL", "FLASH_ATTN", "A100", False, "FULL_AND_PIECEWISE"),  # FA2: mixed batches drop to piecewise
    ("FULL", "FLASHINFER", "B200", False, "FULL_AND_PIECEWISE"),
    ("FULL_AND_PIECEWISE", "FLASHINFER", "B200", True, "PIECEWISE"),  # spec decode needs UNIFORM_BATCH
    ("FULL_AND_PIECEWISE", "FLASH_ATTN", "A100", True, "FULL_AND_PIECEWISE"),
    ("FULL_DECODE_ONLY", "FLASHMLA", "H100", True, "FULL_DECODE_ONLY"),
    ("FULL", "TRITON_ATTN_VLLM_V1", "L4", True, "FULL"),
])
def test_resolve_cudagraph_mode(lab, requested, backend, gpu, spec, expected):
    """Pins initialize_cudagraph_capture's downgrades: full graphs for mixed batches need ALWAYS,
    full decode graphs with speculative decoding need UNIFORM_BATCH. Catches the downgrade
    skipped (a graph the backend cannot replay) or applied to a backend that needs none."""
    labkit.assert_value(lab.resolve_cudagraph_mode(requested, backend, gpu, spec), expected,
                        what=f"resolve_cudagraph_mode({requested!r}, {backend!r}, {gpu!r}, spec_decode={spec})")


@pytest.mark.parametrize("requested, backend, gpu", [
    ("FULL", "FLEX_ATTENTION", "A100"),
    ("FULL_AND_PIECEWISE", "CUTLASS_MLA", "B200"),
    ("FULL_DECODE_ONLY", "TRITON_MLA", "H100"),
])
def test_no_full_graph_for_never(lab, requested, backend, gpu):
    """Pins the ValueError for a mode with full graphs on a backend whose support is NEVER."""
    refused(f"resolve_cudagraph_mode({requested!r}, {backend!r}, {gpu!r})",
            lambda: lab.resolve_cudagraph_mode(requested, backend, gpu), "full", "PIECEWISE")


@pytest.mark.parametrize("backend", ["FLASH", "flash_attn", "XFORMERS", None])
def test_cudagraph_support_rejects_unknown_backends(lab, backend):
    """Pins a ValueError that lists the backends when ``backend`` is not one of them, from
    ``cudagraph_support`` and from ``resolve_cudagraph_mode``, which asks it. Catches the table
    looked up without ``_check_backend`` (a bare KeyError from inside the table)."""
    refused(f"cudagraph_support({backend!r}, 'H100')", lambda: lab.cudagraph_support(backend, "H100"),
            "FLASH_ATTN", "FLEX_ATTENTION")
    refused(f"resolve_cudagraph_mode('PIECEWISE', {backend!r}, 'H100')",
            lambda: lab.resolve_cudagraph_mode("PIECEWISE", backend, "H100"), "FLASH_ATTN", "FLEX_ATTENTION")


def test_resolve_cudagraph_mode_rejects_unknown_modes(lab):
    """Pins a ValueError naming ``requested`` for a mode that does not exist."""
    refused("resolve_cudagraph_mode('FULL_ALWAYS', 'FLASH_ATTN', 'H100')",
            lambda: lab.resolve_cudagraph_mode("FULL_ALWAYS", "FLASH_ATTN", "H100"), "requested")


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
])
def test_choose_measured_bad_requests(lab, shape, allowed, word):
    """Pins a ValueError that says what is wrong: a shape that was not measured, a shape missing a
    key, an allowed name the matrix does not have, nothing left to choose. Catches a KeyError or
    an IndexError from the inside, or a made-up answer."""
    refused(f"choose_measured({shape}, <small matrix>, allowed={allowed})",
            lambda: lab.choose_measured(shape, small_matrix(), allowed), word)


def test_choose_measured_leaves_the_matrix_alone(lab):
    """Pins that the matrix is read, not changed (the dispatcher reads it on every request).
    Catches times sorted or popped in place."""
    m = small_matrix()
    before = json.dumps(m, sort_keys=False)
    for entry in small_matrix()["entries"]:
        shape = {k: entry[k] for k in ("phase", "dtype", "batch", "seq_len")}
        lab.choose_measured(shape, m)
    if json.dumps(m, sort_keys=False) != before:
        raise AssertionError(f"choose_measured changed the matrix it was given: before {before}, after "
                             f"{json.dumps(m, sort_keys=False)}")
