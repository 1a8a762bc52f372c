"""Lab 04-06 benchmark: paged decode against the memory roofline and dense attention (GPU only).

    python phase-04-attention-backends/labs/lab-06-paged-decode-roofline/bench.py [--out DIR] [--shapes NAME ...]
    python .../bench.py --vllm-triton PATH/vllm/v1/attention/ops/triton_decode_attention.py   # adds vLLM's kernel
    python .../bench.py --dry-run     # on a CPU: the script's plumbing on tiny shapes (numbers meaningless)

For each shape, in one process, every way of computing the same decode step is timed twice, with
the L2 cache flushed before each run: per call as Python issues it (``do_bench``), and replayed
from a CUDA graph, the way serving engines run their decode steps (no host launch cost):

  lab           this lab's paged_decode, reading the scattered cache through the block table
  Hopper TMA    going-further/hopper_decode.py's paged_decode: the same kernel with its pages
                loaded by the tensor memory accelerator (on a Hopper GPU or later; else left out)
  cuDNN SDPA    scaled_dot_product_attention (cuDNN backend) on a dense, contiguous copy of the cache
  SDPA          the same with the backend left to torch
  gather+SDPA   gather the cache through the table into a dense copy, then SDPA (paging done naively)
  lab 02-04     one program per query head (batch-1 shapes up to 128k, per call only: it is slow)
  vLLM Triton   with --vllm-triton: vLLM's Triton decode kernel, loaded from a file you give (not
                part of this repository), at each --vllm-splits count; the fastest is reported
  FlashInfer    when flashinfer-python is installed (the "flashinfer" extra): its paged decode,
                BatchDecodeWithPagedKVCacheWrapper, on the same cache and tables, through its CUDA-core
                decode kernel and through its tensor-core one; the faster is reported

The roofline: the K+V bytes of the valid tokens over two bandwidths measured in the same run, a
streaming read of 1 GiB (decode only reads) and a 1 GiB copy (bytes read plus written). The fp16
matrix-product rate of the same GPU gives the ridge point. With --out, writes results.md (the
table, with tune.py's levers.md appended: --levers FILE, or DIR/levers.md when it exists) and
results.svg, the plot drawn from that table; --plot-from results.md redraws it on any machine.
"""

from __future__ import annotations

import datetime
import importlib.util
import inspect
import itertools
import math
import re
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, cases, load_impl, load_reference, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

BLOCK_SIZE = 16
HEAD_DIM = 128


@dataclass(frozen=True)
class Shape:
    name: str
    seq_lens: tuple[int, ...]
    num_heads: int = 32
    num_kv_heads: int = 8
    starred: bool = False  # a starred shape: >= 1.00x cuDNN SDPA under CUDA graphs (the README)

    @property
    def batch(self) -> int:
        return len(self.seq_lens)


def _batch(n: int, tokens: int, num_heads: int = 32, num_kv_heads: int = 8, starred: bool = False) -> Shape:
    size = f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)
    heads = "" if (num_heads, num_kv_heads) == (32, 8) else f", {num_heads}/{num_kv_heads} heads"
    return Shape(f"b{n} x {size}{heads}", (tokens,) * n, num_heads, num_kv_heads, starred)


SHAPES = (
    _batch(1, 8192),
    _batch(1, 32768, starred=True),
    _batch(1, 131072, starred=True),
    _batch(1, 524288, starred=True),
    _batch(4, 16384, starred=True),
    _batch(16, 4096, starred=True),
    _batch(64, 4096),
    _batch(128, 512, starred=True),
    _batch(256, 1024),
    _batch(64, 2048, 32, 32),
    _batch(64, 2048, 64, 8),
    _batch(8, 32768, 40, 8, starred=True),
    Shape("skewed 64k + 63 x 1k", (65536,) + (1024,) * 63, starred=True),
)
# --dry-run: the same code paths on shapes the interpreter runs in seconds.
DRY_SHAPES = (
    Shape("b1 x 300", (300,), 8, 2),
    Shape("b3 ragged", (100, 37, 5), 8, 2),
    Shape("b2 x 64, 10/2 heads", (64, 64), 10, 2),
)
DRY_HEAD_DIM = 64
# FlashInfer's two decode paths (BatchDecodeWithPagedKVCacheWrapper's use_tensor_cores); its column
# shows the faster one under CUDA graphs, named in parentheses.
FLASHINFER_KINDS = {"CUDA cores": False, "tensor cores": True}
OLD_KERNEL_MAX_TOKENS = 131072  # lab 02-04 takes ~15 ms at 128k; longer shapes would dominate the run


# --------------------------------------------------------------------------- the ways to compute one step


def dense_groups(case, shape: Shape):
    """``[(rows, q_rows, k, v)]``: one group per distinct length (SDPA cannot mix lengths), with
    dense, contiguous copies of its K and V made once, outside any timing."""
    import torch

    groups = []
    for n in sorted(set(shape.seq_lens), reverse=True):
        rows = torch.tensor([b for b, x in enumerate(shape.seq_lens) if x == n], device=case.q.device)
        table = case.block_tables[rows]
        k, v = cases.dense_kv(case.k_cache, table, n), cases.dense_kv(case.v_cache, table, n)
        groups.append((rows, case.q[rows], k, v))
    return groups


def sdpa_way(groups, backend=None):
    """SDPA over the dense copies, one call per length group; ``backend`` forces one of torch's."""
    from torch.nn.attention import sdpa_kernel

    def run():
        if backend is None:
            return [cases.sdpa_decode(q, k, v) for _, q, k, v in groups]
        with sdpa_kernel([backend]):
            return [cases.sdpa_decode(q, k, v) for _, q, k, v in groups]

    return run


def gather_sdpa_way(case, shape: Shape):
    """Gather through the table, then SDPA: the copy is part of every call."""
    import torch

    lengths = []
    for n in sorted(set(shape.seq_lens), reverse=True):
        rows = torch.tensor([b for b, x in enumerate(shape.seq_lens) if x == n], device=case.q.device)
        lengths.append((n, case.q[rows], case.block_tables[rows]))

    def run():
        return [cases.sdpa_decode(q, cases.dense_kv(case.k_cache, table, n, contiguous=False),
                                  cases.dense_kv(case.v_cache, table, n, contiguous=False))
                for n, q, table in lengths]

    return run


def assemble(parts, groups, like):
    """The per-group outputs of a dense way, put back in the batch's order."""
    out = like.new_zeros(like.shape)
    for part, (rows, *_) in zip(parts, groups, strict=True):
        out[rows] = part.to(out.dtype)
    return out


def load_vllm_triton(path: Path):
    """vLLM's Triton decode module (``vllm/v1/attention/ops/triton_decode_attention.py`` of a vLLM
    checkout, v0.22.1), loaded from ``path`` with its few vLLM imports stubbed: nothing of vLLM is
    installed or copied here. Returns the module's ``decode_attention_fwd``."""
    import triton
    import triton.language as tl

    vllm = types.ModuleType("vllm")
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_rocm=lambda: False, is_cuda=lambda: True)
    triton_utils = types.ModuleType("vllm.triton_utils")
    triton_utils.triton, triton_utils.tl = triton, tl
    stubs = {"vllm": vllm, "vllm.platforms": platforms, "vllm.triton_utils": triton_utils}
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        spec = importlib.util.spec_from_file_location("vllm_triton_decode_attention", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module.decode_attention_fwd


def vllm_way(decode_attention_fwd, case, num_kv_splits: int):
    """One call of vLLM's Triton decode (its own split count, its own reduce) on the lab's cache:
    the same ``[num_blocks, block_size, num_kv_heads, head_dim]`` layout, the same block tables."""
    import torch

    q = case.q
    batch, num_heads, head_dim = q.shape
    out = torch.empty_like(q)
    logits = torch.empty((batch, num_heads, num_kv_splits, head_dim + 1), dtype=torch.float32, device=q.device)
    extra = {}
    if "lse" in inspect.signature(decode_attention_fwd).parameters:  # later vLLM versions also return the LSE
        extra["lse"] = torch.empty((batch, num_heads), dtype=torch.float32, device=q.device)
    args = dict(q=q, k_buffer=case.k_cache, v_buffer=case.v_cache, o=out, req_to_token=case.block_tables,
                b_seq_len=case.seq_lens, attn_logits=logits, num_kv_splits=num_kv_splits,
                sm_scale=1.0 / math.sqrt(head_dim), page_size=case.k_cache.shape[1], **extra)

    def run():
        decode_attention_fwd(**args)
        return out

    return run


def load_flashinfer():
    """FlashInfer (``pip install flashinfer-python``, the ``flashinfer`` extra), or None when it is
    not installed or does not import: the column is then left out."""
    try:
        import flashinfer
    except Exception as err:  # not installed, or built for another torch/CUDA
        print(f"(FlashInfer not available: {type(err).__name__}: {str(err).splitlines()[0][:120]})")
        return None
    return flashinfer


def flashinfer_pages(block_tables, seq_lens, page_size: int):
    """The lab's block tables in FlashInfer's CSR form: ``(indptr, indices, last_page_len)``, int32 on
    the tables' device. Sequence ``b``'s pages are ``indices[indptr[b]:indptr[b + 1]]``, the first
    ``ceil(seq_lens[b] / page_size)`` entries of its table row, and ``last_page_len[b]`` of the last
    page's slots are valid (from 1 to ``page_size``; FlashInfer counts a sequence of 0 tokens as one
    page, which bench.py's shapes never have)."""
    import torch

    lens = [int(n) for n in seq_lens.tolist()]
    pages = [max(1, math.ceil(n / page_size)) for n in lens]
    device = block_tables.device
    indptr = torch.tensor([0, *itertools.accumulate(pages)], dtype=torch.int32, device=device)
    indices = torch.cat([block_tables[b, :n] for b, n in enumerate(pages)]).to(torch.int32)
    last = [n - (p - 1) * page_size for n, p in zip(lens, pages, strict=True)]
    return indptr, indices, torch.tensor(last, dtype=torch.int32, device=device)


def check_flashinfer_pages(case, shape: Shape) -> None:
    """--dry-run's check of :func:`flashinfer_pages`: K gathered through the CSR lists, page by page,
    is the dense copy the SDPA columns read, for every sequence of the shape."""
    import torch

    indptr, indices, last = flashinfer_pages(case.block_tables, case.seq_lens, BLOCK_SIZE)
    for b, n in enumerate(shape.seq_lens):
        pages = indices[indptr[b] : indptr[b + 1]].long()
        k = case.k_cache[pages].flatten(0, 1)[: (len(pages) - 1) * BLOCK_SIZE + int(last[b])]
        dense = cases.dense_kv(case.k_cache, case.block_tables[b : b + 1], n)[0].transpose(0, 1)
        if not torch.equal(k, dense):
            raise AssertionError(f"{shape.name}: FlashInfer's page lists do not give sequence {b}'s keys")


def flashinfer_way(flashinfer, case, tensor_cores: bool):
    """One call of FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper`` on the lab's own cache: K and V
    are already FlashInfer's "NHD" pages (``[num_pages, page_size, num_kv_heads, head_dim]``), so only
    the block tables change form, into its CSR lists (each sequence's pages back to back, and the
    number of valid slots in its last page). Planned once, outside any timing, with the buffers fixed
    so that the call can be captured in a CUDA graph, as vLLM runs it. ``tensor_cores``: FlashInfer's
    decode through its prefill kernel (the query heads of a group as the rows of a matrix product),
    the choice vLLM makes for grouped-query attention; otherwise its CUDA-core decode kernel."""
    import torch

    q = case.q
    batch, num_heads, head_dim = q.shape
    _, page_size, num_kv_heads, _ = case.k_cache.shape
    indptr, indices, last_page_len = flashinfer_pages(case.block_tables, case.seq_lens, page_size)
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device=q.device)
    wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
        workspace, "NHD", use_cuda_graph=True, use_tensor_cores=tensor_cores, paged_kv_indptr_buffer=indptr,
        paged_kv_indices_buffer=indices, paged_kv_last_page_len_buffer=last_page_len)
    wrapper.plan(indptr, indices, last_page_len, num_heads, num_kv_heads, head_dim, page_size,
                 q_data_type=q.dtype, kv_data_type=case.k_cache.dtype, sm_scale=1.0 / math.sqrt(head_dim))
    out = torch.empty_like(q)

    def run():
        wrapper.run(q, (case.k_cache, case.v_cache), out=out)
        return out

    return run


# --------------------------------------------------------------------------- measuring


def wall_time_us(fn) -> float:
    """--dry-run's stand-in for the GPU timers: the median wall time of a few calls."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e6 * sorted(times)[1]


def _why(err: Exception) -> str:
    """An exception as a table's note: its class and first line, less a library's source location
    (FlashInfer's errors read "Error in function 'f' at <its build folder>/file.cu:N: what went wrong")."""
    first = re.sub(r"^Error in function .*? at \S+:\d+: ", "", (str(err).splitlines() or [""])[0])
    return f"{type(err).__name__}: {first[:100]}"


def measure(shape: Shape, lab, hopper, old_kernel, vllm, vllm_splits, flashinfer, dry: bool) -> dict:
    import torch

    device, head_dim = ("cpu", DRY_HEAD_DIM) if dry else ("cuda", HEAD_DIM)
    time_call = wall_time_us if dry else bench.time_us
    time_graph = wall_time_us if dry else bench.graph_time_us
    case = cases.decode_case(shape.seq_lens, num_heads=shape.num_heads, num_kv_heads=shape.num_kv_heads,
                             head_dim=head_dim, block_size=BLOCK_SIZE, dtype=torch.float16, device=device)
    row = {"shape": shape, "bytes": bench.kv_bytes(shape.seq_lens, shape.num_kv_heads, head_dim, 2), "call": {},
           "graph": {}, "diff": {}, "note": {}}
    groups = dense_groups(case, shape)
    if dry:
        check_flashinfer_pages(case, shape)  # the FlashInfer column's page lists, checked without FlashInfer
    reference = assemble(sdpa_way(groups)(), groups, case.q)  # SDPA, default backend: the sanity check

    from torch.nn.attention import SDPBackend

    ways = {
        "lab": lambda: lab.paged_decode(case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens),
        "cuDNN SDPA": sdpa_way(groups, SDPBackend.CUDNN_ATTENTION),
        "SDPA": sdpa_way(groups),
        "gather+SDPA": gather_sdpa_way(case, shape),
    }
    if hopper is not None and hopper.uses_tma(case.q, case.k_cache, case.v_cache):
        ways["Hopper TMA"] = lambda: hopper.paged_decode(case.q, case.k_cache, case.v_cache, case.block_tables,
                                                         case.seq_lens)
    if vllm is not None:
        for splits in vllm_splits:
            ways[f"vLLM Triton ({splits} splits)"] = vllm_way(vllm, case, splits)
    if flashinfer is not None:
        for kind, tensor_cores in FLASHINFER_KINDS.items():
            ways[f"FlashInfer ({kind})"] = (flashinfer_way, flashinfer, case, tensor_cores)
    for name, fn in ways.items():
        try:
            if isinstance(fn, tuple):  # built here, so that a failure to plan is this column's note
                fn = fn[0](*fn[1:])
            out = fn()
            out = out if isinstance(out, torch.Tensor) else assemble(out, groups, case.q)
            row["diff"][name] = (out.float() - reference.float()).abs().max().item()
            row["call"][name] = time_call(fn)
            row["graph"][name] = time_graph(fn)
        except Exception as err:  # a backend this GPU or torch lacks: the column says so, the rest runs
            row["note"][name] = _why(err)
    if old_kernel is not None and shape.batch == 1 and shape.seq_lens[0] <= OLD_KERNEL_MAX_TOKENS:
        args = case.one(0)
        try:
            row["diff"]["lab 02-04"] = (old_kernel(*args).float() - reference[0].float()).abs().max().item()
            row["call"]["lab 02-04"] = time_call(lambda: old_kernel(*args))
        except Exception as err:
            row["note"]["lab 02-04"] = _why(err)
    for family in ("vLLM Triton", "FlashInfer"):  # each family's fastest variant under graphs is its column
        best = min((n for n in row["graph"] if n.startswith(family + " (")), key=row["graph"].get, default=None)
        if best:
            for mode in ("call", "graph"):
                row[mode][family] = row[mode][best]
            row["note"][family] = best
    return row


# --------------------------------------------------------------------------- the table and the plot


def _pct(nbytes: int, us: float | None, bandwidth: float) -> str:
    return "-" if us is None else f"{100 * nbytes / (us * 1e-6) / bandwidth:.0f}%"


def _us(us: float | None) -> str:
    return "-" if us is None else f"{us:.1f}"


def _ratio(num: float | None, den: float | None) -> str:
    return "-" if num is None or den is None else f"{num / den:.2f}x"


def best_sdpa(times: dict) -> float | None:
    """The faster of the two dense SDPA timings (either may be missing)."""
    found = [times[k] for k in ("cuDNN SDPA", "SDPA") if k in times]
    return min(found) if found else None


def table(rows, read_bw: float, copy_bw: float) -> str:
    """One row per shape: both timing modes, the roofline fractions (graph mode), the dense
    baselines, and this lab's speed relative to cuDNN SDPA (> 1: faster)."""
    headers = ["shape", "KV MiB", "lab µs call", "lab µs graph", "% read", "% copy", "cuDNN SDPA µs call",
               "cuDNN SDPA µs graph", "SDPA µs graph", "gather+SDPA µs graph", "lab vs cuDNN (graph)",
               "lab vs best SDPA (graph)", "lab vs cuDNN (call)", "lab 02-04 µs call"]
    hopper = any("Hopper TMA" in r["graph"] for r in rows)
    if hopper:
        headers += ["Hopper TMA µs graph", "Hopper TMA % read", "Hopper TMA vs cuDNN (graph)"]
    families = [f for f in ("FlashInfer", "vLLM Triton") if any(f in r["graph"] for r in rows)]
    for family in families:
        headers.append(f"{family} µs graph")
        if family == "FlashInfer":
            headers += ["FlashInfer % read", "lab vs FlashInfer (graph)"]
    body = []
    for r in rows:
        n, call, graph = r["bytes"], r["call"], r["graph"]
        lab = graph.get("lab")
        line = [
            r["shape"].name + (" *" if r["shape"].starred else ""), f"{n / 2**20:.0f}",
            _us(call.get("lab")), _us(lab), _pct(n, lab, read_bw), _pct(n, lab, copy_bw),
            _us(call.get("cuDNN SDPA")), _us(graph.get("cuDNN SDPA")), _us(graph.get("SDPA")),
            _us(graph.get("gather+SDPA")), _ratio(graph.get("cuDNN SDPA"), lab), _ratio(best_sdpa(graph), lab),
            _ratio(call.get("cuDNN SDPA"), call.get("lab")), _us(call.get("lab 02-04")),
        ]
        if hopper:
            tma = graph.get("Hopper TMA")
            line += [_us(tma), _pct(n, tma, read_bw), _ratio(graph.get("cuDNN SDPA"), tma)]
        for family in families:
            us = graph.get(family)
            line.append(_us(us) + (f" ({r['note'][family].split('(')[1][:-1]})" if family in r["note"] else ""))
            if family == "FlashInfer":
                line += [_pct(n, us, read_bw), _ratio(us, lab)]
        body.append(line)
    return bench.markdown_table(headers, body)


def notes(rows) -> str:
    lines = []
    for r in rows:
        for name, note in r["note"].items():
            if name not in ("vLLM Triton", "FlashInfer"):
                lines.append(f"- {r['shape'].name}, {name}: not measured ({note})")
        for name, diff in r["diff"].items():
            if not diff <= 2e-2:
                lines.append(f"- {r['shape'].name}, {name}: differs from SDPA by {diff:.3g} (expected < 2e-2)")
    return "\n".join(lines)


# The plot's series: (results.md column of the CUDA-graph time, label, colour name in labkit.figures.COLORS).
PLOT_SERIES = (("lab µs graph", "this lab (paged)", "valid"),
               ("Hopper TMA µs graph", "going further: Hopper TMA", "violet"),
               ("cuDNN SDPA µs graph", "cuDNN SDPA (dense copy)", "ink"),
               ("SDPA µs graph", "SDPA, default backend (dense copy)", "muted"),
               ("gather+SDPA µs graph", "gather + SDPA", "poison"),
               ("vLLM Triton µs graph", "vLLM Triton decode", "accent"),
               ("FlashInfer µs graph", "FlashInfer paged decode", "query"))
# (marker, size, filled, drawn above): this lab on top; cuDNN's dense baseline hollow, and SDPA's
# default backend (often cuDNN itself, on the same spot) a cross drawn inside it, so that both show.
PLOT_MARKERS = (("o", 42, True, 4), ("s", 34, True, 4), ("D", 46, False, 3), ("x", 30, True, 5), ("v", 40, True, 3),
                ("^", 40, True, 3), ("P", 44, True, 5))


def plot(results: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the table of ``results`` (a results.md this script wrote): each
    way's CUDA-graph time as a fraction of the read bandwidth, per shape. The run and its plot
    cannot disagree, and the plot can be redrawn anywhere (``--plot-from``)."""
    import re

    from labkit import figures

    text = results.read_text(encoding="utf-8")
    read_bw = float(re.search(r"Read bandwidth[^:]*: ([0-9.]+) TB/s", text).group(1)) * 1e12
    copy_bw = float(re.search(r"copy bandwidth[^:]*: ([0-9.]+) TB/s", text).group(1)) * 1e12
    device = text.split("\n\n")[1].split(",")[0]
    rows = figures.results_table(results, "shape")
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(figures.WIDTH, 0.36 * len(rows) + 2.3), layout="constrained")
    ys = list(range(len(rows)))[::-1]
    # A --dry-run's tiny shapes round to 0 MiB and its "bandwidths" to 0 TB/s: its plot shows times.
    roofline = read_bw > 0 and all(figures.number(r["KV MiB"]) for r in rows)

    def value(r, column):
        us = figures.number(r[column])
        return 100 * figures.number(r["KV MiB"]) * 2**20 / (us * 1e-6) / read_bw if roofline else us

    for (column, label, color), (marker, size, filled, z) in zip(PLOT_SERIES, PLOT_MARKERS, strict=True):
        points = [(value(r, column), y) for r, y in zip(rows, ys, strict=True)
                  if column in r and figures.number(r[column])]
        if points:
            c = figures.COLORS[color]
            style = {"color": c} if filled else {"facecolors": "none", "edgecolors": c}
            ax.scatter([x for x, _ in points], [y for _, y in points], s=size, marker=marker, label=label, zorder=z,
                       linewidths=1.3, **style)
    ax.set_yticks(ys, [r["shape"] for r in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.grid(axis="x", alpha=0.6)
    ax.set_axisbelow(True)
    if roofline:
        ax.axvline(100, color=figures.COLORS["ink"], lw=0.9, ls="--")
        ax.axvline(100 * copy_bw / read_bw, color=figures.COLORS["ink"], lw=0.9, ls=":")
        ax.set_xlim(0, 105)
        ax.set_xlabel(f"% of the read bandwidth ({read_bw / 1e12:.2f} TB/s, dashed; copy {copy_bw / 1e12:.2f} "
                      "TB/s, dotted):\nK+V bytes of the valid tokens / time, CUDA-graph replay")
    else:
        ax.set_xscale("log")
        figures.plain_log_axis(ax.xaxis)
        ax.set_xlabel("µs per step, wall clock\n(a --dry-run checks the script: its numbers measure nothing)")
    fig.legend(loc="outside lower center", ncol=2, frameon=False)
    fig.suptitle(f"Paged decode on {device}; * = the shapes of the bar", x=0.0, ha="left", fontsize=10)
    return figures.save(fig, path)


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    parser = bench.arguments(__doc__, "folder for results.md and results.svg (nothing written without it)")
    parser.add_argument("--shapes", nargs="+", metavar="NAME", help="only the shapes whose name starts with these")
    parser.add_argument("--vllm-triton", type=Path, metavar="FILE",
                        help="vLLM's vllm/v1/attention/ops/triton_decode_attention.py (v0.22.1), from your checkout")
    parser.add_argument("--vllm-splits", type=int, nargs="+", default=[4, 16, 64],
                        help="num_kv_splits values to try for vLLM's kernel (vLLM's Triton MLA backend passes "
                             "next_power_of_2(max_seq_len // 512), at most twice the SMs; the fastest is reported)")
    parser.add_argument("--levers", type=Path, metavar="FILE",
                        help="tune.py's levers.md, appended to results.md (default: DIR/levers.md when it exists)")
    parser.add_argument("--no-flashinfer", action="store_true", help="leave FlashInfer's column out even if installed")
    parser.add_argument("--dry-run", action="store_true", help="tiny shapes, wall-clock timers: checks the script")
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0
    dry = args.dry_run
    if BACKEND != "cuda" and not dry:
        print("bench.py measures GPU memory bandwidth and needs a CUDA GPU; this machine has none "
              f"({triton_env.describe()}). The tests run here: pytest {HERE.relative_to(HERE.parents[2])}; "
              "bench.py --dry-run checks this script.")
        return 2

    import torch

    lab = load_impl(HERE, "solution")
    further = HERE / "going-further" / "hopper_decode.py"
    hopper = load_impl(HERE, "going-further/hopper_decode") if further.is_file() else None
    try:
        old_kernel = load_reference("02-04").paged_attention_triton
    except Exception as err:  # absent or broken: the column is left out, the rest runs
        print(f"(lab 02-04's kernel not available: {type(err).__name__}: {err})")
        old_kernel = None
    vllm = load_vllm_triton(args.vllm_triton) if args.vllm_triton else None
    flashinfer = None if dry or args.no_flashinfer else load_flashinfer()
    shapes = DRY_SHAPES if dry else SHAPES
    if args.shapes:
        shapes = [s for s in shapes if any(s.name.startswith(p) for p in args.shapes)]

    if dry:
        device, read_bw, copy_bw, tflops = "CPU (--dry-run: Triton's interpreter, wall clock)", 1e9, 1e9, 1.0
    else:
        device = bench.device_line()
        read_bw, copy_bw, tflops = bench.read_bandwidth(), bench.copy_bandwidth(), bench.matmul_tflops()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"{device}, {date}. Read bandwidth (1 GiB streamed): {read_bw / 1e12:.2f} TB/s; copy bandwidth "
              f"(1 GiB, read + write): {copy_bw / 1e12:.2f} TB/s; fp16 matrix products: {tflops:.0f} TFLOP/s, so "
              f"a ridge point of {tflops * 1e12 / read_bw:.0f} FLOP/byte.")
    print(header, flush=True)
    rows = []
    for shape in shapes:
        r = measure(shape, lab, hopper, old_kernel, vllm, args.vllm_splits, flashinfer, dry)
        rows.append(r)
        lab_g, sdpa_g = r["graph"].get("lab"), r["graph"].get("cuDNN SDPA")
        print(f"{shape.name:28s} lab {_us(r['call'].get('lab')):>8} µs call, {_us(lab_g):>8} µs graph "
              f"({_pct(r['bytes'], lab_g, read_bw)} of read); cuDNN SDPA {_us(sdpa_g):>8} µs graph; "
              f"lab vs cuDNN {_ratio(sdpa_g, lab_g)}, vs best SDPA {_ratio(best_sdpa(r['graph']), lab_g)}"
              + (f"; Hopper TMA {_us(r['graph']['Hopper TMA'])} µs graph "
                 f"({_ratio(sdpa_g, r['graph']['Hopper TMA'])} cuDNN)" if "Hopper TMA" in r["graph"] else "")
              + (f"; FlashInfer {_us(r['graph']['FlashInfer'])} µs graph ({r['note']['FlashInfer'][12:-1]}; lab "
                 f"{_ratio(r['graph']['FlashInfer'], lab_g)})" if "FlashInfer" in r["graph"] else ""),
              flush=True)
        if not dry:
            torch.cuda.empty_cache()  # the shape's caches are gone with measure()'s frame
    text = table(rows, read_bw, copy_bw)
    extra = notes(rows)
    print(text + ("\n\n" + extra if extra else ""))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        levers = args.levers or args.out / "levers.md"
        md = (f"# Lab 04-06 results\n\n{header}\n\nWritten by `bench.py --out`. Times are medians with the L2 cache "
              "flushed before each run: *call* issues each call from Python (`do_bench`, host launch cost "
              "included when the GPU waits for it), *graph* replays it from a CUDA graph. % read and % copy: K+V "
              "bytes of the valid tokens / graph time, over the two bandwidths above. lab vs cuDNN: cuDNN SDPA's "
              "time / this lab's (above 1.00x this lab is faster); lab vs best SDPA: the same against the faster "
              "of cuDNN and torch's default backend. * marks the shapes the kernel was tuned for (its target: "
              "at least 1.00x cuDNN SDPA under CUDA graphs).\n\n"
              f"{text}\n" + (f"\n{extra}\n" if extra else "")
              + (f"\n{levers.read_text()}" if levers.is_file() else ""))
        (args.out / "results.md").write_text(md)
        plot(args.out / "results.md", args.out / "results.svg")
        print(f"wrote {args.out / 'results.md'} and {args.out / 'results.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
