"""Lab 04-07 benchmark: one decode step with the KV cache split over 1, 2 and 4 GPUs (NCCL).

    python phase-04-attention-backends/labs/lab-07-context-parallel-decode/bench.py
    python .../bench.py --out DIR                  # also write DIR/results.md and DIR/results.svg
    python .../bench.py --plot-from DIR/results.md # redraw results.svg from that table, on any machine
    python .../bench.py --world-sizes 1,2 --contexts 131072,1048576

Batch 1, 32 query heads on 8 KV heads of 128, float16, blocks of 16 tokens, block-interleaved over
the GPUs; contexts of 128k to 4M tokens. For every GPU count W the machine has (1, 2 and 4 by
default), W processes (one per GPU, started like the tests' ranks, NVLink multicast off in each)
each hold 1/W of the tokens in their own pool, and time, per decode step:

- their summaries over their shard: lab 04-06's ``split_summaries`` (its split count, the splits
  merged on the GPU), or a short torch implementation when lab 04-06 has no ``split_summaries``;
- this lab's ``combine_all_reduce`` and ``combine_all_gather`` on those float32 summaries;
- a whole step (summaries then combine);

and, in the W = 1 run, lab 04-06's ``paged_decode`` over the whole context: the single-GPU kernel.
Each time is the median of ``--iters`` runs (CUDA events, L2 flushed, the ranks released together by
a barrier); a step's time is its slowest rank's. Every one of them is also timed replayed from a CUDA
graph (NCCL's collectives captured with the kernels: the whole step, every rank's attention and the
combine, is one graph per rank), as an engine runs decode: per call, Python's launches and NCCL's host
work are most of a small step's time. Bytes are
``combine_bytes`` (ring collectives, float32 summaries) next to the KV bytes each GPU reads. Before
timing, every group checks its output on a 4,133-token sequence against float64 attention. The
whole run stays within ``--budget`` seconds (default 420): a group that would overrun it is stopped
and reported as failed. The read bandwidth of one GPU is measured in the same run, as the roofline
of the single-GPU kernel. ``--out`` writes results.md, then draws results.svg from it;
``--plot-from DIR/results.md`` redraws the plot (results.svg) alone, without a GPU.
"""

from __future__ import annotations

import os

# NVLink multicast stays off on the shared GPU machines: set before torch and NCCL start, and
# inherited by every rank this script starts.
os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"})

import datetime  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository: labkit
sys.path.insert(0, str(HERE))  # _ranks, the launcher (importable by name: spawned ranks find it)

import _ranks  # noqa: E402
import numpy as np  # noqa: E402

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
CONTEXTS = (131072, 262144, 524288, 1048576, 2097152, 4194304)
CHECK_TOKENS = 4133  # the correctness check's sequence: not a whole number of blocks
CHECK_ATOL = 1e-2  # float16 K/V and a float16 P.V product in lab 04-06's kernel (its own tests' bound)
FIELDS = ("tokens", "single_us", "rank_us", "all_reduce_us", "all_gather_us", "step_all_reduce_us",
          "step_all_gather_us", "single_graph_us", "step_all_reduce_graph_us", "step_all_gather_graph_us",
          "rank_graph_us", "all_reduce_graph_us", "all_gather_graph_us")
# check error (all-reduce), check error (all-gather), 1.0 if split_summaries was used, read bandwidth (B/s)
HEADER = 4


# ---------------------------------------------------------------------------------------------
# One rank's summaries on the GPU.


def rank_summaries_gpu(ref, q, k_cache, v_cache, table, lens, num_tokens, use_split_summaries):
    """float32 (m, denom, acc) of this rank's tokens, [1, NUM_HEADS(, HEAD_DIM)]."""
    if use_split_summaries:
        return _from_split_summaries(ref, q, k_cache, v_cache, table, lens)
    return _torch_summaries(q, k_cache, v_cache, table, num_tokens)


def _from_split_summaries(ref, q, k_cache, v_cache, table, lens):
    """Lab 04-06's per-split summaries, merged over the splits that hold tokens (lab 04-04's merge)."""
    import torch

    capacity = table.shape[1] * BLOCK_SIZE
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 132
    if hasattr(ref, "choose_num_splits"):
        splits = ref.choose_num_splits(q.shape[0], k_cache.shape[2], capacity, sms)
    else:
        splits = max(1, min(4 * sms // NUM_KV_HEADS, capacity // 1024))
    m, denom, acc, partition = ref.split_summaries(q, k_cache, v_cache, table, lens, splits)
    # Splits past the rank's last token were not written and may hold anything, NaN included: replace
    # them (a zero weight would not do: 0 * NaN is NaN).
    holds = torch.arange(m.shape[-1], device=m.device) < ((lens.long() + partition - 1) // partition)[:, None, None]
    m = torch.where(holds, m, -math.inf)
    denom = torch.where(holds, denom, 0.0)
    acc = torch.where(holds.unsqueeze(-1), acc, 0.0)
    top = m.amax(dim=-1)
    weight = torch.exp(m - torch.where(torch.isfinite(top), top, 0.0).unsqueeze(-1))
    return top, (weight * denom).sum(dim=-1), (weight.unsqueeze(-1) * acc).sum(dim=-2)


def _torch_summaries(q, k_cache, v_cache, table, num_tokens, chunk_blocks=2048):
    """The same summaries in plain torch, chunk by chunk of the table (batch 1)."""
    import torch

    group = NUM_HEADS // NUM_KV_HEADS
    qg = q[0].float().view(NUM_KV_HEADS, group, HEAD_DIM)
    m = torch.full((NUM_KV_HEADS, group), -math.inf, device=q.device)
    denom = torch.zeros_like(m)
    acc = torch.zeros((NUM_KV_HEADS, group, HEAD_DIM), device=q.device)
    for start in range(0, table.shape[1], chunk_blocks):
        blocks = table[0, start:start + chunk_blocks].long()
        n = min(num_tokens - start * BLOCK_SIZE, blocks.numel() * BLOCK_SIZE)
        if n <= 0:
            break
        k = k_cache[blocks].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:n].float()
        v = v_cache[blocks].reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:n].float()
        scores = torch.einsum("kgd,nkd->kgn", qg, k) / math.sqrt(HEAD_DIM)
        m_new = torch.maximum(m, scores.amax(dim=-1))
        p = torch.exp(scores - m_new.unsqueeze(-1))
        correction = torch.exp(m - m_new)
        denom = denom * correction + p.sum(dim=-1)
        acc = acc * correction.unsqueeze(-1) + torch.einsum("kgn,nkd->kgd", p, v)
        m = m_new
    return m.reshape(1, NUM_HEADS), denom.reshape(1, NUM_HEADS), acc.reshape(1, NUM_HEADS, HEAD_DIM)


# ---------------------------------------------------------------------------------------------
# One rank of the benchmark.


def place(torch, tokens_k, tokens_v, gen):
    """This rank's tokens (in local order) in a paged cache of shuffled blocks: (k, v, table [1, n])."""
    n = tokens_k.shape[0]
    need = max(1, -(-n // BLOCK_SIZE))
    perm = torch.randperm(need, generator=gen, device=tokens_k.device)
    caches = []
    for tokens in (tokens_k, tokens_v):
        padded = torch.zeros((need * BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM), dtype=tokens.dtype, device=tokens.device)
        padded[:n] = tokens
        cache = torch.empty((need, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM), dtype=tokens.dtype, device=tokens.device)
        cache[perm] = padded.view(need, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)  # logical block j -> physical perm[j]
        caches.append(cache)
    return caches[0], caches[1], perm.to(torch.int32).unsqueeze(0)


def timed_us(torch, dist, fn, iters, flush, warmup=5) -> float:
    """Median microseconds of ``fn()`` on this GPU; every rank calls it with the same ``iters``
    (collectives inside), released together by a barrier before each run."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        flush.zero_()  # evict the L2 cache, as triton's do_bench does
        dist.barrier(device_ids=[torch.cuda.current_device()])
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(1e3 * start.elapsed_time(end))
    return float(np.median(times))


def graph_us(torch, fn, iters) -> float:
    """Median microseconds of ``fn()`` replayed from a CUDA graph (``labkit.bench.graph_time_us``), or
    NaN with the reason printed when it cannot be captured (every rank captures the same calls)."""
    import labkit

    try:
        return labkit.bench.graph_time_us(fn, reps=iters)
    except RuntimeError as err:
        print(f"CUDA-graph capture failed ({str(err).splitlines()[0]}): graph times left out", flush=True)
        return math.nan


def measure_context(torch, dist, lab, ref, q, rank, world_size, tokens, use_split, iters, flush) -> list[float]:
    """One context on this rank: a paged cache of ``tokens`` random tokens in shuffled blocks (drawn in
    place: at 4M tokens a second copy would not fit beside it), then every timing of FIELDS."""
    gen = torch.Generator(device=q.device).manual_seed(1000 + rank)
    need = max(1, -(-tokens // BLOCK_SIZE))
    shape = (need, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_cache = torch.randn(shape, generator=gen, device=q.device, dtype=torch.float16)
    v_cache = torch.randn(shape, generator=gen, device=q.device, dtype=torch.float16)
    table = torch.randperm(need, generator=gen, device=q.device).to(torch.int32).unsqueeze(0)
    lens = torch.tensor([tokens], dtype=torch.int32, device=q.device)

    def summarize():
        return rank_summaries_gpu(ref, q, k_cache, v_cache, table, lens, tokens, use_split)

    m, denom, acc = summarize()
    single = single_graph = math.nan
    if world_size == 1:
        single = timed_us(torch, dist, lambda: ref.paged_decode(q, k_cache, v_cache, table, lens), iters, flush)
        single_graph = graph_us(torch, lambda: ref.paged_decode(q, k_cache, v_cache, table, lens), iters)
    dist.barrier(device_ids=[torch.cuda.current_device()])
    return [
        tokens, single,
        timed_us(torch, dist, summarize, iters, flush),
        timed_us(torch, dist, lambda: lab.combine_all_reduce(m, denom, acc), iters, flush),
        timed_us(torch, dist, lambda: lab.combine_all_gather(m, denom, acc), iters, flush),
        timed_us(torch, dist, lambda: lab.combine_all_reduce(*summarize()), iters, flush),
        timed_us(torch, dist, lambda: lab.combine_all_gather(*summarize()), iters, flush),
        single_graph,
        graph_us(torch, lambda: lab.combine_all_reduce(*summarize()), iters),
        graph_us(torch, lambda: lab.combine_all_gather(*summarize()), iters),
        graph_us(torch, summarize, iters),
        graph_us(torch, lambda: lab.combine_all_reduce(m, denom, acc), iters),
        graph_us(torch, lambda: lab.combine_all_gather(m, denom, acc), iters),
    ]


def bench_rank(rank: int, world_size: int, contexts, iters: int) -> np.ndarray:
    import torch
    import torch.distributed as dist

    import labkit

    lab = labkit.load_impl(HERE, "solution")
    ref = labkit.load_reference("04-06")
    device = torch.device("cuda", torch.cuda.current_device())
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=device)
    use_split = hasattr(ref, "split_summaries")

    # The check: a small sequence whose logical K/V every rank draws alike; each keeps its stripes.
    gen = torch.Generator(device=device).manual_seed(1)
    shape = (CHECK_TOKENS, NUM_KV_HEADS, HEAD_DIM)
    k_all = torch.randn(shape, generator=gen, device=device, dtype=torch.float16)
    v_all = torch.randn(shape, generator=gen, device=device, dtype=torch.float16)
    q = torch.randn((1, NUM_HEADS, HEAD_DIM), generator=gen, device=device, dtype=torch.float16)
    owner, _ = lab.token_owner(np.arange(CHECK_TOKENS), world_size, BLOCK_SIZE)
    mine = torch.from_numpy(np.flatnonzero(owner == rank)).to(device)  # ascending: local order
    k_cache, v_cache, table = place(torch, k_all[mine], v_all[mine], torch.Generator(device=device).manual_seed(rank))
    lens = torch.tensor([mine.numel()], dtype=torch.int32, device=device)
    if use_split:
        try:
            rank_summaries_gpu(ref, q, k_cache, v_cache, table, lens, mine.numel(), True)
        except (TypeError, ValueError, AttributeError) as err:  # lab 04-06's API moved on: say so, fall back
            print(f"rank {rank}: lab 04-06's split_summaries failed ({err}); using the torch summaries", flush=True)
            use_split = False
    summaries = rank_summaries_gpu(ref, q, k_cache, v_cache, table, lens, mine.numel(), use_split)
    outs = [lab.combine_all_reduce(*summaries), lab.combine_all_gather(*summaries)]
    errors = [0.0, 0.0]
    if rank == 0:
        group = NUM_HEADS // NUM_KV_HEADS
        k64 = k_all.double().repeat_interleave(group, dim=1)  # [n, NUM_HEADS, HEAD_DIM]
        scores = torch.einsum("hd,nhd->hn", q[0].double(), k64) / math.sqrt(HEAD_DIM)
        truth = torch.einsum("hn,nhd->hd", torch.softmax(scores, dim=-1),
                             v_all.double().repeat_interleave(group, dim=1))
        errors = [float((out[0].double() - truth).abs().max()) for out in outs]
        if max(errors) > CHECK_ATOL:
            raise RuntimeError(f"{world_size} GPUs: the combined output is off by {max(errors):.2e} "
                               f"(> {CHECK_ATOL}) on the {CHECK_TOKENS}-token check")
    del k_all, v_all, k_cache, v_cache
    bandwidth = labkit.bench.read_bandwidth() if rank == 0 else math.nan

    rows = []
    for context in contexts:
        tokens = int(lab.local_seq_lens(np.array([context]), world_size, BLOCK_SIZE)[rank, 0])
        rows.append(measure_context(torch, dist, lab, ref, q, rank, world_size, tokens, use_split, iters, flush))
        torch.cuda.empty_cache()
    return np.concatenate([[*errors, float(use_split), bandwidth], np.array(rows, dtype=np.float64).ravel()])


# ---------------------------------------------------------------------------------------------
# The parent: one group per GPU count, then the table and the plot.


def run_group(world_size: int, contexts, iters: int, timeout: float):
    """``(header, rows)`` of a group of ``world_size`` GPUs: rows [contexts, FIELDS], each time the
    slowest rank's; or None when the group failed (the reason is printed)."""
    try:
        results = _ranks.launch(bench_rank, world_size, args=(tuple(contexts), iters), backend="nccl",
                                timeout=timeout)
    except _ranks.RanksFailed as err:
        print(f"{world_size} GPU(s): FAILED\n{err}", flush=True)
        return None
    per_rank = np.stack([r[HEADER:].reshape(len(contexts), len(FIELDS)) for r in results])
    rows = per_rank.max(axis=0)  # the slowest rank sets the step (tokens: the largest shard)
    single = [FIELDS.index("single_us"), FIELDS.index("single_graph_us")]
    rows[:, single] = per_rank[0][:, single]  # the single-GPU kernel ran on rank 0 only
    return results[0][:HEADER], rows


# ---------------------------------------------------------------------------------------------
# results.md: two tables (CUDA graphs, then per call), from which the plot is drawn.

GRAPH_TITLE = "Replayed from CUDA graphs (how an engine runs decode)"
CALL_TITLE = "Launched per call from Python"
GRAPH_HEADERS = ["context", "GPUs", "tokens per GPU", "KV read per GPU", "1 GPU: lab 04-06 kernel",
                 "1 GPU: read bandwidth", "per-rank summaries", "all-reduce combine", "all-gather combine",
                 "step, all-reduce", "step, all-gather", "speedup, all-reduce", "speedup, all-gather",
                 "bytes, all-reduce", "bytes, all-gather"]
CALL_HEADERS = ["context", "GPUs", "1 GPU: lab 04-06 kernel", "per-rank summaries", "all-reduce combine",
                "all-gather combine", "step, all-reduce", "step, all-gather", "speedup, all-gather"]


def tables(groups, contexts, bandwidth: float) -> str:
    """The two Markdown tables of results.md; times in microseconds."""
    import labkit

    lab = labkit.load_impl(HERE, "solution")
    col = {name: i for i, name in enumerate(FIELDS)}
    single = {c: groups[1][1][i] for i, c in enumerate(contexts)} if 1 in groups else {}
    graph_body, call_body = [], []
    for i, context in enumerate(contexts):
        one = single.get(context, np.full(len(FIELDS), math.nan))
        for world_size, (_, rows) in sorted(groups.items()):
            row = rows[i]
            kv = int(row[col["tokens"]]) * NUM_KV_HEADS * HEAD_DIM * 2 * 2
            one_kv = context * NUM_KV_HEADS * HEAD_DIM * 2 * 2
            kernel = one[col["single_graph_us"]]
            gbs = one_kv / (kernel * 1e-6) / 1e9 if world_size == 1 else math.nan
            ctx = f"{context // 1024}k"
            graph_body.append([
                ctx, world_size, f"{int(row[col['tokens']]):,}", f"{kv / 2**20:,.0f} MiB",
                _us(kernel), "-" if math.isnan(gbs) else f"{gbs:,.0f} GB/s ({gbs * 1e9 / bandwidth:.0%})",
                _us(row[col["rank_graph_us"]]), _us(row[col["all_reduce_graph_us"]]),
                _us(row[col["all_gather_graph_us"]]), _us(row[col["step_all_reduce_graph_us"]]),
                _us(row[col["step_all_gather_graph_us"]]), _ratio(kernel, row[col["step_all_reduce_graph_us"]]),
                _ratio(kernel, row[col["step_all_gather_graph_us"]]),
                f"{lab.combine_bytes('all_reduce', world_size, 1, NUM_HEADS, HEAD_DIM):,}",
                f"{lab.combine_bytes('all_gather', world_size, 1, NUM_HEADS, HEAD_DIM):,}"])
            call_body.append([
                ctx, world_size, _us(one[col["single_us"]]), _us(row[col["rank_us"]]),
                _us(row[col["all_reduce_us"]]), _us(row[col["all_gather_us"]]),
                _us(row[col["step_all_reduce_us"]]), _us(row[col["step_all_gather_us"]]),
                _ratio(one[col["single_us"]], row[col["step_all_gather_us"]])])
    return (f"### {GRAPH_TITLE}\n\n{labkit.bench.markdown_table(GRAPH_HEADERS, graph_body)}\n\n"
            f"### {CALL_TITLE}\n\n{labkit.bench.markdown_table(CALL_HEADERS, call_body)}\n")


def _us(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:,.1f}"


def _ratio(single: float, step: float) -> str:
    return "-" if math.isnan(single) or math.isnan(step) else f"{single / step:.2f}x"


def read_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The tables of a results.md, by their ``###`` title: a list of rows, each {header: cell}."""
    found, title, headers = {}, None, None
    for line in text.splitlines():
        if line.startswith("### "):
            title, headers = line[4:].strip(), None
        elif line.startswith("|") and title is not None:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if headers is None:
                headers = cells
            elif not set(line) <= set("|-: "):
                found.setdefault(title, []).append(dict(zip(headers, cells, strict=True)))
    return found


def _number(cell: str) -> float:
    """A cell's leading number ("1,431.0", "2.25x", "3,012 GB/s (97%)"), NaN for "-"."""
    head = cell.split()[0].rstrip("x").replace(",", "") if cell.strip() else "-"
    return math.nan if head == "-" else float(head)


def plot(results_md: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from results.md: above, time per decode step against the context, the
    single-GPU kernel and each group's step under CUDA graphs; below, the speedup of W GPUs over that
    kernel, under CUDA graphs and per call. The run and its plot cannot disagree, and the plot can be
    redrawn anywhere (``--plot-from``)."""
    from labkit import figures

    found = read_tables(results_md.read_text())
    graph, calls = found[GRAPH_TITLE], found.get(CALL_TITLE, [])
    contexts = list(dict.fromkeys(row["context"] for row in graph))
    x = [int(c.rstrip("k")) for c in contexts]
    sizes = sorted({int(row["GPUs"]) for row in graph})

    def series(rows, world_size, header):
        by_context = {row["context"]: _number(row[header]) for row in rows if int(row["GPUs"]) == world_size}
        return [by_context.get(c, math.nan) for c in contexts]

    plt = figures.pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(figures.WIDTH, 8.4), layout="constrained")
    ink = figures.COLORS["ink"]
    top.plot(x, series(graph, 1, "1 GPU: lab 04-06 kernel"), color=ink, marker="s", label="1 GPU: lab 04-06's kernel")
    for w, color in zip(sizes, figures.SERIES, strict=False):
        gpus = f"{w} GPU{'s' if w > 1 else ''}"
        top.plot(x, series(graph, w, "step, all-reduce"), color=color, marker="o", label=f"{gpus}: step, all-reduce")
        top.plot(x, series(graph, w, "step, all-gather"), color=color, marker="x", linestyle=":",
                 label=f"{gpus}: step, all-gather")
        if w > 1:
            bottom.plot(x, series(graph, w, "speedup, all-reduce"), color=color, marker="o",
                        label=f"{gpus}, all-reduce, CUDA graph")
            bottom.plot(x, series(calls, w, "speedup, all-gather"), color=color, marker=".", linestyle="--",
                        label=f"{gpus}, all-gather, per call")
            bottom.axhline(w, color=color, linewidth=0.8, linestyle=(0, (1, 3)))
    bottom.axhline(1.0, color=ink, linewidth=0.8)
    bottom.set_ylim(0, max(sizes) * 1.3)  # room for the legend above the ideal
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{v // 1024}M" if v >= 1024 else f"{v}k" for v in x])
        ax.grid(alpha=0.6)
    top.set_yscale("log")
    figures.plain_log_axis(top.yaxis)
    top.set_ylabel("µs per decode step, one layer,\nreplayed from a CUDA graph")
    top.legend(loc="upper left", frameon=False)
    bottom.set_xlabel(f"context (tokens), batch 1, {NUM_HEADS}/{NUM_KV_HEADS} heads of {HEAD_DIM}, fp16")
    bottom.set_ylabel("speedup over one GPU\n(dotted: the ideal, W)")
    bottom.legend(loc="upper left", frameon=False)
    return figures.save(fig, path)


def main(argv=None) -> int:
    from labkit import bench

    parser = bench.arguments(__doc__)
    parser.add_argument("--world-sizes", default="1,2,4", help="GPU counts to try (those the machine has)")
    parser.add_argument("--contexts", default=",".join(map(str, CONTEXTS)), help="tokens per sequence")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--budget", type=float, default=420.0, help="seconds for the whole run")
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0
    try:
        import torch
    except ImportError:
        print('bench.py needs torch with CUDA: pip install -e ".[torch,triton]"', file=sys.stderr)
        return 2
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus == 0 or not torch.distributed.is_nccl_available():
        print("bench.py times NCCL collectives between GPUs and needs at least one CUDA GPU; this machine has "
              f"none. The tests run here: pytest {HERE.relative_to(HERE.parents[2])}", file=sys.stderr)
        return 2
    contexts = [int(c) for c in args.contexts.split(",")]
    wanted = [int(w) for w in args.world_sizes.split(",")]
    sizes = [w for w in wanted if 1 <= w <= gpus]
    skipped = [w for w in wanted if w not in sizes]
    import labkit

    line = f"{labkit.bench.device_line()}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}"
    print(f"{line}; {gpus} GPU(s); groups of {sizes} GPU(s)"
          + (f" ({skipped} skipped: not enough GPUs)" if skipped else ""), flush=True)
    if sizes == [1]:
        print("one GPU only: this measures the per-rank work on the whole context and the single-GPU kernel, "
              "with combines over a group of one (no communication)", flush=True)
    groups = {}
    deadline = time.monotonic() + args.budget
    for world_size in sizes:
        left = deadline - time.monotonic()
        if left < 30:
            print(f"{world_size} GPU(s): skipped, the --budget of {args.budget:.0f} s is spent", flush=True)
            continue
        result = run_group(world_size, contexts, args.iters, left)
        if result is None:
            continue
        header, rows = result
        groups[world_size] = result
        path = "lab 04-06's split_summaries" if header[2] == 1.0 else "torch summaries (no split_summaries in 04-06)"
        print(f"{world_size} GPU(s): check max |diff| {max(header[:2]):.1e} vs float64; per-rank: {path}", flush=True)
        for context, row in zip(contexts, rows, strict=True):
            print(f"  {context // 1024:5d}k: step {row[6]:8.1f} us (all-gather), {row[5]:8.1f} us (all-reduce); "
                  f"per rank {row[2]:8.1f} us; combines {row[4]:6.1f} / {row[3]:6.1f} us"
                  + ("" if math.isnan(row[1]) else f"; 1-GPU kernel {row[1]:8.1f} us")
                  + f"; CUDA graph: step {row[9]:8.1f} / {row[8]:8.1f} us"
                  + ("" if math.isnan(row[7]) else f", 1-GPU kernel {row[7]:8.1f} us"), flush=True)
    if not groups:
        return 1
    bandwidth = next(iter(groups.values()))[0][3]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"# Lab 04-07 results\n\n{line}, {date}. Median of {args.iters} runs; one attention layer; "
            "times in microseconds, per call (launched from Python) and replayed from a CUDA graph (graph); "
            "bytes per decode step, all ranks together (ring collectives, float32 summaries); the read "
            f"bandwidth measured in the same run: {bandwidth / 1e9:,.0f} GB/s. A step's time is its slowest "
            "rank's; a speedup is lab 04-06's kernel on one GPU over the step on W.\n\n"
            f"{tables(groups, contexts, bandwidth)}")
    bench.write_results(args.out, text, plot)
    return 0 if len(groups) == len(sizes) else 1


if __name__ == "__main__":
    sys.exit(main())
