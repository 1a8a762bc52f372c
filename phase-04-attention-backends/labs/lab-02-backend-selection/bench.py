"""Lab 04-02 benchmark: the fastest attention backend on this GPU, shape by shape (GPU only).

    python phase-04-attention-backends/labs/lab-02-backend-selection/bench.py --out DIR

Decode (batch 1 x 32k, 16 x 4k, 64 x 2k tokens) and prefill (one 4k and one 16k prompt, causal),
32 query / 8 KV heads, head_dim 128, 16-token blocks scattered by a shuffled pool, fp16 and bf16.
The backends (``BACKENDS``):

- ``sdpa_flash``, ``sdpa_efficient``, ``sdpa_cudnn``, ``sdpa_math``: ``scaled_dot_product_attention``
  on a dense, contiguous copy of the K/V made before timing, one kernel forced with
  ``torch.nn.attention.sdpa_kernel``. They read no paged cache: the "paging is free" bar.
- ``flex_paged``: ``flex_attention`` (compiled) over the paged cache itself, as vLLM v0.22.1's
  FlexAttention backend drives it: the whole cache is one long key sequence and a block mask built
  from the block table says which keys each query sees. Compile time is reported apart.
- ``triton_paged_decode``: lab 04-06's ``paged_decode`` (decode only).
- ``triton_paged_prefill``: lab 04-03's prefill kernel, when that lab is in the repository.
- ``gather_sdpa``: gather the pages into a dense copy, then SDPA with its default kernel choice,
  timed together.

Every output is checked against a float32 reference before its time counts; a wrong or failed
backend gets no time (None) and a note. Writes ``results.md``, ``results.svg`` (its plot, drawn
from that table; ``--plot-from results.md`` redraws it on any machine) and ``matrix.json`` (what
lab 04-02's ``choose_measured`` reads) into DIR. The whole run stays under
``--budget-s`` seconds (default 200): what is left when it runs out is skipped, with a note.
"""

from __future__ import annotations

import datetime
import inspect
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from labkit import bench, load_reference, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

NUM_HEADS = 32
NUM_KV_HEADS = 8
HEAD_DIM = 128
BLOCK_SIZE = 16
GROUP = NUM_HEADS // NUM_KV_HEADS
FLEX_BLOCK = 128  # flex_attention's block-mask granularity (its default)
# A backend's output counts only if its relative error (Frobenius norm) against the float32
# reference is below this. fp16/bf16 inputs with fp32 accumulation land near 1e-3 (bf16: its 8-bit
# mantissa, about 4e-3); a wrong mask or a wrong GQA mapping moves the output by O(1) relatively.
REL_TOL = 2e-2
# sdpa_math materializes the [heads, L, L] score matrix; above this it is skipped, not run.
MATH_SCORE_BYTES = 8 << 30
# How many query rows of a prefill the reference checks (first, middle and last rows).
PREFILL_CHECK_ROWS = 96

BACKENDS = ["sdpa_flash", "sdpa_efficient", "sdpa_cudnn", "sdpa_math", "flex_paged", "triton_paged_decode",
            "triton_paged_prefill", "gather_sdpa"]
READS = {name: ("dense" if name.startswith("sdpa_") else "paged") for name in BACKENDS}


@dataclass(frozen=True)
class Shape:
    phase: str  # "decode" or "prefill"
    batch: int
    seq_len: int

    @property
    def name(self) -> str:
        k = f"{self.seq_len // 1024}k"
        return f"decode b{self.batch} x {k}" if self.phase == "decode" else f"prefill {k}"


SHAPES = (
    Shape("decode", 1, 32768),
    Shape("decode", 16, 4096),
    Shape("decode", 64, 2048),
    Shape("prefill", 1, 4096),
    Shape("prefill", 1, 16384),
)
QUICK_SHAPES = (Shape("decode", 16, 4096), Shape("prefill", 1, 4096))


# ------------------------------------------------------------------------------------------
# The case: a paged cache, its block table, the queries, and a dense copy for SDPA.


@dataclass
class Case:
    shape: Shape
    q: object  # decode [batch, heads, dim]; prefill [seq_len, heads, dim] (token-major, as vLLM)
    k_cache: object  # [num_blocks, BLOCK_SIZE, kv_heads, dim]
    v_cache: object
    block_tables: object  # [batch, blocks per sequence] int32
    seq_lens: object  # [batch] int32
    k_dense: object = None  # [batch, kv_heads, seq_len, dim], contiguous
    v_dense: object = None


def make_case(torch, shape: Shape, dtype, device, seed: int = 0, block_size: int = BLOCK_SIZE,
              heads: tuple[int, int, int] = (NUM_HEADS, NUM_KV_HEADS, HEAD_DIM)) -> Case:
    """A cache holding exactly the batch's blocks, handed out by a shuffled pool."""
    num_heads, num_kv_heads, head_dim = heads
    gen = torch.Generator(device=device).manual_seed(seed)
    per_seq = math.ceil(shape.seq_len / block_size)
    num_blocks = shape.batch * per_seq
    cache_shape = (num_blocks, block_size, num_kv_heads, head_dim)
    k_cache = torch.randn(cache_shape, generator=gen, device=device, dtype=dtype)
    v_cache = torch.randn(cache_shape, generator=gen, device=device, dtype=dtype)
    pool = torch.randperm(num_blocks, generator=gen, device=device).to(torch.int32)
    block_tables = pool.view(shape.batch, per_seq).contiguous()
    seq_lens = torch.full((shape.batch,), shape.seq_len, dtype=torch.int32, device=device)
    rows = shape.batch if shape.phase == "decode" else shape.seq_len
    q = torch.randn((rows, num_heads, head_dim), generator=gen, device=device, dtype=dtype)
    case = Case(shape, q, k_cache, v_cache, block_tables, seq_lens)
    case.k_dense, case.v_dense = (gather_dense(c, block_tables, shape.seq_len).contiguous() for c in (k_cache, v_cache))
    return case


def gather_dense(cache, block_tables, seq_len: int):
    """``[batch, kv_heads, seq_len, dim]`` through the block table: one gather copy, then a view
    (heads and tokens swapped by strides, the last dimension stays contiguous)."""
    batch = block_tables.shape[0]
    blocks = cache[block_tables.long()]  # [batch, blocks, block_size, kv_heads, dim]
    tokens = blocks.reshape(batch, -1, cache.shape[2], cache.shape[3])[:, :seq_len]
    return tokens.transpose(1, 2)


# ------------------------------------------------------------------------------------------
# The backends. Each maker does its set-up (not timed) and returns a call whose output is
# shaped like the case's q: [rows, heads, dim].


def _sdpa_decode(torch, case: Case, k, v):
    """Decode has no causal mask, so the ``GROUP`` query heads of one KV head can be handed to SDPA
    as ``GROUP`` query rows of that head: exact, and no kernel needs GQA support or a K/V copy."""
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    batch, num_heads, dim = case.q.shape
    kv_heads = k.shape[1]
    q = case.q.view(batch, kv_heads, num_heads // kv_heads, dim)
    return lambda: sdpa(q, k, v).reshape(batch, num_heads, dim)


def _sdpa_prefill(torch, case: Case, k, v, gqa: bool):
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    q = case.q.transpose(0, 1).unsqueeze(0)  # [1, heads, seq_len, dim], a strided view
    if gqa:
        return lambda: sdpa(q, k, v, is_causal=True, enable_gqa=True)[0].transpose(0, 1)
    group = q.shape[1] // k.shape[1]
    k_rep, v_rep = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    return lambda: sdpa(q, k_rep, v_rep, is_causal=True)[0].transpose(0, 1)


def make_sdpa(torch, case: Case, kernel: str):
    """(call, note) for one forced SDPA kernel on the dense copy; the caller times it inside
    ``sdpa_kernel`` (``sdpa_context``)."""
    if kernel == "math" and case.shape.phase == "prefill":
        score_bytes = case.q.shape[1] * case.shape.seq_len ** 2 * 4
        if score_bytes > MATH_SCORE_BYTES:
            raise Skip(f"not run: it would materialize {score_bytes / 2**30:.0f} GiB of scores")
    if case.shape.phase == "decode":
        return _sdpa_decode(torch, case, case.k_dense, case.v_dense), ""
    call = _sdpa_prefill(torch, case, case.k_dense, case.v_dense, gqa=True)
    try:
        with sdpa_context(torch, kernel):
            call()
        return call, ""
    except Exception:  # this kernel has no GQA: give it K/V repeated to every query head
        return _sdpa_prefill(torch, case, case.k_dense, case.v_dense, gqa=False), "K/V repeated to 32 heads (no GQA)"


def sdpa_context(torch, kernel: str):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    which = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
             "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}[kernel]
    return sdpa_kernel([which])


def make_gather_sdpa(torch, case: Case):
    """Gather the pages into a dense copy, then SDPA with its own choice among its fused kernels
    (flash, cuDNN, efficient; never math, which would materialize the scores): both timed."""
    seq_len = case.shape.seq_len

    def call(gqa: bool = True):
        k = gather_dense(case.k_cache, case.block_tables, seq_len)
        v = gather_dense(case.v_cache, case.block_tables, seq_len)
        if case.shape.phase == "decode":
            return _sdpa_decode(torch, case, k, v)()
        return _sdpa_prefill(torch, case, k, v, gqa=gqa)()

    if case.shape.phase == "prefill":
        try:
            with fused_sdpa_context(torch):
                call()
        except Exception:  # no fused kernel with GQA here: repeat K/V after the gather (timed too)
            return (lambda: call(gqa=False)), "K/V repeated to 32 heads (no GQA)"
    return call, ""


def fused_sdpa_context(torch):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    if torch.device(triton_env.device()).type != "cuda":
        fused.append(SDPBackend.MATH)  # the CPU has no fused kernels (maintainers' CPU checks)
    return sdpa_kernel(fused)


def paged_mask_mod(torch, case: Case, block_size: int):
    """flex_attention's mask over the whole cache seen as one key sequence: query row ``r`` (of
    sequence ``seq[r]``, at position ``pos[r]``) sees cache slot ``kv`` when the slot's block
    belongs to that sequence and the slot's logical position is valid and not in the future."""
    batch, per_seq = case.block_tables.shape
    num_blocks = case.k_cache.shape[0]
    device = case.k_cache.device
    # physical block -> logical block of each sequence (-1: not its block); vLLM builds the same
    # inverse table (physical_to_logical_mapping) for its FlexAttention backend.
    to_logical = torch.full((batch, num_blocks), -1, dtype=torch.long, device=device)
    to_logical.scatter_(1, case.block_tables.long(),
                        torch.arange(per_seq, device=device).expand(batch, per_seq).contiguous())
    if case.shape.phase == "decode":
        seq = torch.arange(batch, device=device)
        pos = case.seq_lens.long() - 1
    else:
        seq = torch.zeros(case.shape.seq_len, dtype=torch.long, device=device)
        pos = torch.arange(case.shape.seq_len, device=device)
    seq_lens = case.seq_lens.long()

    def mask_mod(b, h, q_idx, kv_idx):
        s = seq[q_idx]
        logical = to_logical[s, kv_idx // block_size]
        token = logical * block_size + kv_idx % block_size
        return (logical >= 0) & (token < seq_lens[s]) & (token <= pos[q_idx])

    return mask_mod


def paged_block_mask(torch, case: Case, mask_mod, block_size: int):
    """The BlockMask of ``mask_mod``, built straight from the mask (no compiled
    ``create_block_mask``): for each 128-row query block, the 128-slot key blocks where some query
    sees some key (partial) and those where every query sees every key (full, no mask_mod call)."""
    from torch.nn.attention.flex_attention import BlockMask

    rows = case.q.shape[0]
    slots = case.k_cache.shape[0] * block_size
    if slots % FLEX_BLOCK:
        raise Skip(f"cache of {slots} slots is not a multiple of {FLEX_BLOCK}")
    device = case.k_cache.device
    num_q_blocks, num_kv_blocks = math.ceil(rows / FLEX_BLOCK), slots // FLEX_BLOCK
    kv = torch.arange(slots, device=device)
    any_seen = torch.zeros((num_q_blocks, num_kv_blocks), dtype=torch.bool, device=device)
    all_seen = torch.zeros_like(any_seen)
    zero = torch.zeros((), dtype=torch.long, device=device)
    for i in range(num_q_blocks):
        q_idx = torch.arange(i * FLEX_BLOCK, min((i + 1) * FLEX_BLOCK, rows), device=device)
        seen = mask_mod(zero, zero, q_idx[:, None], kv[None, :]).view(len(q_idx), num_kv_blocks, FLEX_BLOCK)
        any_seen[i] = seen.any(dim=2).any(dim=0)
        all_seen[i] = seen.all(dim=2).all(dim=0)
    partial = any_seen & ~all_seen

    def as_indices(mask):
        counts = mask.sum(dim=1).to(torch.int32)[None, None]
        order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True).to(torch.int32)[None, None]
        return counts, order

    kv_num_blocks, kv_indices = as_indices(partial)
    full_num_blocks, full_indices = as_indices(all_seen)
    kwargs = {"BLOCK_SIZE": FLEX_BLOCK, "mask_mod": mask_mod}
    if "seq_lengths" in inspect.signature(BlockMask.from_kv_blocks).parameters:
        kwargs["seq_lengths"] = (rows, slots)
    return BlockMask.from_kv_blocks(kv_num_blocks, kv_indices, full_num_blocks, full_indices, **kwargs)


_FLEX_COMPILED = None


def make_flex(torch, case: Case, compiled: bool = True, block_size: int = BLOCK_SIZE):
    """flex_attention over the paged cache: queries ``[1, heads, rows, dim]``, keys and values the
    cache viewed as ``[1, kv_heads, num_blocks * block_size, dim]`` (no copy)."""
    global _FLEX_COMPILED
    from torch.nn.attention.flex_attention import flex_attention

    mask_mod = paged_mask_mod(torch, case, block_size)
    block_mask = paged_block_mask(torch, case, mask_mod, block_size)
    rows, num_heads, dim = case.q.shape
    q = case.q.transpose(0, 1).unsqueeze(0).contiguous()
    k, v = (c.view(1, -1, c.shape[2], c.shape[3]).transpose(1, 2) for c in (case.k_cache, case.v_cache))
    fn = flex_attention
    if compiled:
        if _FLEX_COMPILED is None:
            _FLEX_COMPILED = torch.compile(flex_attention, dynamic=False, fullgraph=True)
        fn = _FLEX_COMPILED
    scale = 1.0 / math.sqrt(dim)
    return (lambda: fn(q, k, v, block_mask=block_mask, scale=scale, enable_gqa=True)[0].transpose(0, 1)), ""


def make_triton_decode(torch, case: Case, lab06):
    if case.shape.phase != "decode":
        raise Skip("decode only")
    if lab06 is None:
        raise Skip("lab 04-06 not available")
    args = (case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens)
    return (lambda: lab06.paged_decode(*args)), ""


# Lab 04-03's prefill kernel: the public function whose name is listed first here is used; its
# arguments are filled by parameter name (PREFILL_ARGUMENTS). Edit these two if that lab's API
# differs; anything that does not fit is reported and skipped.
PREFILL_FUNCTIONS = ("paged_prefill_triton", "paged_prefill", "prefill_attention_triton", "triton_prefill",
                     "prefill_attention", "causal_prefill_triton", "causal_prefill")


def _prefill_arguments(torch, case: Case) -> dict:
    device = case.q.device
    seq_len = case.shape.seq_len
    start = torch.zeros(1, dtype=torch.int32, device=device)
    qsl = torch.tensor([0, seq_len], dtype=torch.int32, device=device)
    return {
        "q": case.q, "query": case.q, "k_cache": case.k_cache, "key_cache": case.k_cache,
        "v_cache": case.v_cache, "value_cache": case.v_cache,
        "block_tables": case.block_tables, "block_table": case.block_tables[0],
        "query_start_loc": qsl, "cu_seqlens_q": qsl,
        "seq_lens": case.seq_lens, "seq_len": seq_len, "context_lens": start, "starts": start, "start": 0,
        "num_computed_tokens": start, "scale": 1.0 / math.sqrt(case.q.shape[-1]),
    }


def find_prefill_kernel():
    """(function, message): lab 04-03's prefill entry point if that lab is in this repository and has one."""
    if not (Path(__file__).resolve().parents[1] / "lab-03-causal-prefill-attention").is_dir():
        return None, "lab 04-03 is not in this repository"
    try:
        module = load_reference("04-03")
    except Exception as err:  # a broken lab must not stop the benchmark
        return None, f"lab 04-03 did not load: {type(err).__name__}: {err}"
    for name in PREFILL_FUNCTIONS:
        if callable(getattr(module, name, None)):
            return getattr(module, name), f"lab 04-03's {name}"
    public = sorted(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))
    return None, f"lab 04-03 has none of {PREFILL_FUNCTIONS} (it has {public}): edit PREFILL_FUNCTIONS"


def make_triton_prefill(torch, case: Case, kernel):
    if case.shape.phase != "prefill":
        raise Skip("prefill only")
    if kernel is None:
        raise Skip("no lab 04-03 kernel")
    given = _prefill_arguments(torch, case)
    kwargs, missing = {}, []
    for name, param in inspect.signature(kernel).parameters.items():
        if name in given:
            kwargs[name] = given[name]
        elif param.default is inspect.Parameter.empty and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            missing.append(name)
    if missing:
        raise Skip(f"cannot fill the arguments {missing} of {kernel.__name__}: edit PREFILL_ARGUMENTS")
    return (lambda: kernel(**kwargs)), ""


# ------------------------------------------------------------------------------------------
# Checking and timing.


class Skip(Exception):
    """A backend that does not apply to a shape, or cannot run it here: the reason is the note."""


def reference_rows(torch, case: Case):
    """(rows, float32 reference ``[len(rows), heads, dim]``): every decode row; for a prefill, the
    first, middle and last ``PREFILL_CHECK_ROWS // 3`` query positions."""
    n = case.q.shape[0]
    if case.shape.phase == "decode":
        rows = torch.arange(n, device=case.q.device)
    else:
        third = PREFILL_CHECK_ROWS // 3
        mid = n // 2
        rows = torch.cat([torch.arange(0, third), torch.arange(mid, mid + third), torch.arange(n - third, n)])
        rows = rows.to(case.q.device)
    batch, kv_heads, seq_len, dim = case.k_dense.shape
    heads = case.q.shape[1]
    q = case.q[rows].float().view(len(rows), kv_heads, heads // kv_heads, dim)  # query head h -> KV head h // group
    scale = 1.0 / math.sqrt(dim)
    if case.shape.phase == "decode":  # row b is sequence b
        k, v = case.k_dense.float(), case.v_dense.float()  # [batch, kv_heads, seq_len, dim]
        p = torch.softmax(torch.einsum("rgqd,rgkd->rgqk", q, k) * scale, dim=-1)
        out = torch.einsum("rgqk,rgkd->rgqd", p, v)
    else:  # one sequence; row r sees keys 0..r
        k, v = case.k_dense[0].float(), case.v_dense[0].float()  # [kv_heads, seq_len, dim]
        scores = torch.einsum("rgqd,gkd->rgqk", q, k) * scale
        future = torch.arange(seq_len, device=q.device)[None, :] > rows[:, None]
        p = torch.softmax(scores.masked_fill(future[:, None, None, :], float("-inf")), dim=-1)
        out = torch.einsum("rgqk,gkd->rgqd", p, v)
    return rows, out.reshape(len(rows), heads, dim)


def relative_error(torch, out, rows, ref) -> float:
    got = out[rows].float()
    return (torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref)).item()


def run_backend(torch, name: str, maker, case: Case, rows, ref, context=None):
    """``{"us": time or None, "note": str, "rel_err": float or None, "first_call_s": seconds}``."""
    result = {"us": None, "note": "", "rel_err": None, "first_call_s": None}
    try:
        call, note = maker()
        result["note"] = note
        t0 = time.perf_counter()
        with context if context is not None else _nothing():
            out = call()
            torch.cuda.synchronize()
            result["first_call_s"] = time.perf_counter() - t0
            err = relative_error(torch, out, rows, ref)
            result["rel_err"] = err
            if not err < REL_TOL:  # also catches NaN
                result["note"] = f"wrong result (relative error {err:.1e})"
                return result
            del out
            result["us"] = bench.time_us(call)
    except Skip as why:
        result["note"] = str(why)
    except Exception as err:  # one backend failing must not stop the others
        result["note"] = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
    return result


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ------------------------------------------------------------------------------------------
# The matrix, the table and the plot.


def fastest(times: dict) -> tuple[str, float, str | None, float | None]:
    """(best, best_us, runner_up, margin) over the measured backends, ties in BACKENDS order."""
    ranked = sorted((us, BACKENDS.index(name), name) for name, us in times.items() if us is not None)
    if not ranked:
        return "-", math.nan, None, None
    best_us, _, best = ranked[0]
    if len(ranked) == 1:
        return best, best_us, None, None
    return best, best_us, ranked[1][2], ranked[1][0] / best_us


def build_matrix(results: list[dict], device: str) -> dict:
    entries = []
    for r in results:
        shape = r["shape"]
        entries.append({
            "phase": shape.phase, "dtype": r["dtype"], "batch": shape.batch, "seq_len": shape.seq_len,
            "num_heads": NUM_HEADS, "num_kv_heads": NUM_KV_HEADS, "head_dim": HEAD_DIM, "block_size": BLOCK_SIZE,
            "times_us": {name: r["backends"][name]["us"] for name in BACKENDS},
            "notes": {name: r["backends"][name]["note"] for name in BACKENDS if r["backends"][name]["note"]},
        })
    return {"device": device, "backends": BACKENDS, "reads": READS, "entries": entries}


def results_table(results: list[dict]) -> str:
    headers = ["dtype", "shape", *BACKENDS, "fastest", "runner-up", "margin"]
    rows = []
    for r in results:
        times = {name: r["backends"][name]["us"] for name in BACKENDS}
        best, _, second, margin = fastest(times)
        cells = ["-" if us is None else f"{us:.1f}" for us in times.values()]
        rows.append([r["dtype"], r["shape"].name, *cells, best, second or "-",
                     "-" if margin is None else f"{margin:.2f}x"])
    return bench.markdown_table(headers, rows)


def notes_table(results: list[dict]) -> str:
    rows = []
    for r in results:
        for name in BACKENDS:
            b = r["backends"][name]
            if b["note"] and b["note"] not in ("decode only", "prefill only"):
                rows.append([r["dtype"], r["shape"].name, name, b["note"]])
    return bench.markdown_table(["dtype", "shape", "backend", "note"], rows) if rows else "(none)"


def compile_table(results: list[dict]) -> str:
    rows = [[r["dtype"], r["shape"].name, f"{r['backends']['flex_paged']['first_call_s']:.1f}"]
            for r in results if r["backends"]["flex_paged"]["first_call_s"] is not None]
    return bench.markdown_table(["dtype", "shape", "flex_paged first call (compile + run), s"], rows) \
        if rows else "(flex_paged did not run)"


def plot(results: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the table of ``results`` (a results.md this script wrote): one heat
    map per dtype, shapes down, backends across, each cell its time over the row's fastest (1.00 =
    fastest; blank = not measured). The run and its plot cannot disagree, and the plot can be redrawn
    anywhere (``--plot-from``)."""
    import math

    from matplotlib.colors import LinearSegmentedColormap, to_hex

    from labkit import figures

    rows = figures.results_table(results, "dtype")
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    plt = figures.pyplot()
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(figures.WIDTH, 1.9 * len(dtypes) + 1.6), sharex=True,
                             squeeze=False, layout="constrained")
    # Fastest green, 4x amber, 16x and slower red: mid tones, which read on either page.
    scale = LinearSegmentedColormap.from_list("slowdown", [figures.COLORS[c] for c in ("accent", "query", "poison")])
    for ax, dtype in zip(axes[:, 0], dtypes, strict=True):
        mine = [r for r in rows if r["dtype"] == dtype]
        for i, r in enumerate(mine):
            times = {name: figures.number(r[name]) for name in BACKENDS}
            best = min(t for t in times.values() if t is not None)
            for j, name in enumerate(BACKENDS):
                if times[name] is None:
                    continue
                ratio = times[name] / best
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, ec=figures.COLORS["paper"], lw=1,
                                           fc=to_hex(scale(min(math.log2(ratio) / 4, 1.0)))))
                ax.text(j, i, f"{ratio:.2f}" if ratio < 10 else f"{ratio:.0f}", ha="center", va="center",
                        fontsize=9, color=figures.COLORS["dark"], weight="bold" if ratio == 1 else "normal")
        ax.set_xlim(-0.5, len(BACKENDS) - 0.5)
        ax.set_ylim(len(mine) - 0.5, -0.5)
        ax.set_yticks(range(len(mine)), [r["shape"] for r in mine])
        ax.set_ylabel(dtype)
        ax.tick_params(length=0)
        for side in ("left", "bottom"):
            ax.spines[side].set_visible(False)
    axes[-1, 0].set_xticks(range(len(BACKENDS)), BACKENDS, rotation=35, ha="right")
    fig.suptitle("Time over the fastest backend of the row (1.00 = fastest; blank: not measured)", x=0.0,
                 ha="left", fontsize=10)
    return figures.save(fig, path)


# ------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = bench.arguments(__doc__, "folder for results.md, results.svg, matrix.json")
    parser.add_argument("--quick", action="store_true", help="fp16 only, one decode and one prefill shape")
    parser.add_argument("--no-flex", action="store_true", help="leave flex_paged out (it compiles per shape)")
    parser.add_argument("--budget-s", type=float, default=180.0, help="stop measuring after this many seconds")
    parser.add_argument("--flex-compile-budget-s", type=float, default=100.0,
                        help="stop compiling flex_attention after this many seconds of first calls")
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0
    if args.out is None:
        parser.error("--out DIR is required (or --plot-from RESULTS_MD)")
    if BACKEND != "cuda":
        print("bench.py measures GPU kernels and needs a CUDA GPU; this machine has none "
              f"({triton_env.describe()}). The lab's tests run here: pytest {HERE.relative_to(ROOT)}")
        return 2

    import torch

    for knob, value in (("cache_size_limit", 64), ("recompile_limit", 64)):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, value)  # one compile per shape and dtype, never eager

    start = time.perf_counter()
    deadline = start + args.budget_s
    try:
        lab06 = load_reference("04-06")
    except Exception as err:
        print(f"(lab 04-06 not available: {type(err).__name__}: {err})")
        lab06 = None
    prefill_kernel, prefill_msg = find_prefill_kernel()
    print(f"{bench.device_line()}; triton_paged_prefill: {prefill_msg}", flush=True)

    dtypes = [torch.float16] if args.quick else [torch.float16, torch.bfloat16]
    shapes = QUICK_SHAPES if args.quick else SHAPES
    results, cases = [], []
    # Pass 1: everything but flex (no compile step), every shape and dtype.
    for dtype in dtypes:
        for shape in shapes:
            case = make_case(torch, shape, dtype, "cuda")
            rows, ref = reference_rows(torch, case)
            makers = {
                "sdpa_flash": (lambda c=case: make_sdpa(torch, c, "flash"), "flash"),
                "sdpa_efficient": (lambda c=case: make_sdpa(torch, c, "efficient"), "efficient"),
                "sdpa_cudnn": (lambda c=case: make_sdpa(torch, c, "cudnn"), "cudnn"),
                "sdpa_math": (lambda c=case: make_sdpa(torch, c, "math"), "math"),
                "triton_paged_decode": (lambda c=case: make_triton_decode(torch, c, lab06), None),
                "triton_paged_prefill": (lambda c=case: make_triton_prefill(torch, c, prefill_kernel), None),
                "gather_sdpa": (lambda c=case: make_gather_sdpa(torch, c), "fused"),
            }
            row = {"dtype": str(dtype).removeprefix("torch."), "shape": shape, "backends": {}}
            for name, (maker, kernel) in makers.items():
                if time.perf_counter() > deadline:
                    row["backends"][name] = {"us": None, "note": "skipped: time budget", "rel_err": None,
                                             "first_call_s": None}
                    continue
                context = None if kernel is None else fused_sdpa_context(torch) if kernel == "fused" \
                    else sdpa_context(torch, kernel)
                row["backends"][name] = run_backend(torch, name, maker, case, rows, ref, context)
            row["backends"]["flex_paged"] = {"us": None, "note": "", "rel_err": None, "first_call_s": None}
            results.append(row)
            cases.append((case, rows, ref))
            print(f"{row['dtype']:9s} {shape.name:16s} " + ", ".join(
                f"{n} {b['us']:.1f}" for n, b in row["backends"].items() if b["us"] is not None), flush=True)
    # Pass 2: flex, which compiles once per shape and dtype, within its own budget.
    # A compile is started only if it should end within both budgets: the first one is guessed
    # at 30 s, each later one at the time the previous one took.
    flex_spent, next_compile_s = 0.0, 30.0
    for row, (case, rows, ref) in zip(results, cases, strict=True):
        if args.no_flex:
            row["backends"]["flex_paged"]["note"] = "left out (--no-flex)"
        elif (time.perf_counter() + next_compile_s > deadline
              or flex_spent + next_compile_s > args.flex_compile_budget_s):
            row["backends"]["flex_paged"]["note"] = "skipped: time budget"
        else:
            r = run_backend(torch, "flex_paged", lambda c=case: make_flex(torch, c), case, rows, ref)
            row["backends"]["flex_paged"] = r
            flex_spent += r["first_call_s"] or 0.0
            next_compile_s = max(r["first_call_s"] or 0.0, 5.0)
            us = "-" if r["us"] is None else f"{r['us']:.1f}"
            print(f"{row['dtype']:9s} {row['shape'].name:16s} flex_paged {us} us, "
                  f"first call {r['first_call_s'] or 0:.1f} s {r['note']}", flush=True)
    del cases
    torch.cuda.empty_cache()

    args.out.mkdir(parents=True, exist_ok=True)
    device = bench.device_line()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    matrix = build_matrix(results, device)
    matrix["date"] = date
    (args.out / "matrix.json").write_text(json.dumps(matrix, indent=1) + "\n")
    text = (
        f"# Lab 04-02 results\n\n{device}, {date}. {NUM_HEADS} query / {NUM_KV_HEADS} KV heads, "
        f"head_dim {HEAD_DIM}, blocks of {BLOCK_SIZE} tokens. Median times in microseconds "
        f"(`triton.testing.do_bench`, L2 flushed); '-' = not measured (see the notes). Whole run: "
        f"{time.perf_counter() - start:.0f} s.\n\n{results_table(results)}\n\n"
        f"## Notes\n\n{notes_table(results)}\n\n## flex_attention compile time\n\n{compile_table(results)}\n"
    )
    (args.out / "results.md").write_text(text)
    try:
        plot(args.out / "results.md", args.out / "results.svg")
    except (Exception, SystemExit) as err:  # no matplotlib: the table and the JSON are written
        print(f"(results.svg not written: {err})")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
