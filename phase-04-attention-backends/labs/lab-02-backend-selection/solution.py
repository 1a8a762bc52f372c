"""Lab 04-02, reference solution: how vLLM v0.10.1 picks an attention backend on CUDA.

An engine carries several attention backends and picks one per model at start-up. This file
states vLLM v0.10.1's rules for its V1 engine on NVIDIA GPUs as plain data and small
functions, read from the release's source (paths are relative to ``vllm/``):

1. ``device_capability``: a GPU name or ``(major, minor)``, checked.
2. ``backend_problems``: what one backend cannot do for one attention layer (the limits each
   backend declares or checks: ``get_supported_dtypes``, ``get_supported_head_sizes``,
   ``get_kv_cache_shape``, its ``Impl.__init__``).
3. ``v1_engine_refusal``: the V1 engine's own gate (``engine/arg_utils.py``,
   ``EngineArgs._is_v1_supported_oracle``): some GPUs and caches never reach a V1 backend.
4. ``candidate_order``: the default priority of ``platforms/cuda.py``,
   ``CudaPlatformBase.get_attn_backend_cls``.
5. ``select_backend``: the override (``VLLM_ATTENTION_BACKEND``) or the first candidate that
   can run the layer, with the reason every other backend was not chosen.
6. ``cudagraph_support`` and ``resolve_cudagraph_mode``: why the choice is fixed for the run.
7. ``choose_measured``: a dispatcher that picks from measured timings instead of rules.

Where this model and v0.10.1 differ, the README's "Where this selector differs from v0.10.1"
says how and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Compute capability of the GPUs the tests name (NVIDIA's published numbers).
GPUS = {
    "V100": (7, 0),
    "T4": (7, 5),
    "A100": (8, 0),
    "A10G": (8, 6),
    "L4": (8, 9),
    "H100": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
}
DTYPES = ("float16", "bfloat16", "float32")
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")  # config/cache.py CacheDType, less Gaudi's fp8_inc
BLOCK_SIZES = (1, 8, 16, 32, 64, 128)  # config/cache.py BlockSize
DEFAULT_BLOCK_SIZE = 16  # CudaPlatformBase.check_and_update_config, when the user sets none
FEATURES = ("paged_kv", "gqa", "sliding_window", "sinks", "mla")

# The backends of the V1 engine on CUDA, by their VLLM_ATTENTION_BACKEND names (platforms/interface.py _Backend).
DENSE_BACKENDS = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN_VLLM_V1", "FLEX_ATTENTION")
MLA_BACKENDS = ("CUTLASS_MLA", "FLASHMLA", "TRITON_MLA")
BACKENDS = DENSE_BACKENDS + MLA_BACKENDS

# MLA layers attend over the latent cache: kv_lora_rank 512 + qk_rope_head_dim 64
# (model_executor/models/deepseek_v2.py passes head_size=kv_lora_rank + qk_rope_head_dim).
MLA_HEAD_SIZE = 576
_HALF = ("float16", "bfloat16")
_FA_HEAD_SIZES = (32, 64, 96, 128, 160, 192, 224, 256)


@dataclass(frozen=True)
class _Limits:
    """What one backend accepts, as its v0.10.1 source declares or checks it."""

    mla: bool  # serves MLA layers (and only those) or dense layers (and only those)
    dtypes: tuple[str, ...]  # get_supported_dtypes()
    head_sizes: tuple[int, ...] | None  # get_supported_head_sizes(); None: any
    block_multiple: int = 1  # get_kv_cache_shape() raises unless block_size % this == 0
    block_exact: int | None = None  # the one block size the kernel takes
    sliding_window: bool = True  # Impl.__init__ raises NotImplementedError when False


LIMITS = {
    # v1/attention/backends/flash_attn.py: FlashAttentionBackend, FlashAttentionImpl
    "FLASH_ATTN": _Limits(mla=False, dtypes=_HALF, head_sizes=_FA_HEAD_SIZES, block_multiple=16),
    # v1/attention/backends/flashinfer.py: FlashInferBackend (no block-size check in get_kv_cache_shape)
    "FLASHINFER": _Limits(mla=False, dtypes=_HALF, head_sizes=(64, 128, 256)),
    # v1/attention/backends/triton_attn.py: TritonAttentionBackend
    "TRITON_ATTN_VLLM_V1": _Limits(mla=False, dtypes=_HALF, head_sizes=_FA_HEAD_SIZES, block_multiple=16),
    # v1/attention/backends/flex_attention.py: FlexAttentionBackend (validate_head_size accepts any),
    # FlexAttentionImpl raises for a sliding window
    "FLEX_ATTENTION": _Limits(mla=False, dtypes=DTYPES, head_sizes=None, sliding_window=False),
    # v1/attention/backends/mla/*: MLACommonBackend declares head size 576 and fp16/bf16; each
    # MLA Impl raises for a sliding window. Block sizes: platforms/cuda.py forces 128 for
    # CUTLASS_MLA and 64 for FlashMLA ("currently only supports block size 64").
    "CUTLASS_MLA": _Limits(mla=True, dtypes=_HALF, head_sizes=(MLA_HEAD_SIZE,), block_exact=128,
                          sliding_window=False),
    "FLASHMLA": _Limits(mla=True, dtypes=_HALF, head_sizes=(MLA_HEAD_SIZE,), block_exact=64,
                       sliding_window=False),
    "TRITON_MLA": _Limits(mla=True, dtypes=_HALF, head_sizes=(MLA_HEAD_SIZE,), sliding_window=False),
}


@dataclass(frozen=True)
class Selection:
    """The backend chosen for a layer, the KV-cache block size the run will use, and, for
    every other backend of ``BACKENDS``, why it was not chosen."""

    backend: str
    block_size: int
    rejected: dict[str, str]


# ------------------------------------------------------------------------------------------
# Input checks (given to the learner in the starter: they are not the lesson).


def _check_layer(where: str, dtype, head_size, block_size, kv_cache_dtype, features) -> frozenset[str]:
    """ValueError naming the argument for anything outside what vLLM accepts; else the feature set."""
    if dtype not in DTYPES:
        raise ValueError(f"{where}: dtype must be one of {DTYPES}, got {dtype!r}")
    if isinstance(head_size, bool) or not isinstance(head_size, int) or head_size <= 0:
        raise ValueError(f"{where}: head_size must be a positive int, got {head_size!r}")
    if block_size is not None and (isinstance(block_size, bool) or block_size not in BLOCK_SIZES):
        raise ValueError(f"{where}: block_size must be one of {BLOCK_SIZES} (vLLM's BlockSize), got {block_size!r}")
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ValueError(f"{where}: kv_cache_dtype must be one of {KV_CACHE_DTYPES}, got {kv_cache_dtype!r}")
    return _check_features(where, features)


def _check_features(where: str, features) -> frozenset[str]:
    if isinstance(features, str) or not isinstance(features, Iterable):
        raise ValueError(f"{where}: features must be a collection of names from {FEATURES}, got {features!r}")
    features = frozenset(features)
    unknown = sorted(str(f) for f in features - set(FEATURES))
    if unknown:
        raise ValueError(f"{where}: unknown features {unknown}; the features are {FEATURES}")
    return features


def _check_backend(where: str, name, what: str = "backend") -> str:
    if name not in BACKENDS:
        raise ValueError(
            f"{where}: {what} {name!r} is not a V1 CUDA attention backend of vLLM v0.10.1 "
            f"(this lab models {BACKENDS})"
        )
    return name


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


def _has_fa3(capability: tuple[int, int]) -> bool:
    """FlashAttention 3 runs: attention/utils/fa_utils.py get_flash_attn_version picks version 3
    only when ``major == 9`` (Hopper); flash_attn_supports_fp8 asks the same. Blackwell
    (major 10) is not Hopper: it gets FlashAttention 2."""
    return capability[0] == 9


# ------------------------------------------------------------------------------------------
# Step 2: what one backend cannot do.


def _fp8_formats(backend: str, capability: tuple[int, int]) -> tuple[str, ...]:
    """The fp8 KV-cache formats a backend reads on this GPU."""
    if backend == "FLASH_ATTN":
        # FlashAttentionImpl raises without flash_attn_supports_fp8() (FA3 on Hopper), and
        # get_fp8_dtype_for_flashattn knows only "fp8"/"fp8_e4m3".
        return ("e4m3",) if _has_fa3(capability) else ()
    if backend == "FLASHINFER":
        return ("e4m3", "e5m2")  # get_fp8_dtype_for_flashinfer
    if backend == "TRITON_ATTN_VLLM_V1":
        # TritonAttentionImpl views the cache as current_platform.fp8_dtype(), float8_e4m3fn.
        return ("e4m3",)
    return ()  # FlexAttentionImpl and every MLA Impl raise for a quantized cache


def _takes_sinks(backend: str, capability: tuple[int, int]) -> bool:
    """Attention sinks (gpt-oss): FlashAttentionImpl asserts FA3; FlashInfer takes them only through
    TRT-LLM attention, which needs SM 10.0 (utils/flashinfer.py supports_trtllm_attention);
    FlexAttentionImpl and the MLA Impls have no ``sinks`` parameter at all."""
    if backend == "FLASH_ATTN":
        return _has_fa3(capability)
    if backend == "FLASHINFER":
        return capability == (10, 0)
    return backend == "TRITON_ATTN_VLLM_V1"


def backend_problems(backend, gpu, dtype, head_size, block_size, kv_cache_dtype="auto", features=()) -> list[str]:
    """Why ``backend`` cannot run one attention layer on ``gpu``: a list of reasons, one per
    limit the layer breaks, each naming the limit and the layer's value; empty when it can.

    ``dtype`` is the model's dtype (``DTYPES``), ``head_size`` its head dimension,
    ``block_size`` the KV-cache block size in tokens (``BLOCK_SIZES``), ``kv_cache_dtype`` one
    of ``KV_CACHE_DTYPES`` and ``features`` a collection of names from ``FEATURES``
    (``"mla"``: the layer is multi-head latent attention). Bad arguments: ValueError.
    """
    capability = device_capability(gpu)
    _check_backend("backend_problems", backend)
    features = _check_layer("backend_problems", dtype, head_size, block_size, kv_cache_dtype, features)
    if block_size is None:
        raise ValueError("backend_problems: block_size must be one of BLOCK_SIZES, got None")
    limits = LIMITS[backend]
    problems = []

    if "mla" in features and not limits.mla:
        problems.append("an MLA layer needs an MLA backend")
    if "mla" not in features and limits.mla:
        problems.append("an MLA backend serves only MLA layers")
    if backend == "FLASH_ATTN" and capability < (8, 0):
        problems.append("FlashAttention 2 needs compute capability 8.0 or newer")
    if backend == "FLASHMLA" and capability[0] != 9:
        problems.append("FlashMLA runs only on Hopper (compute capability 9.x)")
    if backend == "CUTLASS_MLA" and capability != (10, 0):
        problems.append("CUTLASS MLA runs only on Blackwell SM 10.0")
    if dtype not in limits.dtypes:
        problems.append(f"dtype {dtype} is not one of {limits.dtypes}")
    if limits.head_sizes is not None and head_size not in limits.head_sizes:
        problems.append(f"head size {head_size} is not one of {limits.head_sizes}")
    if block_size % limits.block_multiple:
        problems.append(f"block size {block_size} is not a multiple of {limits.block_multiple}")
    if limits.block_exact is not None and block_size != limits.block_exact:
        problems.append(f"block size {block_size} is not {limits.block_exact}")
    if kv_cache_dtype != "auto":
        fmt = "e5m2" if kv_cache_dtype == "fp8_e5m2" else "e4m3"
        if fmt not in _fp8_formats(backend, capability):
            problems.append(f"no fp8 {fmt} KV cache here ({kv_cache_dtype})")
    if "sliding_window" in features and not limits.sliding_window:
        problems.append("no sliding window")
    if "sinks" in features and not _takes_sinks(backend, capability):
        problems.append("no attention sinks here")
    return problems


# ------------------------------------------------------------------------------------------
# Step 3: the V1 engine's gate.


def v1_engine_refusal(gpu, kv_cache_dtype="auto", override=None) -> str | None:
    """Why vLLM v0.10.1 would not run the V1 engine at all for this GPU and cache (it falls back
    to its V0 engine, or raises when ``VLLM_USE_V1=1``), or None when it runs it.

    The rules of ``EngineArgs._is_v1_supported_oracle``: compute capability below 8.0 is
    refused; an fp8 KV cache is accepted only where ``CudaPlatformBase.is_kv_cache_dtype_supported``
    says so: on SM 10.0 always, elsewhere only with no ``override`` and FlashAttention 3 (Hopper).
    """
    capability = device_capability(gpu)
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        raise ValueError(f"v1_engine_refusal: kv_cache_dtype must be one of {KV_CACHE_DTYPES}, got {kv_cache_dtype!r}")
    if override is not None:
        _check_backend("v1_engine_refusal", override, "override")
    if capability < (8, 0):
        return f"the V1 engine needs compute capability 8.0 or newer (this GPU has {capability[0]}.{capability[1]})"
    if kv_cache_dtype != "auto" and capability != (10, 0):
        if override is not None:
            return (f"an fp8 KV cache ({kv_cache_dtype}) with VLLM_ATTENTION_BACKEND={override} is accepted "
                    "only on SM 10.0")
        if not _has_fa3(capability):
            return f"an fp8 KV cache ({kv_cache_dtype}) needs FlashAttention 3 (Hopper) or SM 10.0"
    return None


# ------------------------------------------------------------------------------------------
# Step 4: the default priority.


def candidate_order(gpu, features=()) -> tuple[str, ...]:
    """The backends ``get_attn_backend_cls`` tries, best first, when nothing is overridden.

    MLA layers: CUTLASS_MLA, FLASHMLA, TRITON_MLA. Dense layers: FLASHINFER first on SM 10.0
    only; then TRITON_ATTN_VLLM_V1 when the layer has attention sinks, on any GPU but SM 9.0;
    then FLASH_ATTN, then FLEX_ATTENTION.
    """
    capability = device_capability(gpu)
    features = _check_features("candidate_order", features)
    if "mla" in features:
        return MLA_BACKENDS
    order = []
    if capability == (10, 0):  # is_device_capability(100): "Prefer FlashInfer for Blackwell GPUs"
        order.append("FLASHINFER")
    if "sinks" in features and capability != (9, 0):  # has_sink and not is_device_capability(90)
        order.append("TRITON_ATTN_VLLM_V1")
    order += ["FLASH_ATTN", "FLEX_ATTENTION"]  # "FlashAttention is the default for SM 8.0+ GPUs"
    return tuple(order)


# ------------------------------------------------------------------------------------------
# Step 5: the choice.


def _platform_block_size(capability, block_size, mla: bool, override) -> int:
    """The block size after CudaPlatformBase.check_and_update_config: 16 when unset; for MLA it
    forces 128 for CUTLASS_MLA (the default on SM 10.0) and 64 for FlashMLA (the default on
    Hopper), whatever the user asked for."""
    size = DEFAULT_BLOCK_SIZE if block_size is None else block_size
    if mla:
        if override is None and capability == (10, 0):
            return 128
        if override in (None, "FLASHMLA") and capability[0] == 9:
            return 64
        if override == "CUTLASS_MLA":
            return 128
    return size


def select_backend(gpu, dtype, head_size, block_size=None, *, kv_cache_dtype="auto", features=(),
                   override=None) -> Selection:
    """The attention backend vLLM v0.10.1's V1 engine runs for this layer on ``gpu``.

    Arguments as for ``backend_problems``; ``block_size=None`` lets the platform choose;
    ``override`` is ``VLLM_ATTENTION_BACKEND`` (None: not set). Returns a ``Selection``:
    the backend, the block size the run will use, and a non-empty reason for every other
    backend of ``BACKENDS``. ValueError, with the reasons, when the engine refuses the GPU or
    cache, when the override cannot run the layer, or when no candidate can; ValueError for
    bad arguments and for an override that is not a backend of ``BACKENDS``.
    """
    capability = device_capability(gpu)
    features = _check_layer("select_backend", dtype, head_size, block_size, kv_cache_dtype, features)
    if override is not None:
        _check_backend("select_backend", override, "override")

    refusal = v1_engine_refusal(capability, kv_cache_dtype, override)
    if refusal is not None:
        raise ValueError(f"select_backend: {refusal}")

    block = _platform_block_size(capability, block_size, "mla" in features, override)
    problems = {
        name: backend_problems(name, capability, dtype, head_size, block, kv_cache_dtype, features)
        for name in BACKENDS
    }

    if override is not None:
        if problems[override]:
            raise ValueError(
                f"select_backend: VLLM_ATTENTION_BACKEND={override} cannot run this layer on {gpu}: "
                + "; ".join(problems[override])
            )
        rejected = {name: f"not asked for (VLLM_ATTENTION_BACKEND={override})" for name in BACKENDS if name != override}
        return Selection(override, block, rejected)

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
            rejected[name] = f"not a default on this GPU (only VLLM_ATTENTION_BACKEND={name} picks it)"
        else:
            rejected[name] = f"lower priority than {chosen}"
    return Selection(chosen, block, rejected)


# ------------------------------------------------------------------------------------------
# Step 6: why the choice is fixed for the run.

# AttentionCGSupport (v1/attention/backends/utils.py), weakest first.
CUDAGRAPH_SUPPORT = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
# CUDAGraphMode (config/compilation.py): (mode for uniform decode batches, mode for mixed batches).
CUDAGRAPH_MODES = {
    "NONE": ("NONE", "NONE"),
    "PIECEWISE": ("PIECEWISE", "PIECEWISE"),
    "FULL": ("FULL", "FULL"),
    "FULL_DECODE_ONLY": ("FULL", "NONE"),
    "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE"),
}


def cudagraph_support(backend, gpu) -> str:
    """The ``cudagraph_support`` of the backend's metadata builder in v0.10.1, one of
    ``CUDAGRAPH_SUPPORT``: what full CUDA graphs it can be captured in. A backend not of
    ``BACKENDS``: ValueError listing them."""
    capability = device_capability(gpu)
    _check_backend("cudagraph_support", backend)
    if backend == "FLASH_ATTN":
        # FlashAttentionMetadataBuilder: ALWAYS with FA3, UNIFORM_BATCH with FA2.
        return "ALWAYS" if _has_fa3(capability) else "UNIFORM_BATCH"
    return {
        "FLASHINFER": "UNIFORM_SINGLE_TOKEN_DECODE",  # FlashInferMetadataBuilder
        "TRITON_ATTN_VLLM_V1": "ALWAYS",  # TritonAttentionMetadataBuilder
        "FLEX_ATTENTION": "NEVER",  # FlexAttentionMetadataBuilder sets nothing: the base class's NEVER
        "FLASHMLA": "UNIFORM_BATCH",  # FlashMLAMetadataBuilder
        # CutlassMLAMetadataBuilder sets `attn_cudagraph_support`, a name nothing reads, so the
        # inherited MLACommonMetadataBuilder value, NEVER, is the one that counts.
        "CUTLASS_MLA": "NEVER",
        "TRITON_MLA": "NEVER",  # MLACommonMetadataBuilder
    }[backend]


def resolve_cudagraph_mode(requested, backend, gpu, spec_decode=False) -> str:
    """The CUDA-graph mode a run will use, from the mode asked for (a key of ``CUDAGRAPH_MODES``)
    and the backend's support, as ``GPUModelRunner.initialize_cudagraph_capture`` resolves it
    once, at start-up (attention is a splitting op, the default):

    - full graphs for mixed batches need ``ALWAYS``; otherwise the mode drops to
      ``FULL_AND_PIECEWISE``, or ValueError if the backend supports no full graph (``NEVER``);
    - full decode graphs with speculative decoding (``spec_decode``: uniform batches of more
      than one query token) need ``UNIFORM_BATCH`` or better; otherwise ``PIECEWISE``;
    - any mode with full graphs left and support ``NEVER``: ValueError.
    """
    if requested not in CUDAGRAPH_MODES:
        raise ValueError(
            f"resolve_cudagraph_mode: requested must be one of {tuple(CUDAGRAPH_MODES)}, got {requested!r}")
    support = CUDAGRAPH_SUPPORT.index(cudagraph_support(backend, gpu))
    never, uniform_batch, always = 0, CUDAGRAPH_SUPPORT.index("UNIFORM_BATCH"), len(CUDAGRAPH_SUPPORT) - 1

    mode = requested
    if CUDAGRAPH_MODES[mode][1] == "FULL" and support != always:
        if support == never:
            raise ValueError(f"resolve_cudagraph_mode: {backend} supports no full CUDA graph; use PIECEWISE")
        mode = "FULL_AND_PIECEWISE"
    if CUDAGRAPH_MODES[mode][0] == "FULL" and spec_decode and support < uniform_batch:
        mode = "PIECEWISE"
    if "FULL" in CUDAGRAPH_MODES[mode] and support == never:
        raise ValueError(f"resolve_cudagraph_mode: {backend} supports no full CUDA graph; use PIECEWISE")
    return mode


# ------------------------------------------------------------------------------------------
# Step 7: choosing from measurements.

SHAPE_KEYS = ("phase", "dtype", "batch", "seq_len")


@dataclass(frozen=True)
class MeasuredChoice:
    """The fastest allowed backend of a matrix entry, its time, and the runner-up with the
    margin ``runner_up_us / time_us`` (None when it is the only one)."""

    backend: str
    time_us: float
    runner_up: str | None
    margin: float | None


def _find_entry(shape, matrix) -> dict:
    """The one entry of ``matrix`` whose keys match every key of ``shape`` (ValueError otherwise)."""
    if not isinstance(shape, Mapping) or any(k not in shape for k in SHAPE_KEYS):
        raise ValueError(f"choose_measured: shape must be a mapping with keys {SHAPE_KEYS}, got {shape!r}")
    if not isinstance(matrix, Mapping) or not isinstance(matrix.get("backends"), list) \
            or not isinstance(matrix.get("entries"), list):
        raise ValueError("choose_measured: matrix must be a mapping with lists 'backends' and 'entries'")
    found = [e for e in matrix["entries"] if all(e.get(k) == v for k, v in shape.items())]
    if len(found) != 1:
        have = sorted({tuple(e.get(k) for k in SHAPE_KEYS) for e in matrix["entries"]}, key=str)
        how = "no entry" if not found else f"{len(found)} entries"
        raise ValueError(
            f"choose_measured: {how} of the matrix match {dict(shape)}; its shapes {SHAPE_KEYS} are {have}")
    return found[0]


def choose_measured(shape, matrix, allowed=None) -> MeasuredChoice:
    """The fastest backend for ``shape`` according to a measured ``matrix`` (bench.py's
    ``matrix.json``, loaded): among the backends of ``matrix["backends"]`` that have a time (not
    None) in the entry's ``times_us`` and, when ``allowed`` is given, are in it. A tie goes to the
    backend listed first in ``matrix["backends"]``. ValueError when the shape matches no entry or
    several, when ``allowed`` names a backend the matrix does not have, or when no backend is left.
    """
    entry = _find_entry(shape, matrix)
    names = matrix["backends"]
    if allowed is not None:
        allowed = set(allowed)
        unknown = sorted(allowed - set(names))
        if unknown:
            raise ValueError(f"choose_measured: allowed names {unknown}, which the matrix does not have ({names})")
    times = entry.get("times_us", {})
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
