"""Shared pieces of the GPU benchmarks: timing, bandwidth ceilings, byte counts, the results table.

Timings are medians with the L2 cache flushed before each run, two ways: ``time_us`` times each
call as Python issues it (``triton.testing.do_bench``), ``graph_time_us`` replays it from a CUDA
graph, as serving engines run decode steps. Ceilings: ``copy_bandwidth`` (bytes read plus bytes
written by a copy), ``read_bandwidth`` (a read-only stream), ``matmul_tflops`` (products back to
back, after a warm-up long enough for the clocks). The byte and FLOP counts of a decode step are
plain arithmetic (no GPU needed): the roofline's numerator.
``serving_trace`` draws the offline trace the capstone benchmarks serve; ``arguments`` starts a
benchmark's command line.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from pathlib import Path

from labkit.testing.cases import blocks_needed
from labkit.text import markdown_table

__all__ = [
    "MODEL_1B", "arguments", "copy_bandwidth", "decode_bytes", "decode_flops", "device_line", "gb_per_s",
    "graph_time_us", "kv_bytes", "llama_config", "markdown_table", "matmul_tflops", "model_stack", "read_bandwidth",
    "serving_trace", "time_us", "TraceRequest", "write_results",
]  # fmt: skip

# The capstone benchmarks' model (labs 99-01, 99-02, 99-03), a Llama configuration for transformers: ~1.1B
# parameters, 16 layers of 60.8M (attention 10.5M with 8 KV heads of 64 for 32 query heads, MLP 50.3M) plus
# 2 x 65.5M of embeddings and head. Random weights at transformers' default spread (0.02).
def llama_config(vocab_size: int, hidden_size: int, intermediate_size: int, num_hidden_layers: int,
                 num_attention_heads: int, num_key_value_heads: int, head_dim: int,
                 max_position_embeddings: int) -> dict:
    """A Llama configuration for transformers (``LlamaConfig(**config)``), as the capstone benchmarks build
    their models: no special tokens (every token id is a plain one), the head's weights its own."""
    return dict(vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=intermediate_size,
                num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
                num_key_value_heads=num_key_value_heads, head_dim=head_dim,
                max_position_embeddings=max_position_embeddings, bos_token_id=None, eos_token_id=None,
                pad_token_id=None, tie_word_embeddings=False)


MODEL_1B = llama_config(vocab_size=32000, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=2048)


def model_stack(backend: str, smoke: bool, gpu: str = "an H100"):
    """``(torch, transformers)``, after the checks a capstone benchmark makes before it builds a model:
    torch and triton installed (``backend``: ``triton_env.select_backend()``), a CUDA GPU unless ``smoke``
    (the README's numbers were measured on ``gpu``), transformers >= 5. SystemExit says what is missing."""
    from labkit.testing import triton_env

    if backend == "missing":
        raise SystemExit(f"bench.py needs torch and triton: {triton_env.INSTALL_HINT}")
    import torch

    if not smoke and not torch.cuda.is_available():
        raise SystemExit(f"bench.py measures on a CUDA GPU ({gpu} for the README's numbers) and none is visible "
                         "here. --smoke runs every step of it on a tiny model on the CPU.")
    try:
        import transformers
    except ImportError:
        raise SystemExit('bench.py needs transformers >= 5: pip install -e ".[model]"') from None
    return torch, transformers


def write_results(out: Path | None, text: str, plot, began: float | None = None) -> None:
    """Print a benchmark's results (Markdown) and, given ``--out``, write them to OUT/results.md and their
    plot (``plot(results_md, svg_path)``) to OUT/results.svg; without matplotlib, the table alone.
    ``began`` (a ``time.perf_counter()`` reading at the start): the run's total time is printed last."""
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(text)
        try:
            plot(out / "results.md", out / "results.svg")
            print(f"wrote {out / 'results.md'} and {out / 'results.svg'}")
        except SystemExit as err:  # matplotlib missing: the table is still written
            print(f"wrote {out / 'results.md'}; no plot: {err}")
    if began is not None:
        print(f"total {time.perf_counter() - began:.0f} s")


def arguments(doc: str, out: str = "write results.md and results.svg into this folder") -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first paragraph of ``doc`` (its docstring), with the
    two options every benchmark has: ``--out`` (``out`` says what it writes there) and ``--plot-from``
    (redraw the plot from a results.md the benchmark wrote, on any machine). The benchmark adds its own."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help=out)
    parser.add_argument("--plot-from", type=Path, metavar="RESULTS_MD",
                        help="only redraw the plot from a results.md this script wrote (no GPU needed)")
    return parser


def model_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of a benchmark that runs a model: ``--smoke`` (a tiny model on the CPU, to run every
    code path) and ``--impl`` (which implementation of the lab folder)."""
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny model on the CPU (no GPU needed): runs every code path; timings mean nothing")
    parser.add_argument("--impl", metavar="NAME", help="the implementation to time: a module of the lab folder, "
                        "such as starter (default: $LAB_IMPL, else the reference solution)")
    return parser


def replotted(args, plot) -> bool:
    """With ``--plot-from``: redraw the plot next to that results.md (``plot(results_md, svg_path)``),
    say so, and return True (the benchmark then stops); otherwise False."""
    if args.plot_from is None:
        return False
    print(f"wrote {plot(args.plot_from, args.plot_from.with_name('results.svg'))}")
    return True


def time_us(fn) -> float:
    """Median time of ``fn()`` in microseconds, L2 flushed between runs."""
    import triton

    return 1e3 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def copy_bandwidth(nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in bytes/s: (read + written) / time of
    copying ``nbytes`` (1 GiB) once, the ceiling a memory-bound kernel can reach."""
    import torch

    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    seconds = time_us(lambda: dst.copy_(src)) * 1e-6
    return 2 * nbytes / seconds


def device_line() -> str:
    """GPU name, torch and triton versions: the header of every results table."""
    import torch
    import triton

    return (
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )


def kv_bytes(seq_lens, num_kv_heads: int, head_dim: int, itemsize: int) -> int:
    """Bytes of K and V of the valid tokens, ``2 * sum(seq_lens) * num_kv_heads * head_dim * itemsize``:
    what any decode kernel must read, and the large term of every decode step's traffic."""
    return 2 * sum(int(n) for n in seq_lens) * num_kv_heads * head_dim * itemsize


def decode_bytes(seq_lens, num_heads: int, num_kv_heads: int, head_dim: int, itemsize: int, block_size: int) -> int:
    """The fewest bytes one decode step moves: :func:`kv_bytes`, plus ``q`` read and the output
    written (``num_heads * head_dim`` elements each per sequence), plus the block tables read
    (one 4-byte id per block of each sequence)."""
    lens = [int(n) for n in seq_lens]
    q_and_out = 2 * len(lens) * num_heads * head_dim * itemsize
    tables = 4 * sum(blocks_needed(n, block_size) for n in lens)
    return kv_bytes(lens, num_kv_heads, head_dim, itemsize) + q_and_out + tables


def decode_flops(seq_lens, num_heads: int, head_dim: int) -> int:
    """FLOPs of one decode step: ``2 * head_dim`` for ``q . k`` and ``2 * head_dim`` for ``p * v``,
    per token and query head (the softmax's O(seq_len) operations left out)."""
    return 4 * head_dim * num_heads * sum(int(n) for n in seq_lens)


def gb_per_s(nbytes: int, us: float) -> float:
    """``nbytes`` moved in ``us`` microseconds, in GB/s (10**9 bytes per second)."""
    return nbytes / (us * 1e-6) / 1e9


# --------------------------------------------------------------------------- the way engines run decode


def graph_time_us(fn, *, reps: int = 100, warmup: int = 3, flush_l2: bool = True) -> float:
    """Median time of ``fn()`` replayed from a CUDA graph, in microseconds.

    Serving engines capture their decode steps in CUDA graphs and replay them, so the host's cost
    of launching kernels (Triton binds and specializes every argument on each call) is not what
    they pay; :func:`time_us` times each call as issued from Python. ``fn`` runs ``warmup`` times
    on a side stream first (compilation, allocations), is captured once, and each replay is timed
    with CUDA events; with ``flush_l2`` a 256 MiB memset (the one ``do_bench`` uses) runs before
    each replay, outside the timed region, so neither way finds the inputs in the L2 cache.
    """
    import statistics

    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    graph.replay()
    for start, end in zip(starts, ends, strict=True):
        if flush_l2:
            flush.zero_()
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) for start, end in zip(starts, ends, strict=True)]
    graph.reset()
    return 1e3 * statistics.median(times)


def read_bandwidth(nbytes: int = 1 << 30) -> float:
    """Streaming read bandwidth in bytes/s: ``nbytes`` (1 GiB) read once by a Triton kernel that
    writes almost nothing (:mod:`labkit.testing.stream_read`). Decode only reads its K and V, and
    a read-only stream runs faster than a copy (which turns the bus around for its writes), so
    this is the roofline a decode kernel is measured against; :func:`copy_bandwidth` is the other."""
    import torch

    from labkit.testing import stream_read

    data = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda").random_()
    partials = stream_read.partials_for(data)
    seconds = time_us(lambda: stream_read.xor_blocks(data, out=partials)) * 1e-6
    return data.numel() * 4 / seconds


def matmul_tflops(n: int = 8192, dtype=None, *, chain: int = 8, reps: int = 10, warmup_s: float = 1.0,
                  device: str = "cuda") -> float:
    """Dense matrix-product throughput in TFLOP/s: ``chain`` products of random ``n x n`` by ``n x n``
    matrices of ``dtype`` (``torch.float16`` if None), ``2 n**3`` FLOPs each, issued back to back and
    timed together; the median of ``reps`` such chains. With a bandwidth, the GPU's ridge point,
    measured instead of quoted.

    The products run for ``warmup_s`` seconds before any is timed: a GPU raises its clocks over a
    fraction of a second of sustained load, and a 25 ms warm-up (``time_us``'s) times them still
    rising (an H200 measured that way gave 686 bf16 TFLOP/s, against about 790 once warm). Back to
    back, each product's launch hides behind the one before it and no cache flush runs between them,
    as in a model's forward pass; the operands (128 MiB each at the default size in bf16) do not fit
    in an L2 cache anyway. ``device="cpu"`` times the same way with the host's clock (for tests)."""
    import statistics
    import time

    import torch

    dtype = torch.float16 if dtype is None else dtype
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ValueError(f"matmul_tflops: dtype must be a floating-point torch.dtype, got {dtype!r}")
    for name, value in (("n", n), ("chain", chain), ("reps", reps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"matmul_tflops: {name} must be an integer >= 1, got {value!r}")
    if isinstance(warmup_s, bool) or not isinstance(warmup_s, (int, float)) or not warmup_s >= 0:
        raise ValueError(f"matmul_tflops: warmup_s must be a number of seconds >= 0, got {warmup_s!r}")
    cuda = torch.device(device).type == "cuda"
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    b = torch.randn(n, n, generator=gen, device=device, dtype=torch.float32).to(dtype)
    c = torch.empty(n, n, device=device, dtype=dtype)

    def run_chain() -> None:
        for _ in range(chain):
            torch.matmul(a, b, out=c)

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    run_chain()  # library handles, kernel selection
    sync()
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        run_chain()
        sync()
    times_s = []
    for _ in range(reps):
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            run_chain()
            end.record()
            end.synchronize()
            times_s.append(begin.elapsed_time(end) * 1e-3)
        else:
            begin_s = time.perf_counter()
            run_chain()
            times_s.append(time.perf_counter() - begin_s)
    return chain * 2 * n**3 / statistics.median(times_s) / 1e12


@dataclass(frozen=True)
class TraceRequest:
    """One request of a serving benchmark's trace."""

    request_id: str
    prompt: tuple[int, ...]
    max_new_tokens: int


def serving_trace(num_requests: int, prompt_range: tuple[int, int], output_range: tuple[int, int], prefix_len: int,
                  vocab: int, seed: int) -> list[TraceRequest]:
    """The capstone benchmarks' offline trace: ``num_requests`` requests arriving at once, prompt lengths
    uniform in ``prompt_range``, output lengths uniform in ``output_range``; half the prompts open with
    one of four shared prefixes of ``prefix_len`` tokens (a system prompt, a few-shot preamble), the
    rest of every prompt is random token ids below ``vocab``. The same for the same arguments."""
    rng = random.Random(seed)
    prefixes = [[rng.randrange(vocab) for _ in range(prefix_len)] for _ in range(4)]
    low, high = prompt_range
    trace = []
    for i in range(num_requests):
        shared = rng.random() < 0.5
        length = rng.randint(max(low, prefix_len + 16) if shared else low, high)
        head = list(rng.choice(prefixes)) if shared else []
        prompt = head + [rng.randrange(vocab) for _ in range(length - len(head))]
        trace.append(TraceRequest(f"r{i}", tuple(prompt), rng.randint(*output_range)))
    return trace
