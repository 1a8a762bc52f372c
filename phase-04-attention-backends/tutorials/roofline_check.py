"""Check tutorial 03's roofline figures on a GPU: decode attention is a stream of K and V.

For two decode shapes (32 query heads, 8 KV heads, head_dim 128, fp16, blocks of 16
tokens; batch 1 at 32k tokens and batch 64 at 2k tokens) this prints:

- the bytes a decode step must read (K and V of every valid token, plus q, out and
  the block tables), the FLOPs it does, and their ratio (``labkit.bench.decode_bytes``,
  ``decode_flops``);
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
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from labkit import load_impl, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()  # before Triton is imported

import torch  # noqa: E402

from labkit import bench, cases  # noqa: E402

NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 32, 8, 128, 16
SHAPES = [(1, 32768), (64, 2048)]  # (batch, tokens per sequence)
SMOKE_SHAPES = [(1, 100), (3, 40)]
LAB_02_04 = ROOT / "phase-02-paged-attention/labs/lab-04-paged-attention-triton"
LAB_04_06 = ROOT / "phase-04-attention-backends/labs/lab-06-paged-decode-roofline"


def make_problem(batch: int, seq_len: int, device: str, seed: int = 0):
    """A paged fp16 batch (shuffled block ids, a few spare blocks) and the contiguous copy dense SDPA reads."""
    case = cases.decode_case([seq_len] * batch, num_heads=NUM_HEADS, num_kv_heads=NUM_KV_HEADS, head_dim=HEAD_DIM,
                             block_size=BLOCK_SIZE, dtype=torch.float16, device=device, seed=seed, spare_blocks=8)
    k = cases.dense_kv(case.k_cache, case.block_tables, seq_len)
    v = cases.dense_kv(case.v_cache, case.block_tables, seq_len)
    return case, k, v


def cpu_time_us(fn, reps: int = 3) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - start) / reps * 1e6


def load_kernels():
    """(name, callable(case) -> out [batch, heads, dim]) for the course's kernels that load; skip lines for the
    rest."""
    kernels, skipped = [], []
    try:
        lab_02_04 = load_impl(LAB_02_04)

        def run_02_04(case):
            if case.q.shape[0] != 1:
                return None  # one sequence per call: timed at batch 1 only
            return lab_02_04.paged_attention_triton(*case.one(0))[None]

        kernels.append(("lab 02-04 paged_attention_triton", run_02_04))
    except Exception as err:  # a missing or unfinished lab is reported, not fatal
        skipped.append(f"lab 02-04 paged_attention_triton: skipped ({type(err).__name__}: {err})")
    try:
        lab_04_06 = load_impl(LAB_04_06)
        kernels.append(("lab 04-06 paged_decode", lambda c: lab_04_06.paged_decode(
            c.q, c.k_cache, c.v_cache, c.block_tables, c.seq_lens)))
    except Exception as err:
        skipped.append(f"lab 04-06 paged_decode: skipped ({type(err).__name__}: {err})")
    return kernels, skipped


def measure_shape(batch, seq_len, device, copy_bw, kernels, timer) -> list[list[str]]:
    """Check, then time, every method on one shape; one table row each."""
    case, k, v = make_problem(batch, seq_len, device)
    q = case.q
    lens = [seq_len] * batch
    nbytes = bench.decode_bytes(lens, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, 2, BLOCK_SIZE)
    flops = bench.decode_flops(lens, NUM_HEADS, HEAD_DIM)
    floor_us = nbytes / copy_bw * 1e6
    shape = f"batch {batch} x {seq_len} tokens"
    print(f"{shape}: {nbytes / 1e6:.1f} MB to read, {flops / 1e6:.0f} MFLOP, "
          f"{flops / nbytes:.2f} FLOP/byte; roofline {floor_us:.1f} us")
    reference = cases.sdpa_decode(q.float(), k.float(), v.float())
    candidates = [("dense SDPA (enable_gqa), contiguous copy", lambda: cases.sdpa_decode(q, k, v))]
    candidates += [(name, lambda fn=fn: fn(case)) for name, fn in kernels]
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
        gbs = bench.gb_per_s(nbytes, us)
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
