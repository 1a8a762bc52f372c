"""Lab 04-07 demo: one decode step with the KV cache split across ranks, end to end.

    python lab.py                              # 4 ranks on the CPU (gloo), the reference solution
    LAB_IMPL=starter python lab.py             # your work
    python lab.py --world-size 2 --layout token
    torchrun --nproc-per-node 2 lab.py         # torchrun starts the ranks: one per GPU with NCCL
                                               # (gloo on the CPU when there is no GPU)

Every rank builds the same batch of sequences (fixed seeds), keeps the tokens the layout gives it:
``local_seq_lens`` for its lengths, its own shuffled pool and block tables, ``shard_slot_mapping``
to write them. Then each rank computes ``rank_summaries`` over its shard, and the ranks combine with
``combine_all_reduce`` and ``combine_all_gather``. Rank 0 compares both outputs with dense float64
attention over the whole sequences and prints a table. Exit status 1 on FAIL.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # the repository: labkit
sys.path.insert(0, str(HERE))  # _ranks, the launcher (importable by name: spawned ranks find it)

import _ranks  # noqa: E402
import numpy as np  # noqa: E402

SEQ_LENS = (1000, 37, 300, 0, 129)  # a ragged batch: long, short, empty
NUM_HEADS, NUM_KV_HEADS, HEAD_DIM, BLOCK_SIZE = 8, 2, 64, 16
GATE = 1e-10  # float64 all the way: only the order of the sums differs from the truth


def make_batch():
    """The decode step every rank sees: q, and each sequence's logical keys and values."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((len(SEQ_LENS), NUM_HEADS, HEAD_DIM))
    keys = [rng.standard_normal((n, NUM_KV_HEADS, HEAD_DIM)) for n in SEQ_LENS]
    values = [rng.standard_normal((n, NUM_KV_HEADS, HEAD_DIM)) for n in SEQ_LENS]
    return q, keys, values


def rank_tables(rank: int, lens) -> tuple[np.ndarray, int]:
    """Rank ``rank``'s block tables for its ``lens`` tokens per sequence: a pool of twice the blocks it
    needs, shuffled with the rank's own seed (every rank can rebuild every rank's tables)."""
    need = [-(-int(n) // BLOCK_SIZE) for n in lens]
    num_blocks = max(2 * sum(need), 1)
    ids = np.random.default_rng(100 + rank).permutation(num_blocks)
    tables = np.zeros((len(lens), max(max(need), 1)), dtype=np.int32)
    start = 0
    for b, n in enumerate(need):
        tables[b, :n] = ids[start:start + n]
        start += n
    return tables, num_blocks


def demo_rank(rank: int, world_size: int, layout: str) -> np.ndarray:
    """This rank's part of the step; returns [tokens held, max |diff| of both combines] (the
    differences on rank 0 only: it computes the truth)."""
    import torch

    import labkit

    lab = labkit.load_impl(HERE)
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() and \
        torch.distributed.get_backend() == "nccl" else torch.device("cpu")
    q, keys, values = make_batch()
    stripe = _ranks.stripe_of(layout, BLOCK_SIZE, world_size, max(SEQ_LENS))
    lens = lab.local_seq_lens(np.array(SEQ_LENS), world_size, stripe)  # [world_size, batch]
    tables = [rank_tables(r, lens[r]) for r in range(world_size)]
    my_tables, num_blocks = tables[rank]
    k_cache = np.full((num_blocks, BLOCK_SIZE, NUM_KV_HEADS, HEAD_DIM), np.nan)  # unwritten slots: NaN
    v_cache = np.full_like(k_cache, np.nan)
    for b, n in enumerate(SEQ_LENS):
        width = max(t.shape[1] for t, _ in tables)
        per_rank = np.stack([np.pad(t[b], (0, width - t.shape[1])) for t, _ in tables])
        ranks, slots = lab.shard_slot_mapping(np.arange(n), per_rank, BLOCK_SIZE, stripe)
        mine = ranks == rank
        k_cache.reshape(-1, NUM_KV_HEADS, HEAD_DIM)[slots[mine]] = keys[b][mine]
        v_cache.reshape(-1, NUM_KV_HEADS, HEAD_DIM)[slots[mine]] = values[b][mine]
    summaries = lab.rank_summaries(q, k_cache, v_cache, my_tables, lens[rank])
    m, denom, acc = (torch.from_numpy(np.asarray(x, dtype=np.float64)).to(device) for x in summaries)
    outputs = [lab.combine_all_reduce(m, denom, acc), lab.combine_all_gather(m, denom, acc)]
    diffs = [np.nan, np.nan]
    if rank == 0:
        truth = np.stack([labkit.attention_f64(q[b], keys[b], values[b]) for b in range(len(SEQ_LENS))])
        diffs = [float(np.abs(out.cpu().numpy() - truth).max()) for out in outputs]
    return np.array([lens[rank].sum(), *diffs])


def report(results, world_size: int, layout: str, backend: str) -> int:
    import labkit

    lab = labkit.load_impl(HERE)
    stripe = _ranks.stripe_of(layout, BLOCK_SIZE, world_size, max(SEQ_LENS))
    print(f"{world_size} ranks ({backend}), layout {layout!r} (stripe {stripe} tokens), sequences {SEQ_LENS}, "
          f"{NUM_HEADS} query heads on {NUM_KV_HEADS} KV heads of {HEAD_DIM}")
    for rank, row in enumerate(results):
        print(f"  rank {rank}: holds {int(row[0]):5d} tokens")
    ok = True
    for i, method in enumerate(("all_reduce", "all_gather")):
        diff = results[0][1 + i]
        sent = lab.combine_bytes(method, world_size, len(SEQ_LENS), NUM_HEADS, HEAD_DIM, itemsize=8)
        verdict = "ok" if diff <= GATE else "FAIL"
        ok &= verdict == "ok"
        print(f"  combine_{method:10s}: max |out - dense float64| = {diff:.1e}   {sent:8,d} bytes sent   {verdict}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=4)
    parser.add_argument("--layout", default="block", choices=["block", "token", "contiguous"])
    args = parser.parse_args()
    if "RANK" in os.environ and "LOCAL_RANK" in os.environ:  # started by torchrun: this process is one rank
        return torchrun_rank(args.layout)
    try:
        import torch
    except ImportError:
        print('lab 04-07 needs torch: pip install -e ".[torch]"', file=sys.stderr)
        return 2
    backend = "nccl" if torch.cuda.is_available() and torch.cuda.device_count() >= args.world_size else "gloo"
    try:
        results = _ranks.launch(demo_rank, args.world_size, args=(args.layout,), backend=backend)
    except _ranks.RanksFailed as err:
        print(err, file=sys.stderr)
        return 1
    return report(results, args.world_size, args.layout, backend)


def torchrun_rank(layout: str) -> int:
    """One rank under torchrun (it sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""
    os.environ.update(_ranks.NO_MULTICAST)  # NVLink multicast off, before NCCL starts
    import torch
    import torch.distributed as dist

    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # one GPU per rank, by local rank
    dist.init_process_group(backend)
    rank, world_size = dist.get_rank(), dist.get_world_size()
    row = torch.from_numpy(demo_rank(rank, world_size, layout))
    device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
    rows = [torch.empty_like(row, device=device) for _ in range(world_size)]
    dist.all_gather(rows, row.to(device))
    status = report([r.cpu().numpy() for r in rows], world_size, layout, backend) if rank == 0 else 0
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
