"""Check tutorial 03's roofline figures on a GPU: decode attention is a stream of K and V.

For two decode shapes (32 query heads, 8 KV heads, head_dim 128, fp16, blocks of 16
tokens; batch 1 at 32k tokens and batch 64 at 2k tokens) this prints:

- the bytes a decode step must read (K and V of every valid token, plus q, out and
  the block tables), the FLOPs it does, and their ratio;
- the roofline prediction: those bytes over the copy bandwidth measured in the same run;
- measured times of dense SDPA (``enable_gqa=True``) on a contiguous copy of the cache,
  lab 02-04's ``paged_attention_triton`` (batch 1: it takes one sequence) and lab
  04-06's ``paged_decode`` (skipped if that lab's implementation cannot be loaded),
  each checked against an fp32 SDPA reference before it is timed.

Run from anywhere: ``python phase-04-attention-backends/tutorials/roofline_check.py``.
``--smoke`` runs tiny shapes on the CPU (Triton's interpreter) to check the script itself.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from labkit import load_impl, triton_env  # noqa: E402

triton_env.select_backend()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from labkit import bench  # noqa: E402

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
SHAPES = [(1, 32768), (64, 2048)]  # (batch, tokens per sequence)
SMOKE_SHAPES = [(1, 100), (3, 40)]
LAB_02_04 = ROOT / "phase-02-paged-attention/labs/lab-04-paged-attention-triton"
LAB_04_06 = ROOT / "phase-04-attention-backends/labs/lab-06-paged-decode-roofline"


def decode_bytes(batch: int, seq_len: int, itemsize: int = 2) -> int:
    """Fewest bytes one decode step moves: K and V of every valid token of every KV head,
    q read and out written, the block tables read (4-byte ids)."""
    kv = 2 * batch * seq_len * NUM_KV_HEADS * HEAD_DIM * itemsize
    q_and_out = 2 * batch * NUM_HEADS * HEAD_DIM * itemsize
    tables = batch * math.ceil(seq_len / BLOCK_SIZE) * 4
    return kv + q_and_out + tables


def decode_flops(batch: int, seq_len: int) -> int:
    """2 D FLOPs for q.k and 2 D for p.v, per token and query head (softmax is O(N), left out)."""
    return 4 * HEAD_DIM * NUM_HEADS * batch * seq_len


def make_problem(batch: int, seq_len: int, device: str, seed: int = 0):
    """A paged fp16 cache with shuffled block ids, its block tables, q, and the contiguous copy."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    blocks_per_seq = math.ceil(seq_len / BLOCK_SIZE)
    num_blocks = batch * blocks_per_seq + 8  # a few spare blocks no sequence uses
    shape = (num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
    k_cache = torch.randn(shape, generator=g).to(device, torch.float16)
    v_cache = torch.randn(shape, generator=g).to(device, torch.float16)
    ids = torch.randperm(num_blocks, generator=g)[: batch * blocks_per_seq]
    block_tables = ids.view(batch, blocks_per_seq).to(device, torch.int32)
    seq_lens = torch.full((batch,), seq_len, dtype=torch.int32, device=device)
    q = torch.randn((batch, NUM_HEADS, HEAD_DIM), generator=g).to(device, torch.float16)

    def contiguous(cache):  # [batch, kv_heads, seq_len, head_dim], what dense attention reads
        rows = cache[block_tables.long()].reshape(batch, blocks_per_seq * BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM)
        return rows[:, :seq_len].permute(0, 2, 1, 3).contiguous()

    return q, k_cache, v_cache, block_tables, seq_lens, contiguous(k_cache), contiguous(v_cache)


def sdpa(q, k, v):
    """Dense decode attention: q [batch, heads, dim] against k, v [batch, kv_heads, seq, dim]."""
    return F.scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=True).squeeze(2)


def cpu_time_us(fn, reps: int = 3) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps * 1e6


def load_kernels():
    """(name, callable(problem) -> out) for the course's kernels that load; skip lines for the rest."""
    kernels, skipped = [], []
    try:
        lab_02_04 = load_impl(LAB_02_04)

        def run_02_04(q, k_cache, v_cache, block_tables, seq_lens):
            if q.shape[0] != 1:
                return None  # one sequence per call: timed at batch 1 only
            return lab_02_04.paged_attention_triton(q[0], k_cache, v_cache, block_tables[0], int(seq_lens[0]))[None]

        kernels.append(("lab 02-04 paged_attention_triton", run_02_04))
    except Exception as err:  # a missing or unfinished lab is reported, not fatal
        skipped.append(f"lab 02-04 paged_attention_triton: skipped ({type(err).__name__}: {err})")
    try:
        lab_04_06 = load_impl(LAB_04_06)
        kernels.append(("lab 04-06 paged_decode", lambda q, kc, vc, bt, sl: lab_04_06.paged_decode(q, kc, vc, bt, sl)))
    except Exception as err:
        skipped.append(f"lab 04-06 paged_decode: skipped ({type(err).__name__}: {err})")
    return kernels, skipped


def measure_shape(batch, seq_len, device, copy_bw, kernels, timer) -> list[list[str]]:
    """Check, then time, every method on one shape; one table row each."""
    q, k_cache, v_cache, block_tables, seq_lens, k, v = make_problem(batch, seq_len, device)
    nbytes, flops = decode_bytes(batch, seq_len), decode_flops(batch, seq_len)
    floor_us = nbytes / copy_bw * 1e6
    shape = f"batch {batch} x {seq_len} tokens"
    print(f"{shape}: {nbytes / 1e6:.1f} MB to read, {flops / 1e6:.0f} MFLOP, "
          f"{flops / nbytes:.2f} FLOP/byte; roofline {floor_us:.1f} us")
    reference = sdpa(q.float(), k.float(), v.float())
    candidates = [("dense SDPA (enable_gqa), contiguous copy", lambda: sdpa(q, k, v))]
    candidates += [(name, lambda fn=fn: fn(q, k_cache, v_cache, block_tables, seq_lens)) for name, fn in kernels]
    rows = []
    for name, fn in candidates:
        out = fn()
        if out is None:
            continue
        err = (out.float() - reference).abs().max().item()
        if not err < 2e-2:
            rows.append([shape, name, "wrong output", f"max err {err:.3g}", "", f"{floor_us:.1f}"])
            continue
        us = timer(fn)
        gbs = nbytes / (us * 1e-6) / 1e9
        share = f"{100 * gbs * 1e9 / copy_bw:.0f}%"
        rows.append([shape, name, f"{us:.1f}", f"{gbs:.0f}", share, f"{floor_us:.1f}"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes, CPU allowed: checks the script only")
    args = parser.parse_args()
    on_gpu = torch.cuda.is_available()
    if not on_gpu and not args.smoke:
        sys.exit("roofline_check.py measures a GPU; none is visible (use --smoke to check the script on a CPU)")
    device = "cuda" if on_gpu else "cpu"
    timer = bench.time_us if on_gpu else cpu_time_us
    shapes = SMOKE_SHAPES if args.smoke else SHAPES

    copy_bw = bench.copy_bandwidth() if on_gpu else float("nan")
    print(bench.device_line() if on_gpu else "CPU smoke run (timings meaningless)")
    print(f"copy bandwidth (read + write, 1 GiB): {copy_bw / 1e9:.0f} GB/s")
    kernels, skipped = load_kernels()
    for line in skipped:
        print(line)

    rows = []
    for batch, seq_len in shapes:
        rows += measure_shape(batch, seq_len, device, copy_bw, kernels, timer)
        if on_gpu:
            torch.cuda.empty_cache()

    print()
    print(bench.markdown_table(["shape", "method", "time (us)", "GB/s", "of copy bw", "roofline (us)"], rows))


if __name__ == "__main__":
    main()
