"""Lab 04-02, reference solution: how vLLM v0.22.1 picks an attention backend on CUDA.

An engine carries several attention backends and picks one per model at start-up. This file
states vLLM v0.22.1's rules on NVIDIA GPUs as plain data and small functions, read from the
release's source (paths are relative to the repository; the README's "Where the rules live"
table links them):

1. ``device_capability``: a GPU name or ``(major, minor)``, checked.
2. ``backend_problems``: why one backend cannot run one attention layer, as its
   ``validate_configuration`` (``vllm/v1/attention/backend.py``, ``AttentionBackend``) lists it
   from what the backend declares (dtypes, KV-cache dtypes, kernel block sizes, head sizes,
   compute capability, sinks, MLA) and its ``supports_combination``.
3. ``platform_refusal``: the platform's own check before any layer is built
   (``CudaPlatformBase.check_if_supports_dtype``: bfloat16 needs compute capability 8.0).
4. ``candidate_order``: the priority list of ``vllm/platforms/cuda.py``, ``_get_backend_priorities``.
5. ``select_backend``: ``CudaPlatformBase.get_attn_backend_cls``: the backend asked for with
   ``--attention-backend`` (``AttentionConfig.backend``), validated, or the first valid backend
   of the priority list, with the reason every other backend was not chosen; then the block size
   (the user's, or the chosen backend's preferred one).
6. ``cudagraph_support`` and ``resolve_cudagraph_mode``: why the choice is fixed for the run.
7. ``choose_measured``: a dispatcher that picks from measured timings instead of rules.

Where this model and v0.22.1 differ, the README's "Where this selector differs from v0.22.1"
says how and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from _checks import (  # given: the vocabulary, the result types and the input checks, in _checks.py
    BACKENDS,
    CUDAGRAPH_MODES,
    CUDAGRAPH_SUPPORT,
    DEFAULT_BLOCK_SIZE,
    DTYPES,
    GPUS,
    MeasuredChoice,
    Selection,
    _check_allowed,
    _check_backend,
    _check_features,
    _check_layer,
    _check_override,
    _check_supports,
    _check_times,
    _find_entry,
)

_HALF = ("float16", "bfloat16")


@dataclass(frozen=True)
class _Limits:
    """What one backend declares, in its v0.22.1 source."""

    mla: bool  # is_mla(): serves MLA layers (and only those) or dense layers (and only those)
    dtypes: tuple[str, ...]  # supported_dtypes
    # get_supported_kernel_block_sizes(): a block size must be a multiple of one of them
    # (supports_block_size); the smallest is the preferred size when 16 is not one of them.
    kernel_block_sizes: tuple[int, ...]
    head_sizes: tuple[int, ...] = ()  # get_supported_head_sizes(); (): any, or the rule of _head_size_problem
    fp8_formats: tuple[str, ...] = ()  # the fp8 formats in supported_kv_cache_dtypes


LIMITS = {
    # v1/attention/backends/flash_attn.py: FlashAttentionBackend (head sizes and fp8: functions below)
    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16,)),
    # v1/attention/backends/flashinfer.py: FlashInferBackend
    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, kernel_block_sizes=(16, 32, 64), head_sizes=(64, 128, 256, 512),
                          fp8_formats=("e4m3", "e5m2")),
    # v1/attention/backends/triton_attn.py: TritonAttentionBackend (head size: at least 32)
    "TRITON_ATTN": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,), fp8_formats=("e4m3", "e5m2")),
    # v1/attention/backends/flex_attention.py: FlexAttentionBackend (any head size, no fp8)
    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, kernel_block_sizes=(16,)),
    # v1/attention/backends/mla/*.py; head sizes 320 and 576 from MLACommonBackend
    # (model_executor/layers/attention/mla_attention.py), except Triton MLA's: any.
    "FLASH_ATTN_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(16,), head_sizes=(320, 576)),
    "FLASHMLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(64,), head_sizes=(320, 576),
                        fp8_formats=("e4m3",)),
    "FLASHINFER_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(32, 64), head_sizes=(320, 576),
                              fp8_formats=("e4m3",)),
    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(128,), head_sizes=(320, 576),
                           fp8_formats=("e4m3",)),
    "TRITON_MLA": _Limits(mla=True, dtypes=_HALF, kernel_block_sizes=(16,), fp8_formats=("e4m3",)),
}


# ------------------------------------------------------------------------------------------
# Step 1: the GPU.


def device_capability(gpu) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of ``gpu``: a name of ``GPUS`` or a pair of ints
    with ``major >= 1`` and ``0 <= minor <= 9`` (vLLM's ``DeviceCapability.to_int`` assumes a
    single-digit minor). Anything else is a ValueError naming ``gpu``."""
    if isinstance(gpu, str):
        if gpu not in GPUS:
            raise ValueError(f"device_capability: unknown gpu {gpu!r}; known names are {sorted(GPUS)}")
        return GPUS[gpu]
    if (
        isinstance(gpu, tuple)
        and len(gpu) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in gpu)
        and gpu[0] >= 1
        and 0 <= gpu[1] <= 9
    ):
        return gpu
    raise ValueError(
        f"device_capability: gpu must be a name from {sorted(GPUS)} or (major, minor) ints with "
        f"major >= 1 and 0 <= minor <= 9, got {gpu!r}"
    )


def _flash_attn_version(capability: tuple[int, int]) -> int:
    """The FlashAttention a GPU of 8.0 or newer runs (v1/attention/backends/fa_utils.py,
    ``get_flash_attn_version``, with the kernels the CUDA wheel builds): 3 on Hopper (major 9),
    4 on Blackwell (major 10), 2 elsewhere: Ampere, Ada, and the 12.x cards."""
    return {9: 3, 10: 4}.get(capability[0], 2)


# ------------------------------------------------------------------------------------------
# Step 2: what one backend cannot do.


def _head_size_problem(backend: str, capability: tuple[int, int], head_size: int) -> str | None:
    """Why the backend does not take this head size (supports_head_size), or None."""
    if backend == "FLASH_ATTN":
        # FlashAttentionBackend.supports_head_size: a multiple of 8, up to 256, or up to 512
        # where FlashAttention 4 is built (is_fa_version_supported(4): 9.x, 10.x, 11.x).
        largest = 512 if capability[0] in (9, 10, 11) else 256
        if head_size % 8 or head_size > largest:
            return f"head size {head_size} is not a multiple of 8 up to {largest}"
        return None
    if backend == "TRITON_ATTN":
        return f"head size {head_size} is below 32" if head_size < 32 else None  # supports_head_size
    sizes = LIMITS[backend].head_sizes
    return f"head size {head_size} is not one of {sizes}" if sizes and head_size not in sizes else None


def _runs_on(backend: str, capability: tuple[int, int]) -> str | None:
    """Why the backend does not run on this GPU (supports_compute_capability, and the GPU checks
    of supports_combination), or None."""
    major = capability[0]
    if backend == "FLASH_ATTN" and capability < (8, 0):
        return "FlashAttention needs compute capability 8.0 or newer"
    if backend == "FLASHINFER" and not (7, 5) <= capability <= (12, 1):
        return "FlashInfer runs on compute capability 7.5 to 12.1"
    if backend == "FLASH_ATTN_MLA" and major != 9:
        return "FlashAttention MLA runs only on Hopper (9.x)"  # also flash_attn_supports_mla: FA3 on 9.x
    if backend == "FLASHMLA" and major != 9:
        # supports_compute_capability takes 9.x and 10.x, but supports_combination asks
        # is_flashmla_dense_supported (v1/attention/ops/flashmla.py): Hopper only.
        return "FlashMLA (dense) runs only on Hopper (9.x)"
    if backend in ("FLASHINFER_MLA", "CUTLASS_MLA") and major != 10:
        return f"{backend} runs only on Blackwell (10.x)"
    return None


def _fp8_formats(backend: str, capability: tuple[int, int]) -> tuple[str, ...]:
    """The fp8 KV-cache formats a backend reads on this GPU."""
    if backend == "FLASH_ATTN":
        # FlashAttentionBackend.supports_kv_cache_dtype: fp8 and fp8_e4m3 need FlashAttention 3
        # on a 9.x GPU; fp8_e5m2 never.
        return ("e4m3",) if _flash_attn_version(capability) == 3 else ()
    return LIMITS[backend].fp8_formats


def _takes_sinks(backend: str, capability: tuple[int, int]) -> bool:
    """Attention sinks (gpt-oss): FlashAttention with version 3 or 4 (flash_attn_supports_sinks;
    its supports_combination also refuses them below 9.0); FlashInfer only through TRT-LLM
    attention, on a 10.x GPU (utils/flashinfer.py, supports_trtllm_attention); Triton always;
    FlexAttention and the MLA backends never (the base class's supports_sink)."""
    if backend == "FLASH_ATTN":
        return _flash_attn_version(capability) in (3, 4)
    if backend == "FLASHINFER":
        return capability[0] == 10
    return backend == "TRITON_ATTN"


def backend_problems(backend, gpu, dtype, head_size, block_size, kv_cache_dtype="auto", features=()) -> list[str]:
    """Why ``backend`` cannot run one attention layer on ``gpu``: a list of reasons, one per
    limit the layer breaks, each naming the limit and the layer's value; empty when it can.

    ``dtype`` is the model's dtype (``DTYPES``), ``head_size`` its head dimension,
    ``block_size`` the KV-cache block size in tokens the user set (None: not set, and then no
    block-size limit applies), ``kv_cache_dtype`` one of ``KV_CACHE_DTYPES`` and ``features`` a
    collection of names from ``FEATURES`` (``"mla"``: the layer is multi-head latent attention).
    Bad arguments: ValueError.
    """
    capability = device_capability(gpu)
    _check_backend("backend_problems", backend)
    features = _check_layer("backend_problems", dtype, head_size, block_size, kv_cache_dtype, features)
    limits = LIMITS[backend]
    problems = []

    head_problem = _head_size_problem(backend, capability, head_size)
    if head_problem:
        problems.append(head_problem)
    if dtype not in limits.dtypes:
        problems.append(f"dtype {dtype} is not one of {limits.dtypes}")
    if kv_cache_dtype != "auto":
        fmt = "e5m2" if kv_cache_dtype == "fp8_e5m2" else "e4m3"
        if fmt not in _fp8_formats(backend, capability):
            problems.append(f"no fp8 {fmt} KV cache here ({kv_cache_dtype})")
    if block_size is not None and all(block_size % size for size in limits.kernel_block_sizes):
        sizes = " or ".join(map(str, limits.kernel_block_sizes))
        problems.append(f"block size {block_size} is not a multiple of {sizes}")
    if "mla" in features and not limits.mla:
        problems.append("an MLA layer needs an MLA backend")
    if "mla" not in features and limits.mla:
        problems.append("an MLA backend serves only MLA layers")
    if "sinks" in features and not _takes_sinks(backend, capability):
        problems.append("no attention sinks here")
    gpu_problem = _runs_on(backend, capability)
    if gpu_problem:
        problems.append(gpu_problem)
    return problems


# ------------------------------------------------------------------------------------------
# Step 3: the platform's check, before any layer is built.


def platform_refusal(gpu, dtype) -> str | None:
    """Why vLLM v0.22.1 refuses the model's ``dtype`` on this GPU before it builds any layer, or
    None: ``CudaPlatformBase.check_if_supports_dtype`` (the worker calls it when it starts)
    refuses bfloat16 below compute capability 8.0."""
    capability = device_capability(gpu)
    if dtype not in DTYPES:
        raise ValueError(f"platform_refusal: dtype must be one of {DTYPES}, got {dtype!r}")
    if dtype == "bfloat16" and capability < (8, 0):
        return (f"bfloat16 needs compute capability 8.0 or newer (this GPU has {capability[0]}.{capability[1]}); "
                "use float16")
    return None


# ------------------------------------------------------------------------------------------
# Step 4: the priority list.


def candidate_order(gpu, features=()) -> tuple[str, ...]:
    """The backends ``get_attn_backend_cls`` tries, best first, when nothing is asked for:
    ``_get_backend_priorities``, one list per kind of layer and per GPU family (major 10, or
    any other), less the backends this lab leaves out."""
    capability = device_capability(gpu)
    features = _check_features("candidate_order", features)
    blackwell = capability[0] == 10  # device_capability.major == 10: 10.0 and 10.3 alike
    if "mla" in features:
        if blackwell:
            return ("FLASHINFER_MLA", "CUTLASS_MLA", "FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA")
        return ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA")
    if blackwell:
        return ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN", "FLEX_ATTENTION")
    return ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION")


# ------------------------------------------------------------------------------------------
# Step 5: the choice.


def _preferred_block_size(backend: str) -> int:
    """AttentionBackend.get_preferred_block_size(16), which Platform.update_block_size_for_backend
    applies when the user set no block size: 16 if the backend takes it, else its smallest
    kernel block size."""
    sizes = LIMITS[backend].kernel_block_sizes
    return DEFAULT_BLOCK_SIZE if any(DEFAULT_BLOCK_SIZE % s == 0 for s in sizes) else min(sizes)


def select_backend(gpu, dtype, head_size, block_size=None, *, kv_cache_dtype="auto", features=(),
                   override=None) -> Selection:
    """The attention backend vLLM v0.22.1 runs for this layer on ``gpu``.

    Arguments as for ``backend_problems``; ``block_size=None`` lets the chosen backend pick its
    preferred size; ``override`` is ``--attention-backend`` (a name of ``BACKENDS`` in any case;
    None or ``"auto"``: not set). Returns a ``Selection``: the backend, the block size the run will
    use, and a non-empty reason for every other backend of ``BACKENDS``. ValueError, with the
    reasons, when the platform refuses the dtype, when the override cannot run the layer, or when
    no candidate can; ValueError for bad arguments and for an override that is not a backend of
    ``BACKENDS``.
    """
    capability = device_capability(gpu)
    features = _check_layer("select_backend", dtype, head_size, block_size, kv_cache_dtype, features)
    override = _check_override("select_backend", override)

    refusal = platform_refusal(capability, dtype)
    if refusal is not None:
        raise ValueError(f"select_backend: {refusal}")

    problems = {
        name: backend_problems(name, capability, dtype, head_size, block_size, kv_cache_dtype, features)
        for name in BACKENDS
    }

    if override is not None:
        if problems[override]:
            raise ValueError(
                f"select_backend: --attention-backend {override} cannot run this layer on {gpu}: "
                + "; ".join(problems[override])
            )
        rejected = {name: f"not asked for (--attention-backend {override})" for name in BACKENDS if name != override}
        chosen = override
    else:
        order = candidate_order(capability, features)
        chosen = next((name for name in order if not problems[name]), None)
        if chosen is None:
            raise ValueError(
                f"select_backend: no backend can run this layer on {gpu}: "
                + "; ".join(f"{name}: {', '.join(problems[name])}" for name in order)
            )
        rejected = {}
        for name in BACKENDS:
            if name == chosen:
                continue
            if problems[name]:
                rejected[name] = "; ".join(problems[name])
            elif name not in order:
                rejected[name] = f"not a default on this GPU (only --attention-backend {name} picks it)"
            else:
                rejected[name] = f"lower priority than {chosen}"
    block = _preferred_block_size(chosen) if block_size is None else block_size
    return Selection(chosen, block, rejected)


# ------------------------------------------------------------------------------------------
# Step 6: why the choice is fixed for the run.

def cudagraph_support(backend, gpu) -> str:
    """What full CUDA graphs the backend's metadata builder can be captured in, in v0.22.1
    (its ``get_cudagraph_support``), one of ``CUDAGRAPH_SUPPORT``. A backend not of ``BACKENDS``:
    ValueError listing them."""
    capability = device_capability(gpu)
    _check_backend("cudagraph_support", backend)
    if backend == "FLASH_ATTN":
        # FlashAttentionMetadataBuilder: ALWAYS with FlashAttention 3, UNIFORM_BATCH with 2 or 4.
        return "ALWAYS" if _flash_attn_version(capability) == 3 else "UNIFORM_BATCH"
    if backend == "FLASHINFER":
        # FlashInferMetadataBuilder.get_cudagraph_support: UNIFORM_BATCH when TRT-LLM attention
        # serves the decodes (a 10.x GPU), UNIFORM_SINGLE_TOKEN_DECODE otherwise.
        return "UNIFORM_BATCH" if capability[0] == 10 else "UNIFORM_SINGLE_TOKEN_DECODE"
    return {
        "TRITON_ATTN": "ALWAYS",  # TritonAttentionMetadataBuilder
        "FLEX_ATTENTION": "ALWAYS",  # FlexAttentionMetadataBuilder
        "FLASH_ATTN_MLA": "UNIFORM_BATCH",  # FlashAttnMLAMetadataBuilder
        "FLASHMLA": "UNIFORM_BATCH",  # FlashMLAMetadataBuilder
        "FLASHINFER_MLA": "UNIFORM_BATCH",  # FlashInferMLAMetadataBuilder
        "CUTLASS_MLA": "UNIFORM_SINGLE_TOKEN_DECODE",  # CutlassMLAMetadataBuilder
        "TRITON_MLA": "UNIFORM_BATCH",  # TritonMLAMetadataBuilder
    }[backend]


def resolve_cudagraph_mode(requested, supports, spec_decode=False) -> str:
    """The CUDA-graph mode a run will use, from the mode asked for (a key of ``CUDAGRAPH_MODES``;
    v0.22.1's default is ``FULL_AND_PIECEWISE``) and the support levels of the model's attention
    groups (``supports``, one level of ``CUDAGRAPH_SUPPORT`` per group), as
    ``CompilationConfig.resolve_cudagraph_mode_and_sizes`` resolves it once, at start-up, against
    the weakest group (attention is a splitting op, the default):

    - ``NONE`` stays ``NONE``;
    - full graphs for mixed batches need ``ALWAYS``: otherwise ValueError if the support is
      ``NEVER``, else the mode becomes ``FULL_AND_PIECEWISE``;
    - full graphs for decode batches with support ``NEVER``: the mode becomes ``PIECEWISE``;
    - full decode graphs with speculative decoding (``spec_decode``: uniform batches of more than
      one query token) need ``UNIFORM_BATCH`` or better; otherwise ``PIECEWISE``.
    """
    if not isinstance(requested, str) or requested not in CUDAGRAPH_MODES:
        raise ValueError(
            f"resolve_cudagraph_mode: requested must be one of {tuple(CUDAGRAPH_MODES)}, got {requested!r}")
    support = min(_check_supports(supports))
    never, uniform_batch, always = 0, CUDAGRAPH_SUPPORT.index("UNIFORM_BATCH"), len(CUDAGRAPH_SUPPORT) - 1

    mode = requested
    if mode == "NONE":
        return mode
    if CUDAGRAPH_MODES[mode][1] == "FULL" and support != always:
        if support == never:
            raise ValueError(f"resolve_cudagraph_mode: {requested} needs a full CUDA graph of mixed batches and an "
                             "attention group supports none; try PIECEWISE")
        mode = "FULL_AND_PIECEWISE"
    if CUDAGRAPH_MODES[mode][0] == "FULL" and support == never:
        mode = "PIECEWISE"
    if CUDAGRAPH_MODES[mode][0] == "FULL" and spec_decode and support < uniform_batch:
        mode = "PIECEWISE"
    return mode


# ------------------------------------------------------------------------------------------
# Step 7: choosing from measurements.

def choose_measured(shape, matrix, allowed=None) -> MeasuredChoice:
    """The fastest backend for ``shape`` according to a measured ``matrix`` (bench.py's
    ``matrix.json``, loaded): among the backends of ``matrix["backends"]`` that have a time (not
    None) in the entry's ``times_us`` and, when ``allowed`` is given, are in it. A tie goes to the
    backend listed first in ``matrix["backends"]``. ValueError when the shape matches no entry or
    several, when ``allowed`` names a backend the matrix does not have, or when no backend is left.
    ``allowed`` is None (no filter) or a collection of backend names; a time is None (not measured)
    or a finite number of microseconds > 0. Anything else is a ValueError too.
    """
    entry = _find_entry(shape, matrix)
    names = matrix["backends"]
    allowed = _check_allowed(allowed)
    if allowed is not None:
        unknown = sorted(allowed - set(names))
        if unknown:
            raise ValueError(f"choose_measured: allowed names {unknown}, which the matrix does not have ({names})")
    times = _check_times(entry, names)
    candidates = [
        (times[name], rank, name)
        for rank, name in enumerate(names)
        if times.get(name) is not None and (allowed is None or name in allowed)
    ]
    if not candidates:
        raise ValueError(f"choose_measured: no allowed backend has a time for {dict(shape)}")
    candidates.sort()  # by time, then by the matrix's order: ties go to the backend listed first
    best_us, _, best = candidates[0]
    if len(candidates) == 1:
        return MeasuredChoice(best, best_us, None, None)
    second_us, _, second = candidates[1]
    return MeasuredChoice(best, best_us, second, second_us / best_us)
