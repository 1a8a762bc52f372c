"""Lab 04-03 benchmark: the paged prefill kernel in TFLOP/s against dense causal SDPA (GPU only).

    python phase-04-attention-backends/labs/lab-03-causal-prefill-attention/bench.py --out DIR

For each shape (32 query / 8 KV heads, head_dim 128, blocks of 16 scattered over a shuffled
pool) and each dtype (float16, bfloat16) it times, in one process:

- this lab's ``paged_prefill`` on the paged cache;
- ``scaled_dot_product_attention`` with the FlashAttention-2 backend, then with the cuDNN
  backend, on a dense, contiguous copy of the same tokens (made before timing): what paging
  costs against the best dense kernels PyTorch ships;
- the gather + SDPA path: copy each sequence's K/V out of the paged cache through its block
  table, then dense SDPA (flash), both timed: what a backend without a paged kernel pays.

Causal FLOPs are counted for the pairs a causal mask keeps: a chunk of ``M`` queries after a
prefix of ``C`` tokens has ``M * C + M * (M + 1) / 2`` (query, key) pairs, each worth
``4 * head_dim`` FLOPs per query head (QK^T and PV, a multiply and an add each). A chunk after
a prefix is causal **lower-right** (its last query sees every key): SDPA's ``is_causal=True``
aligns the mask to the upper left when there are fewer queries than keys, so those shapes use
``torch.nn.attention.bias.causal_lower_right`` (a backend that cannot take it gets no figure).
Writes ``results.md`` and ``results.svg`` into ``--out`` (nothing without it); ``--plot-from
results.md`` redraws the plot from a committed table, on any machine. About a minute
on an H100; ``--sweep`` also times a few tile configurations on one shape (another minute).
"""

from __future__ import annotations

import datetime
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, load_impl, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
DEVICE = "cuda"


@dataclass(frozen=True)
class Shape:
    name: str
    chunks: tuple[tuple[int, int], ...]  # (prefix length, chunk length) per sequence

    def flops(self) -> float:
        pairs = sum(m * c + m * (m + 1) / 2 for c, m in self.chunks)
        return 4.0 * NUM_HEADS * HEAD_DIM * pairs


SHAPES = (
    Shape("prompt 4k", ((0, 4096),)),
    Shape("prompt 16k", ((0, 16384),)),
    Shape("prompt 32k", ((0, 32768),)),
    Shape("2k chunk after 30k", ((30720, 2048),)),
    Shape("ragged: 4 chunks", ((0, 3072), (8192, 2048), (30000, 512), (1000, 1536))),
)
SWEEP = (  # (BLOCK_M, BLOCK_N, num_warps, num_stages), timed by --sweep on "prompt 16k", float16
    (128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 3), (128, 32, 4, 3), (64, 64, 4, 3), (64, 128, 4, 3),
    (128, 64, 8, 2), (128, 64, 8, 4),
)


def make_case(torch, shape: Shape, dtype, seed: int = 0):
    """Paged cache, tables and packed queries for ``shape``; every block scattered by a shuffled pool."""
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    lens = [c + m for c, m in shape.chunks]
    need = [math.ceil(n / BLOCK_SIZE) for n in lens]
    num_blocks = sum(need)
    cache_shape = (num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_cache = torch.randn(cache_shape, generator=gen, device=DEVICE, dtype=dtype)
    v_cache = torch.randn(cache_shape, generator=gen, device=DEVICE, dtype=dtype)
    pool = torch.randperm(num_blocks, generator=gen, device=DEVICE).to(torch.int32)
    tables = torch.zeros((len(lens), max(need)), dtype=torch.int32, device=DEVICE)
    start = 0
    for s, n in enumerate(need):
        tables[s, :n] = pool[start : start + n]
        start += n
    query_lens = [m for _, m in shape.chunks]
    q = torch.randn((sum(query_lens), NUM_HEADS, HEAD_DIM), generator=gen, device=DEVICE, dtype=dtype)
    starts = torch.tensor([0, *itertools.accumulate(query_lens)], dtype=torch.int32, device=DEVICE)
    seq_lens = torch.tensor(lens, dtype=torch.int32, device=DEVICE)
    return q, k_cache, v_cache, tables, starts, seq_lens


def gather_dense(torch, cache, table_row, seq_len):
    """``[1, kv_heads, seq_len, head_dim]`` contiguous: one sequence's tokens, the layout SDPA wants."""
    blocks = cache[table_row[: math.ceil(seq_len / BLOCK_SIZE)].long()]  # [blocks, block_size, kv, d]
    tokens = blocks.reshape(-1, NUM_KV_HEADS, HEAD_DIM)[:seq_len]
    return tokens.permute(1, 0, 2).unsqueeze(0).contiguous()


class Sdpa:
    """Dense SDPA on one sequence with one backend. Grouped-query heads go in with ``enable_gqa``
    when the backend takes it; otherwise K and V are expanded to every query head (outside the
    timings for the dense columns: ``prepare``)."""

    def __init__(self, torch, backend):
        from torch.nn.attention import sdpa_kernel
        from torch.nn.attention.bias import causal_lower_right
        from torch.nn.functional import scaled_dot_product_attention

        self.backend, self.sdpa_kernel = backend, sdpa_kernel
        self.causal_lower_right, self.sdpa = causal_lower_right, scaled_dot_product_attention
        self.gqa = {}  # (has a prefix) -> whether enable_gqa worked, decided by the first call

    def _mask(self, q, k, prefix):
        if prefix == 0:
            return None, True  # square: upper-left and lower-right alignments agree
        return self.causal_lower_right(q.shape[2], k.shape[2]), False

    def call(self, q, k, v, prefix):
        """``q [1, H, M, D]``, ``k``, ``v [1, KV, N, D]``; causal aligned to the lower right."""
        mask, causal = self._mask(q, k, prefix)
        key = prefix > 0
        with self.sdpa_kernel(self.backend):
            if self.gqa.get(key, True):
                try:
                    out = self.sdpa(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True)
                    self.gqa[key] = True
                    return out
                except (RuntimeError, ValueError):
                    if self.gqa.get(key):
                        raise
                    self.gqa[key] = False
            group = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            return self.sdpa(q, k, v, attn_mask=mask, is_causal=causal)

    def prepare(self, q, k, v, prefix):
        """A call with every choice made and any head expansion done, for timing; None if the
        backend cannot run it."""
        try:
            self.call(q, k, v, prefix)
        except (RuntimeError, ValueError) as err:
            print(f"    ({self.backend.name} cannot run it: {str(err).splitlines()[0][:120]})")
            return None
        mask, causal = self._mask(q, k, prefix)
        if self.gqa[prefix > 0]:
            kwargs = {"enable_gqa": True}
        else:
            group = q.shape[1] // k.shape[1]
            k, v, kwargs = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1), {}

        def run():
            with self.sdpa_kernel(self.backend):
                return self.sdpa(q, k, v, attn_mask=mask, is_causal=causal, **kwargs)

        return run


def measure(torch, lab, shape: Shape, dtype):
    from torch.nn.attention import SDPBackend

    q, k_cache, v_cache, tables, starts, seq_lens = make_case(torch, shape, dtype)
    max_query_len = max(m for _, m in shape.chunks)
    out = torch.empty_like(q)
    run = lambda: lab.paged_prefill(q, k_cache, v_cache, tables, starts, seq_lens, max_query_len, out)  # noqa: E731
    run()
    row = {"shape": shape, "dtype": str(dtype).removeprefix("torch."), "ours_us": bench.time_us(run)}

    # Dense copies, made once, outside the timings: [1, H, M, D] queries, [1, KV, N, D] keys/values.
    dense = []
    for s, (prefix, m) in enumerate(shape.chunks):
        lo = int(starts[s])
        qs = q[lo : lo + m].permute(1, 0, 2).unsqueeze(0).contiguous()
        dense.append((qs, gather_dense(torch, k_cache, tables[s], prefix + m),
                      gather_dense(torch, v_cache, tables[s], prefix + m), prefix, lo, m))

    worst = 0.0
    for key, backend in (("flash_us", SDPBackend.FLASH_ATTENTION), ("cudnn_us", SDPBackend.CUDNN_ATTENTION)):
        sdpa = Sdpa(torch, backend)
        calls = [sdpa.prepare(qs, ks, vs, prefix) for qs, ks, vs, prefix, _, _ in dense]
        if any(c is None for c in calls):
            row[key] = None
            continue
        row[key] = sum(bench.time_us(c) for c in calls)
        if key == "flash_us":  # this lab's output against FlashAttention's: a sanity check
            for call, (_, _, _, _, lo, m) in zip(calls, dense, strict=True):
                ref = call()[0].permute(1, 0, 2)
                worst = max(worst, (ref.float() - out[lo : lo + m].float()).abs().max().item())
    row["max_diff"] = worst

    # Gather + SDPA: the copy out of the paged cache is part of the work.
    flash = Sdpa(torch, SDPBackend.FLASH_ATTENTION)
    qs_list = [d[0] for d in dense]
    del dense

    def gather_then_sdpa():
        for s, (prefix, m) in enumerate(shape.chunks):
            k = gather_dense(torch, k_cache, tables[s], prefix + m)
            v = gather_dense(torch, v_cache, tables[s], prefix + m)
            flash.call(qs_list[s], k, v, prefix)

    try:
        gather_then_sdpa()
        row["gather_us"] = bench.time_us(gather_then_sdpa)
    except (RuntimeError, ValueError) as err:
        print(f"    (gather + SDPA failed: {str(err).splitlines()[0][:120]})")
        row["gather_us"] = None
    return row


def tflops(shape: Shape, us):
    return None if us is None else shape.flops() / (us * 1e-6) / 1e12


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def _ratio(ours, other):
    return "-" if other is None else f"{ours / other:.2f}x"


def table(rows) -> str:
    headers = ["shape", "dtype", "causal TFLOP", "this lab us", "TFLOP/s", "SDPA flash us", "TFLOP/s", "vs flash",
               "SDPA cuDNN us", "TFLOP/s", "vs cuDNN", "gather+SDPA us", "TFLOP/s", "max diff"]
    body = []
    for r in rows:
        s = r["shape"]
        ours = tflops(s, r["ours_us"])
        flash, cudnn, gather = tflops(s, r["flash_us"]), tflops(s, r["cudnn_us"]), tflops(s, r["gather_us"])
        body.append([
            s.name, r["dtype"], f"{s.flops() / 1e12:.2f}", f"{r['ours_us']:.0f}", f"{ours:.0f}",
            _fmt(r["flash_us"], ".0f"), _fmt(flash, ".0f"), _ratio(ours, flash),
            _fmt(r["cudnn_us"], ".0f"), _fmt(cudnn, ".0f"), _ratio(ours, cudnn),
            _fmt(r["gather_us"], ".0f"), _fmt(gather, ".0f"), f"{r['max_diff']:.1e}",
        ])
    return bench.markdown_table(headers, body)


# The plot's bars: (label, the results.md column of their TFLOP/s, colour name in labkit.figures.COLORS).
# The table repeats "TFLOP/s" after each time column; results_table keys them by the column before.
PLOT_SERIES = (("this lab (paged)", "this lab us", "valid"), ("SDPA flash (dense)", "SDPA flash us", "violet"),
               ("SDPA cuDNN (dense)", "SDPA cuDNN us", "null"), ("gather + SDPA flash", "gather+SDPA us", "poison"))


def plot(results: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the table of ``results`` (a results.md this script wrote): the run
    and its plot cannot disagree, and the plot can be redrawn anywhere (``--plot-from``)."""
    from labkit import figures

    rows = figures.results_table(results, "shape")
    device = results.read_text(encoding="utf-8").split("\n\n")[1].split(",")[0]
    plt = figures.pyplot()
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(figures.WIDTH, 2.9 * len(dtypes) + 1.2), sharex=True,
                             squeeze=False, layout="constrained")
    width = 0.2
    for ax, dtype in zip(axes[:, 0], dtypes, strict=True):
        sub = [r for r in rows if r["dtype"] == dtype]
        for i, (label, column, color) in enumerate(PLOT_SERIES):
            points = [(j + (i - 1.5) * width, figures.number(r[f"{column} TFLOP/s"])) for j, r in enumerate(sub)]
            points = [(x, y) for x, y in points if y is not None]
            ax.bar([x for x, _ in points], [y for _, y in points], width, label=label,
                   color=figures.COLORS[color])
        for j, r in enumerate(sub):  # this lab against dense FlashAttention, inside its bar
            if figures.number(r["vs flash"]) is not None:
                ax.text(j - 1.5 * width, 12, f"{r['vs flash']} flash", rotation=90, ha="center", va="bottom",
                        fontsize=9, color=figures.COLORS["paper"])
        ax.set_ylabel(f"{dtype}\nTFLOP/s")
        ax.grid(axis="y", alpha=0.6)
        ax.set_axisbelow(True)
    bottom = axes[-1, 0]
    bottom.set_xticks(range(len(sub)), [r["shape"] for r in sub], rotation=20, ha="right")
    axes[0, 0].legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncol=2, frameon=False)
    fig.suptitle(f"Causal prefill on {device}: achieved TFLOP/s (causal FLOPs only), {NUM_HEADS}/{NUM_KV_HEADS} "
                 f"heads,\nhead_dim {HEAD_DIM}, blocks of {BLOCK_SIZE}; inside each blue bar: this lab's speed "
                 "against SDPA flash", x=0.0, ha="left", fontsize=10)
    return figures.save(fig, path)


def sweep(torch, lab) -> None:
    """Time the kernel with each tile configuration of SWEEP on the 16k prompt (float16)."""
    shape = SHAPES[1]
    q, k_cache, v_cache, tables, starts, seq_lens = make_case(torch, shape, torch.float16)
    out = torch.empty_like(q)
    saved = dict(lab.GPU_TILES)
    try:
        for block_m, block_n, warps, stages in SWEEP:
            lab.GPU_TILES.update(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=stages)
            run = lambda: lab.paged_prefill(q, k_cache, v_cache, tables, starts, seq_lens, shape.chunks[0][1], out)  # noqa: E731
            try:
                run()
                us = bench.time_us(run)
                print(f"  BLOCK_M={block_m:3d} BLOCK_N={block_n:3d} warps={warps} stages={stages}: "
                      f"{us:8.0f} us, {tflops(shape, us):4.0f} TFLOP/s", flush=True)
            except Exception as err:  # out of shared memory, registers...: say so and go on
                print(f"  BLOCK_M={block_m} BLOCK_N={block_n} warps={warps} stages={stages}: "
                      f"{type(err).__name__}: {str(err).splitlines()[0][:100]}", flush=True)
    finally:
        lab.GPU_TILES.clear()
        lab.GPU_TILES.update(saved)


def tiles_that_fit(torch, lab) -> None:
    """Launch the kernel once at head_dim 128 with ``GPU_TILES``; if the GPU refuses them (shared
    memory, registers), fall back to the first configuration of ``SWEEP`` that runs, and say so."""
    shape = Shape("fit", ((0, 300),))
    q, k_cache, v_cache, tables, starts, seq_lens = make_case(torch, shape, torch.float16)
    for config in [None, *SWEEP]:
        if config is not None:
            block_m, block_n, warps, stages = config
            lab.GPU_TILES.update(BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=stages)
        try:
            lab.paged_prefill(q, k_cache, v_cache, tables, starts, seq_lens)
            torch.cuda.synchronize()
        except Exception as err:
            print(f"(tiles {lab.GPU_TILES} do not run here: {type(err).__name__}: {str(err).splitlines()[0][:100]})")
            continue
        if config is not None:
            print(f"(falling back to tiles {lab.GPU_TILES})")
        return
    raise SystemExit("no tile configuration of bench.SWEEP runs on this GPU")


def main(argv=None) -> int:
    parser = bench.arguments(__doc__, "folder for results.md and results.svg (nothing written without)")
    parser.add_argument("--sweep", action="store_true", help="also time a few tile configurations (16k prompt, fp16)")
    parser.add_argument("--dtypes", default="float16,bfloat16", help="comma-separated, default float16,bfloat16")
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0
    if BACKEND != "cuda":
        print("bench.py measures a GPU kernel and needs a CUDA GPU; this machine has none "
              f"({triton_env.describe()}). The tests run here: pytest {HERE.relative_to(HERE.parents[2])}")
        return 2

    import torch

    lab = load_impl(HERE)
    print(bench.device_line(), flush=True)
    tiles_that_fit(torch, lab)
    if args.sweep:
        sweep(torch, lab)
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name.strip())
        for shape in SHAPES:
            r = measure(torch, lab, shape, dtype)
            rows.append(r)
            print(f"{shape.name:22s} {r['dtype']:8s} ours {tflops(shape, r['ours_us']):5.0f} TFLOP/s "
                  f"({r['ours_us']:8.0f} us); flash {_fmt(tflops(shape, r['flash_us']), '5.0f')}, "
                  f"cuDNN {_fmt(tflops(shape, r['cudnn_us']), '5.0f')}, gather+SDPA "
                  f"{_fmt(tflops(shape, r['gather_us']), '5.0f')} TFLOP/s; max diff vs flash {r['max_diff']:.1e}",
                  flush=True)
            if r["max_diff"] > 0.05:  # fp16/bf16 outputs of size ~1/sqrt(keys): a real disagreement
                print(f"  WARNING: this lab's output differs from FlashAttention's by {r['max_diff']:.2g} on "
                      f"{shape.name} ({r['dtype']}): one of the two computes something else", flush=True)
            torch.cuda.empty_cache()

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"# Lab 04-03 results\n\n{bench.device_line()}, {date}. {NUM_HEADS} query / {NUM_KV_HEADS} KV heads, "
            f"head_dim {HEAD_DIM}, blocks of {BLOCK_SIZE}; tiles {lab.GPU_TILES}. TFLOP/s count only the (query, key) "
            f"pairs a causal mask keeps.\n\n{table(rows)}\n")
    bench.write_results(args.out, text, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
