"""Lab 02-04 walkthrough: one decode step over a paged cache, three ways.

    python lab.py                      # the reference solution
    LAB_IMPL=starter python lab.py     # your own work

Builds the walkthrough's sequence (130 tokens in 9 scattered blocks of 16), computes
dense attention in float64 over a contiguous copy, then the paged torch reference and
the Triton kernel, and prints how far each lands from the dense answer. Runs on a GPU,
or on the CPU through Triton's interpreter. Exit status 1 on FAIL.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from labkit import triton_env  # noqa: E402

BACKEND = triton_env.select_backend()  # before Triton is imported: interpreter when there is no GPU

SEQ_LEN, BLOCK_SIZE, NUM_HEADS, NUM_KV_HEADS, HEAD_DIM = 130, 16, 8, 2, 64
BLOCK_IDS = [12, 3, 47, 1, 88, 5, 9, 22, 0]  # the sequence's physical blocks, in logical order
NUM_BLOCKS = 96  # the pool
GATE = 1e-2  # max |delta| allowed in fp16


def first_values(x) -> str:
    return "[" + " ".join(f"{float(v):8.4f}" for v in x[0, :4]) + "]"


def main() -> int:
    if BACKEND == "missing":
        print(triton_env.describe())
        return 2
    import dataclasses

    import torch

    import labkit
    from labkit.testing.cases import decode_case

    lab = labkit.load_impl(Path(__file__).parent)
    # Drawn on the CPU, then moved: the same numbers on a GPU as through the interpreter.
    case = decode_case([SEQ_LEN], num_heads=NUM_HEADS, num_kv_heads=NUM_KV_HEADS, head_dim=HEAD_DIM,
                       block_size=BLOCK_SIZE, dtype=torch.float16, seed=0, spare_blocks=NUM_BLOCKS - len(BLOCK_IDS))
    case = dataclasses.replace(case, block_tables=torch.tensor([BLOCK_IDS], dtype=torch.int32))
    case = case.poison("huge").to(triton_env.device())  # every slot that holds no token of the sequence: 3e4
    q, k_cache, v_cache, block_table, _ = case.one(0)

    print(triton_env.describe())
    dense = case.expected_f64()[0]  # the truth: float64 over a contiguous copy of the 130 tokens
    print(f"dense baseline  : out[0, :4] = {first_values(dense)}   (float64)")

    deltas = []  # max |delta| of each paged version; None where it is not implemented yet
    for label, fn in (("paged torch ref", lab.paged_attention_torch), ("paged triton   ", lab.paged_attention_triton)):
        try:
            out = fn(q, k_cache, v_cache, block_table, SEQ_LEN)
        except NotImplementedError as err:
            print(f"{label} : {err}")
            deltas.append(None)
            continue
        delta = labkit.max_abs_diff(out, dense)
        deltas.append(delta)
        mark = "ok" if delta <= GATE else "TOO FAR"
        print(f"{label} : out[0, :4] = {first_values(out.float().cpu())}   max|Δ| = {delta:.1e} {mark}")

    num_logical = -(-SEQ_LEN // BLOCK_SIZE)
    tail = SEQ_LEN - (num_logical - 1) * BLOCK_SIZE
    print(f"block table     : {BLOCK_IDS}   ({SEQ_LEN} tokens, {num_logical} blocks of {BLOCK_SIZE})")
    print(
        f"tail block      : block {BLOCK_IDS[-1]} holds {SEQ_LEN} - {num_logical - 1}*{BLOCK_SIZE} = {tail} "
        f"tokens; its other {BLOCK_SIZE - tail} hold poison (3e4)"
    )
    if all(d is not None and d <= GATE for d in deltas):  # NaN compares False: a NaN fails
        print(f"PASS: torch reference and Triton kernel match dense attention within {GATE:g} (fp16)")
        return 0
    if None in deltas:
        print("FAIL: not implemented yet (see the README's steps; LAB_IMPL=starter pytest shows what is missing)")
    else:
        print(f"FAIL: max |Δ| = {max(deltas):.3g} > {GATE:g}: run the tests, their messages say where")
    return 1


if __name__ == "__main__":
    sys.exit(main())
