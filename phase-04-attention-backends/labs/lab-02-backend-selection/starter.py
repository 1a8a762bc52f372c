"""Lab 04-02 starter: how vLLM v0.10.1 picks an attention backend on CUDA.

Your work: the functions below, in order (README steps 1 to 7). Run the tests with

    LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-02-backend-selection

The rules come from vLLM v0.10.1's source (README, "Where the rules live"): read the function
the README names for each step, then write what it decides. The constants, the two result
types and the input checks at the bottom are written for you: call the checks first, so bad
input gets a clear message.
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

# The backends of the V1 engine on CUDA, by their VLLM_ATTENTION_BACKEND names.
DENSE_BACKENDS = ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN_VLLM_V1", "FLEX_ATTENTION")
MLA_BACKENDS = ("CUTLASS_MLA", "FLASHMLA", "TRITON_MLA")
BACKENDS = DENSE_BACKENDS + MLA_BACKENDS

# MLA layers attend over the latent cache: kv_lora_rank 512 + qk_rope_head_dim 64.
MLA_HEAD_SIZE = 576

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
SHAPE_KEYS = ("phase", "dtype", "batch", "seq_len")


@dataclass(frozen=True)
class Selection:
    """The backend chosen for a layer, the KV-cache block size the run will use, and, for
    every other backend of ``BACKENDS``, why it was not chosen."""

    backend: str
    block_size: int
    rejected: dict[str, str]


@dataclass(frozen=True)
class MeasuredChoice:
    """The fastest allowed backend of a matrix entry, its time, and the runner-up with the
    margin ``runner_up_us / time_us`` (None when it is the only one)."""

    backend: str
    time_us: float
    runner_up: str | None
    margin: float | None


def device_capability(gpu) -> tuple[int, int]:
    """The compute capability ``(major, minor)`` of ``gpu``: a name of ``GPUS`` or a pair of ints
    with ``major >= 1`` and ``0 <= minor <= 9`` (vLLM's ``DeviceCapability.to_int`` assumes a
    single-digit minor). Anything else is a ValueError naming ``gpu``."""
    raise NotImplementedError(
        "device_capability: not implemented yet (README step 1: look the name up in GPUS, or check "
        "the (major, minor) pair; ValueError naming gpu otherwise)"
    )


def backend_problems(backend, gpu, dtype, head_size, block_size, kv_cache_dtype="auto", features=()) -> list[str]:
    """Why ``backend`` cannot run one attention layer on ``gpu``: a list of reasons, one per
    limit the layer breaks, each naming the limit and the layer's value; empty when it can.

    ``dtype`` is the model's dtype (``DTYPES``), ``head_size`` its head dimension,
    ``block_size`` the KV-cache block size in tokens (``BLOCK_SIZES``), ``kv_cache_dtype`` one
    of ``KV_CACHE_DTYPES`` and ``features`` a collection of names from ``FEATURES``
    (``"mla"``: the layer is multi-head latent attention). Bad arguments: ValueError.

    Each reason names the limit with the layer's value (README, "What the messages say"): ``head
    size 80``, the dtype, ``block size 8`` with the multiple or the size it needs, ``fp8`` and the
    format, ``sliding window``, ``sinks``, ``MLA``, ``Hopper`` (FlashMLA), ``10.0`` (CUTLASS MLA),
    ``8.0`` (FlashAttention 2). The limits themselves are the README's table of backends.
    """
    # capability = device_capability(gpu)
    # _check_backend("backend_problems", backend)
    # features = _check_layer("backend_problems", dtype, head_size, block_size, kv_cache_dtype, features)
    raise NotImplementedError(
        "backend_problems: not implemented yet (README step 2: write each backend's limits as a "
        "table read from its source, then list every limit this layer breaks)"
    )


def v1_engine_refusal(gpu, kv_cache_dtype="auto", override=None) -> str | None:
    """Why vLLM v0.10.1 would not run the V1 engine at all for this GPU and cache (it falls back
    to its V0 engine, or raises when ``VLLM_USE_V1=1``), or None when it runs it.

    The rules of ``EngineArgs._is_v1_supported_oracle``: compute capability below 8.0 is
    refused; an fp8 KV cache is accepted only where ``CudaPlatformBase.is_kv_cache_dtype_supported``
    says so: on SM 10.0 always, elsewhere only with no ``override`` and FlashAttention 3 (Hopper).
    A refusal names ``8.0`` (a GPU below it) or ``fp8`` (and the override, when one is set).
    """
    raise NotImplementedError(
        "v1_engine_refusal: not implemented yet (README step 3: the engine's gate: capability "
        "below 8.0, then fp8 caches outside SM 10.0)"
    )


def candidate_order(gpu, features=()) -> tuple[str, ...]:
    """The backends ``get_attn_backend_cls`` tries, best first, when nothing is overridden.

    MLA layers: CUTLASS_MLA, FLASHMLA, TRITON_MLA. Dense layers: FLASHINFER first on SM 10.0
    only; then TRITON_ATTN_VLLM_V1 when the layer has attention sinks, on any GPU but SM 9.0;
    then FLASH_ATTN, then FLEX_ATTENTION.
    """
    # capability = device_capability(gpu)
    # features = _check_features("candidate_order", features)
    raise NotImplementedError(
        "candidate_order: not implemented yet (README step 4: the priority list of get_attn_backend_cls; "
        "equality where the source says is_device_capability)"
    )


def select_backend(gpu, dtype, head_size, block_size=None, *, kv_cache_dtype="auto", features=(),
                   override=None) -> Selection:
    """The attention backend vLLM v0.10.1's V1 engine runs for this layer on ``gpu``.

    Arguments as for ``backend_problems``; ``block_size=None`` lets the platform choose;
    ``override`` is ``VLLM_ATTENTION_BACKEND`` (None: not set). Returns a ``Selection``:
    the backend, the block size the run will use, and a non-empty reason for every other
    backend of ``BACKENDS``. ValueError, with the reasons, when the engine refuses the GPU or
    cache, when the override cannot run the layer, or when no candidate can; ValueError for
    bad arguments and for an override that is not a backend of ``BACKENDS``.

    A reason in ``rejected`` is one of three kinds: the backend's problems (joined); not a
    default here (it is not in ``candidate_order``: say ``default`` and name
    ``VLLM_ATTENTION_BACKEND``, the only way to get it); or ``lower priority than`` the chosen
    backend (by name). With an override, every other backend's reason names
    ``VLLM_ATTENTION_BACKEND``. An error names the override and its problems, or every
    candidate's problems.
    """
    # capability = device_capability(gpu)
    # features = _check_layer("select_backend", dtype, head_size, block_size, kv_cache_dtype, features)
    # if override is not None:
    #     _check_backend("select_backend", override, "override")
    raise NotImplementedError(
        "select_backend: not implemented yet (README step 5: the gate, the platform's block size, "
        "then the override or the first candidate with no problems, and a reason for every other backend)"
    )


def cudagraph_support(backend, gpu) -> str:
    """The ``cudagraph_support`` of the backend's metadata builder in v0.10.1, one of
    ``CUDAGRAPH_SUPPORT``: what full CUDA graphs it can be captured in (README, "Why the choice
    is fixed for a run", has the levels: read the builders first). A backend not of ``BACKENDS``:
    ValueError listing them."""
    # capability = device_capability(gpu)
    # _check_backend("cudagraph_support", backend)
    raise NotImplementedError(
        "cudagraph_support: not implemented yet (README step 6: read each metadata builder's "
        "cudagraph_support, and mind the one that sets the wrong name)"
    )


def resolve_cudagraph_mode(requested, backend, gpu, spec_decode=False) -> str:
    """The CUDA-graph mode a run will use, from the mode asked for (a key of ``CUDAGRAPH_MODES``)
    and the backend's support, as ``GPUModelRunner.initialize_cudagraph_capture`` resolves it
    once, at start-up (attention is a splitting op, the default):

    - full graphs for mixed batches need ``ALWAYS``; otherwise the mode drops to
      ``FULL_AND_PIECEWISE``, or ValueError if the backend supports no full graph (``NEVER``);
    - full decode graphs with speculative decoding (``spec_decode``: uniform batches of more
      than one query token) need ``UNIFORM_BATCH`` or better; otherwise ``PIECEWISE``;
    - any mode with full graphs left and support ``NEVER``: ValueError saying no ``full`` graph
      is possible and ``PIECEWISE`` remains; an unknown mode: ValueError naming ``requested``.
    """
    raise NotImplementedError(
        "resolve_cudagraph_mode: not implemented yet (README step 6: the three checks of "
        "initialize_cudagraph_capture, in order; ValueError naming requested for an unknown mode)"
    )


def choose_measured(shape, matrix, allowed=None) -> MeasuredChoice:
    """The fastest backend for ``shape`` according to a measured ``matrix`` (bench.py's
    ``matrix.json``, loaded): among the backends of ``matrix["backends"]`` that have a time (not
    None) in the entry's ``times_us`` and, when ``allowed`` is given, are in it. A tie goes to the
    backend listed first in ``matrix["backends"]``. ValueError when the shape matches no entry or
    several (``_find_entry`` says ``no entry``), when ``allowed`` names a backend the matrix does
    not have (name them), or when no backend is left (say ``no allowed`` backend has a time).
    """
    # entry = _find_entry(shape, matrix)
    raise NotImplementedError(
        "choose_measured: not implemented yet (README step 7: the fastest allowed backend with a "
        "time, ties to the first in matrix['backends'], and the runner-up's margin)"
    )


# ------------------------------------------------------------------------------------------
# Input checks, written for you.


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
