"""Lab 04-06 benchmark: paged decode against the memory roofline (GPU only).

    python phase-04-attention-backends/labs/lab-06-paged-decode-roofline/bench.py --out DIR

For each shape it times, in one process: this lab's ``paged_decode``; lab 02-04's
one-sequence kernel (batch-1 rows only); and ``scaled_dot_product_attention`` on a
dense, contiguous copy of the same cache, the "paging is free" bar. Bytes are the
K and V bytes of the valid tokens; bandwidth is compared with a 1 GiB
device-to-device copy measured in the same run. Writes ``results.md`` and
``results.png`` into DIR.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, load_impl, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

LAB_02_04 = HERE.parents[2] / "phase-02-paged-attention" / "labs" / "lab-04-paged-attention-triton"
BLOCK_SIZE = 16
HEAD_DIM = 128


@dataclass(frozen=True)
class Shape:
    name: str
    seq_lens: tuple[int, ...]
    num_heads: int = 32
    num_kv_heads: int = 8

    @property
    def batch(self) -> int:
        return len(self.seq_lens)


def _batch(n: int, tokens: int, **heads) -> Shape:
    k = f"{tokens // 1024}k"
    extra = f", {heads['num_heads']}/{heads['num_kv_heads']} heads" if heads else ""
    return Shape(f"batch {n} x {k}{extra}", (tokens,) * n, **heads)


SHAPES = (
    _batch(1, 8192),
    _batch(1, 32768),
    _batch(1, 131072),
    _batch(4, 16384),
    _batch(16, 4096),
    _batch(64, 4096),
    _batch(256, 1024),
    _batch(64, 2048, num_heads=32, num_kv_heads=32),
    _batch(64, 2048, num_heads=64, num_kv_heads=8),
    Shape("skewed: 1 x 64k + 63 x 1k", (65536,) + (1024,) * 63),
)


def make_case(shape: Shape, torch, dtype, seed: int = 0):
    """A paged cache holding exactly the batch's blocks, scattered by a shuffled pool."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    need = [math.ceil(n / BLOCK_SIZE) for n in shape.seq_lens]
    num_blocks = sum(need)
    cache_shape = (num_blocks, BLOCK_SIZE, shape.num_kv_heads, HEAD_DIM)
    k_cache = torch.randn(cache_shape, generator=gen, device="cuda", dtype=dtype)
    v_cache = torch.randn(cache_shape, generator=gen, device="cuda", dtype=dtype)
    pool = torch.randperm(num_blocks, generator=gen, device="cuda").to(torch.int32)
    block_tables = torch.zeros((shape.batch, max(need)), dtype=torch.int32, device="cuda")
    start = 0
    for b, n in enumerate(need):
        block_tables[b, :n] = pool[start : start + n]
        start += n
    seq_lens = torch.tensor(shape.seq_lens, dtype=torch.int32, device="cuda")
    q = torch.randn((shape.batch, shape.num_heads, HEAD_DIM), generator=gen, device="cuda", dtype=dtype)
    return q, k_cache, v_cache, block_tables, seq_lens


def dense_copy(cache, table_rows, seq_len: int):
    """``[batch, num_kv_heads, seq_len, head_dim]`` contiguous: the layout SDPA wants."""
    blocks = cache[table_rows.long()]  # [batch, blocks, block_size, kv_heads, dim]
    batch, n_blocks, block_size, kv_heads, dim = blocks.shape
    tokens = blocks.reshape(batch, n_blocks * block_size, kv_heads, dim)[:, :seq_len]
    return tokens.permute(0, 2, 1, 3).contiguous()


def sdpa_calls(torch, q, k_cache, v_cache, block_tables, shape: Shape):
    """One SDPA call per group of equal-length sequences (two for the skewed batch)."""
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    calls = []
    lens = list(shape.seq_lens)
    for n in sorted(set(lens), reverse=True):
        rows = torch.tensor([b for b, x in enumerate(lens) if x == n], device="cuda")
        blocks = math.ceil(n / BLOCK_SIZE)
        k = dense_copy(k_cache, block_tables[rows, :blocks], n)
        v = dense_copy(v_cache, block_tables[rows, :blocks], n)
        qq = q[rows].unsqueeze(2)  # [batch, heads, 1, dim]
        calls.append((lambda qq=qq, k=k, v=v: sdpa(qq, k, v, enable_gqa=True), rows))
    return calls


def kv_bytes(shape: Shape, itemsize: int) -> int:
    return 2 * sum(shape.seq_lens) * shape.num_kv_heads * HEAD_DIM * itemsize


def load_lab_02_04():
    """Lab 02-04's ``paged_attention_triton`` if that lab is there, else None."""
    try:
        return load_impl(LAB_02_04, "solution").paged_attention_triton
    except Exception as err:  # absent or broken: the column is left out, the rest runs
        print(f"(lab 02-04's kernel not available: {type(err).__name__}: {err})")
        return None


def measure(shape: Shape, lab, old_kernel, torch, dtype):
    q, k_cache, v_cache, block_tables, seq_lens = make_case(shape, torch, dtype)
    nbytes = kv_bytes(shape, k_cache.element_size())
    row = {"shape": shape, "bytes": nbytes}

    out = lab.paged_decode(q, k_cache, v_cache, block_tables, seq_lens)
    row["ours_us"] = bench.time_us(lambda: lab.paged_decode(q, k_cache, v_cache, block_tables, seq_lens))

    sdpa_us, worst = 0.0, 0.0
    for call, rows in sdpa_calls(torch, q, k_cache, v_cache, block_tables, shape):
        dense = call().squeeze(2)
        worst = max(worst, (dense.float() - out[rows].float()).abs().max().item())
        sdpa_us += bench.time_us(call)
        del dense
    row["sdpa_us"] = sdpa_us
    row["max_diff"] = worst  # this lab's output against SDPA's, a sanity check

    row["v1_us"] = None
    if old_kernel is not None and shape.batch == 1:
        try:
            args = (q[0], k_cache, v_cache, block_tables[0], int(shape.seq_lens[0]))
            old_kernel(*args)
            row["v1_us"] = bench.time_us(lambda: old_kernel(*args))
        except Exception as err:
            print(f"(lab 02-04's kernel failed on {shape.name}: {type(err).__name__}: {err})")
    return row


def _pct(nbytes: int, us: float | None, copy_bw: float) -> str:
    return "-" if us is None else f"{100 * nbytes / (us * 1e-6) / copy_bw:.0f}%"


def table(rows, copy_bw: float) -> str:
    headers = ["shape", "KV MiB", "this lab us", "GB/s", "% copy", "dense SDPA us", "% copy",
               "vs SDPA", "lab 02-04 us", "% copy"]
    body = []
    for r in rows:
        n = r["bytes"]
        body.append([
            r["shape"].name, f"{n / 2**20:.0f}",
            f"{r['ours_us']:.1f}", f"{n / (r['ours_us'] * 1e-6) / 1e9:.0f}", _pct(n, r["ours_us"], copy_bw),
            f"{r['sdpa_us']:.1f}", _pct(n, r["sdpa_us"], copy_bw),
            f"{r['sdpa_us'] / r['ours_us']:.2f}x",
            "-" if r["v1_us"] is None else f"{r['v1_us']:.1f}", _pct(n, r["v1_us"], copy_bw),
        ])
    return bench.markdown_table(headers, body)


def plot(rows, copy_bw: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["shape"].name for r in rows]
    series = [("this lab (paged)", "ours_us", "tab:blue"), ("dense SDPA (contiguous)", "sdpa_us", "tab:gray"),
              ("lab 02-04 (one program per head)", "v1_us", "tab:red")]
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.27
    for i, (label, key, color) in enumerate(series):
        xs, ys = [], []
        for j, r in enumerate(rows):
            if r[key] is not None:
                xs.append(j + (i - 1) * width)
                ys.append(100 * r["bytes"] / (r[key] * 1e-6) / copy_bw)
        if xs:
            ax.bar(xs, ys, width, label=label, color=color)
    ax.axhline(100, color="black", lw=0.8, ls="--")
    ax.text(len(rows) - 0.5, 101, f"copy bandwidth {copy_bw / 1e12:.2f} TB/s", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("% of copy bandwidth (K+V bytes / time)")
    ax.set_title("Decode attention over a paged KV cache: 32 q / 8 KV heads unless named, D=128, fp16, block 16")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder for results.md and results.png")
    args = parser.parse_args(argv)
    if BACKEND != "cuda":
        print("bench.py measures GPU memory bandwidth and needs a CUDA GPU; this machine has none "
              f"({triton_env.describe()}). The tests run here: pytest {HERE.relative_to(HERE.parents[2])}")
        return 2

    import torch

    lab = load_impl(HERE)
    old_kernel = load_lab_02_04()
    copy_bw = bench.copy_bandwidth()
    print(f"{bench.device_line()}; copy bandwidth {copy_bw / 1e12:.2f} TB/s", flush=True)
    rows = []
    for shape in SHAPES:
        rows.append(measure(shape, lab, old_kernel, torch, torch.float16))
        r = rows[-1]
        print(f"{shape.name:32s} ours {r['ours_us']:8.1f} us ({_pct(r['bytes'], r['ours_us'], copy_bw)}), "
              f"sdpa {r['sdpa_us']:8.1f} us, max diff vs sdpa {r['max_diff']:.1e}", flush=True)
        torch.cuda.empty_cache()

    args.out.mkdir(parents=True, exist_ok=True)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"# Lab 04-06 results\n\n{bench.device_line()}, {date}. Copy bandwidth (1 GiB device-to-device, "
            f"read + write): {copy_bw / 1e12:.2f} TB/s.\n\n{table(rows, copy_bw)}\n")
    (args.out / "results.md").write_text(text)
    plot(rows, copy_bw, args.out / "results.png")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
