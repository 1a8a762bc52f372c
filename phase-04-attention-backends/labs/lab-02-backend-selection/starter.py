"""Lab 04-02 starter: how vLLM v0.22.1 picks an attention backend on CUDA.

Your work: the functions below, in order (README steps 1 to 7). Run the tests with

    LAB_IMPL=starter pytest -q phase-04-attention-backends/labs/lab-02-backend-selection

The rules come from vLLM v0.22.1's source (README, "Where the rules live"): read the function
the README names for each step, then write what it decides.

Given, in ``_checks.py`` (imported below): the vocabulary (``GPUS``, ``DTYPES``,
``KV_CACHE_DTYPES``, ``DEFAULT_BLOCK_SIZE``, ``FEATURES``, ``DENSE_BACKENDS``, ``MLA_BACKENDS``,
``BACKENDS``, ``MLA_HEAD_SIZE``, ``CUDAGRAPH_SUPPORT``, ``CUDAGRAPH_MODES``, ``SHAPE_KEYS``), the
two result types (``Selection``, ``MeasuredChoice``) and the input checks (``_check_layer``,
``_check_features``, ``_check_backend``, ``_check_override``, ``_check_supports``,
``_find_entry``, ``_check_allowed``, ``_check_times``): call the checks first, so that bad input gets a clear message.
"""

from __future__ import annotations

from _checks import (  # noqa: F401  (given: the vocabulary, the result types and the input checks, in _checks.py)
    BACKENDS,
    CUDAGRAPH_MODES,
    CUDAGRAPH_SUPPORT,
    DEFAULT_BLOCK_SIZE,
    DENSE_BACKENDS,
    DTYPES,
    FEATURES,
    GPUS,
    KV_CACHE_DTYPES,
    MLA_BACKENDS,
    MLA_HEAD_SIZE,
    SHAPE_KEYS,
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
    ``block_size`` the KV-cache block size in tokens the user set (None: not set, and then no
    block-size limit applies), ``kv_cache_dtype`` one of ``KV_CACHE_DTYPES`` and ``features`` a
    collection of names from ``FEATURES`` (``"mla"``: the layer is multi-head latent attention).
    Bad arguments: ValueError.

    Each reason names the limit with the layer's value (README, "What the messages say"): ``head
    size 80``, the dtype, ``block size 8`` with the sizes it must be a multiple of, ``fp8`` and the
    format, ``sinks``, ``MLA``, and the GPU rule (``8.0``, ``7.5``, ``Hopper``, ``10.x``). The
    limits themselves are the README's table of backends.
    """
    # capability = device_capability(gpu)
    # _check_backend("backend_problems", backend)
    # features = _check_layer("backend_problems", dtype, head_size, block_size, kv_cache_dtype, features)
    raise NotImplementedError(
        "backend_problems: not implemented yet (README step 2: write each backend's limits as a "
        "table read from its source, then list every limit this layer breaks)"
    )


def platform_refusal(gpu, dtype) -> str | None:
    """Why vLLM v0.22.1 refuses the model's ``dtype`` on this GPU before it builds any layer, or
    None: ``CudaPlatformBase.check_if_supports_dtype`` (the worker calls it when it starts)
    refuses bfloat16 below compute capability 8.0. A refusal names ``bfloat16`` and ``8.0``;
    a dtype not of ``DTYPES`` is a ValueError naming ``dtype``."""
    raise NotImplementedError(
        "platform_refusal: not implemented yet (README step 3: the platform's dtype check, "
        "before any backend is considered)"
    )


def candidate_order(gpu, features=()) -> tuple[str, ...]:
    """The backends ``get_attn_backend_cls`` tries, best first, when nothing is asked for:
    ``_get_backend_priorities``, one list per kind of layer (dense or MLA) and per GPU family
    (major 10, or any other), less the backends this lab leaves out."""
    # capability = device_capability(gpu)
    # features = _check_features("candidate_order", features)
    raise NotImplementedError(
        "candidate_order: not implemented yet (README step 4: the four priority lists of "
        "_get_backend_priorities; the test is on the major number)"
    )


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

    A reason in ``rejected`` is one of three kinds: the backend's problems (joined); not a
    default here (it is not in ``candidate_order``: say ``default`` and name
    ``--attention-backend``, the only way to get it); or ``lower priority than`` the chosen
    backend (by name). With an override, every other backend's reason names
    ``--attention-backend``. An error names the override and its problems, or every
    candidate's problems.
    """
    # capability = device_capability(gpu)
    # features = _check_layer("select_backend", dtype, head_size, block_size, kv_cache_dtype, features)
    # override = _check_override("select_backend", override)
    raise NotImplementedError(
        "select_backend: not implemented yet (README step 5: the platform's check, then the override "
        "or the first candidate with no problems, a reason for every other backend, then the block size)"
    )


def cudagraph_support(backend, gpu) -> str:
    """What full CUDA graphs the backend's metadata builder can be captured in, in v0.22.1 (its
    ``get_cudagraph_support``), one of ``CUDAGRAPH_SUPPORT`` (README, "Why the choice is fixed
    for a run", has the levels: read the builders first). A backend not of ``BACKENDS``:
    ValueError listing them."""
    # capability = device_capability(gpu)
    # _check_backend("cudagraph_support", backend)
    raise NotImplementedError(
        "cudagraph_support: not implemented yet (README step 6: read each metadata builder's "
        "support level; two of them depend on the GPU)"
    )


def resolve_cudagraph_mode(requested, supports, spec_decode=False) -> str:
    """The CUDA-graph mode a run will use, from the mode asked for (a key of ``CUDAGRAPH_MODES``;
    v0.22.1's default is ``FULL_AND_PIECEWISE``) and the support levels of the model's attention
    groups (``supports``, one level of ``CUDAGRAPH_SUPPORT`` per group), as
    ``CompilationConfig.resolve_cudagraph_mode_and_sizes`` resolves it once, at start-up, against
    the weakest group (attention is a splitting op, the default):

    - ``NONE`` stays ``NONE``;
    - full graphs for mixed batches need ``ALWAYS``: otherwise ValueError if the support is
      ``NEVER`` (saying no ``full`` graph is possible and ``PIECEWISE`` remains), else the mode
      becomes ``FULL_AND_PIECEWISE``;
    - full graphs for decode batches with support ``NEVER``: the mode becomes ``PIECEWISE``;
    - full decode graphs with speculative decoding (``spec_decode``: uniform batches of more than
      one query token) need ``UNIFORM_BATCH`` or better; otherwise ``PIECEWISE``.

    An unknown mode: ValueError naming ``requested``; bad levels: ``_check_supports``'s ValueError.
    """
    raise NotImplementedError(
        "resolve_cudagraph_mode: not implemented yet (README step 6: the weakest group's level, then "
        "the checks of resolve_cudagraph_mode_and_sizes, in order; ValueError naming requested for an unknown mode)"
    )


def choose_measured(shape, matrix, allowed=None) -> MeasuredChoice:
    """The fastest backend for ``shape`` according to a measured ``matrix`` (bench.py's
    ``matrix.json``, loaded): among the backends of ``matrix["backends"]`` that have a time (not
    None) in the entry's ``times_us`` and, when ``allowed`` is given, are in it. A tie goes to the
    backend listed first in ``matrix["backends"]``. ValueError when the shape matches no entry or
    several (``_find_entry`` says ``no entry``), when ``allowed`` names a backend the matrix does
    not have (name them), or when no backend is left (say ``no allowed`` backend has a time).
    ``allowed`` is None (no filter) or a collection of backend names; a time is None (not measured)
    or a finite number of microseconds > 0. Anything else is a ValueError too (``_check_allowed``,
    ``_check_times``).
    """
    # entry = _find_entry(shape, matrix)
    # allowed = _check_allowed(allowed)  # None, or a frozenset of names (no more than that is checked)
    # times = _check_times(entry, matrix["backends"])  # the entry's times_us, each None or > 0
    raise NotImplementedError(
        "choose_measured: not implemented yet (README step 7: the fastest allowed backend with a "
        "time, ties to the first in matrix['backends'], and the runner-up's margin)"
    )
