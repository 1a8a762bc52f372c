"""Lab 99-03 benchmark: one decode step at full batch, each step of the lab against the physical bound (GPU).

    python phase-99-capstone/labs/lab-03-model-at-the-roofline/bench.py --out DIR   # H200: under 8 minutes
    python phase-99-capstone/labs/lab-03-model-at-the-roofline/bench.py --quick     # trace A only, fewer replays
    python phase-99-capstone/labs/lab-03-model-at-the-roofline/bench.py --smoke     # CPU: a tiny model, every path
    python phase-99-capstone/labs/lab-03-model-at-the-roofline/bench.py --gemms-only   # the matrix products alone
    python phase-99-capstone/labs/lab-03-model-at-the-roofline/bench.py --plot-from DIR/results.md

One process builds lab 99-01's ~1.1B-parameter Llama-shaped model in bfloat16 with random weights on the
GPU (the model of lab 99-02's benchmark) and, for each of lab 99-02's two traces (A: lab 99-01's trace;
B: decode-heavy), brings lab 99-02's reference engine to a decode step at full batch: every request of
the trace admitted, every prompt done, 16 decode steps run (the middle of lab 99-02's profiling window).
That step's inputs and KV cache are then replayed, from one CUDA graph, by the forward pass of:

0. lab 99-02's runner (transformers' modules, lab 04-06's decode kernel with its defaults): the baseline;
1. to 5. this lab's runner with steps 1 to k (``fused_steps``), the implementation under test
   (``--impl`` or ``LAB_IMPL``; the reference solution by default);
C. lab 99-02's forward pieces compiled by ``torch.compile`` (``mode="max-autotune-no-cudagraphs"``: inductor
   fuses and autotunes, this benchmark's CUDA graph replays the result), in a child process whose time
   is bounded: past ``--compile-timeout-s`` it is stopped and run again in the default mode, and the
   report says so.

Measured in the same run: the read bandwidth (``labkit.bench.read_bandwidth``; the copy bandwidth too,
for reference) and the bfloat16 matrix rate (``labkit.bench.matmul_tflops``: 8192 x 8192 x 8192
products back to back, after a second of them for the clocks to ramp up). From them, the **physical
bound** of the step: each matrix product (four per layer, the head over the batch's rows) at the
matrix rate, or its weights at the read bandwidth if that is slower, plus the KV cache the attention
reads (every sequence's tokens, keys and values, every layer) at the read bandwidth. Nothing
else is counted: the norms and activations move tens of megabytes against seven gigabytes.

For each engine: the step's time (median of CUDA-graph replays, the L2 cache flushed before each),
its ratio to the bound, the kernel time by category (attention, GEMM, norm and elementwise, sampling,
other) from ``torch.profiler`` over replays, and how many of the batch's greedy tokens equal engine 0's
(bfloat16: other kernels round differently). Then the decode attention alone, under a few
configurations around step 5's (one layer of trace A's batch), each matrix product alone (cuBLAS, and a
plain Triton split-K GEMM beside it: would splitting K fill the GPU better at 256 rows?), and the bar:
step 5 within 1.3x of its bound on both traces, and faster than ``torch.compile``. ``--gemms-only``
prints the matrix products' table alone, in about a minute.

``--out DIR`` writes ``results.md`` and ``results.svg`` (drawn from that table; ``--plot-from`` redraws it
on any machine). Without a CUDA GPU it stops at once, unless ``--smoke`` asks for the tiny CPU run
(every code path, Triton's interpreter; its timings mean nothing).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, load_impl, load_reference, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

import triton  # noqa: E402  (after select_backend: the interpreter is chosen before Triton loads)
import triton.language as tl  # noqa: E402

MODEL_1B = bench.MODEL_1B  # the capstone benchmarks' model: ~1.1B parameters, random weights
MODEL_TINY = bench.llama_config(500, 72, 88, 2, 8, 2, 16, 256)  # --smoke, on a CPU (bench.llama_config's order)
SEED = 0
BLOCK_SIZE = 16
DECODE_STEPS = 16  # decode steps after the last prompt token, before the measured step
MAX_NEW_TOKENS = 128  # outputs cut here while reaching the step: a smaller cache, the same step
CATEGORIES = ("attention", "GEMM", "norm and elementwise", "sampling", "other")
RUNGS = (
    "0. lab 99-02: transformers' modules",
    "1. merged weights",
    "2. + fused norms, SiLU-and-mul",
    "3. + rotary fused with the KV write",
    "4. + greedy sampling on the GPU",
    "5. + tuned decode attention",
)
COMPILED = "C. torch.compile of lab 99-02's pieces"


@dataclass(frozen=True)
class TraceSpec:
    name: str
    num_requests: int
    prompt_range: tuple[int, int]
    output_range: tuple[int, int]
    prefix_len: int


@dataclass(frozen=True)
class Setup:
    model: dict
    dtype: str
    traces: tuple[TraceSpec, ...]
    max_num_batched_tokens: int
    reps: int  # timed graph replays per engine
    profile_steps: int  # replays under torch.profiler
    sweep: bool  # time the decode attention under other configurations
    compile_mode: str
    compile_backend: str
    compile_timeout_s: float
    budget_s: float


# Lab 99-02's traces: the same generator, the same seed, the same requests.
TRACE_A = TraceSpec("A: lab 99-01's trace", 256, (128, 1024), (64, 256), 256)
TRACE_B = TraceSpec("B: decode-heavy", 256, (128, 512), (512, 1024), 128)
# The budget leaves room under 8 minutes for the imports before it starts and the report after it ends.
GPU_SETUP = Setup(MODEL_1B, "bfloat16", (TRACE_A, TRACE_B), 4096, 60, 20, True, "max-autotune-no-cudagraphs",
                  "inductor", 240.0, 440.0)
QUICK_SETUP = Setup(MODEL_1B, "bfloat16", (TRACE_A,), 4096, 20, 5, False, "default", "inductor", 150.0, 300.0)
SMOKE_SETUP = Setup(MODEL_TINY, "float32", (TraceSpec("A: lab 99-01's trace", 6, (16, 48), (24, 32), 16),
                                            TraceSpec("B: decode-heavy", 4, (16, 32), (24, 32), 16)),
                    64, 2, 1, True, "default", "eager", 600.0, 1800.0)


def setup_for(args) -> Setup:
    """The run's setup, with only the traces ``--traces`` names."""
    import dataclasses

    setup = SMOKE_SETUP if args.smoke else QUICK_SETUP if args.quick else GPU_SETUP
    wanted = getattr(args, "traces", "AB") or "AB"
    traces = tuple(spec for spec in setup.traces if spec.name[:1] in wanted)
    if not traces:
        raise SystemExit(f"--traces {wanted}: this run's setup has only trace(s) "
                         f"{', '.join(spec.name[:1] for spec in setup.traces)}")
    return dataclasses.replace(setup, traces=traces)


# --------------------------------------------------------------------------------------------
# The measured step: lab 99-02's engine brought to a decode step at full batch
# --------------------------------------------------------------------------------------------


@dataclass
class State:
    """A decode step at full batch: the runner of lab 99-02's engine that ran it (its KV cache, its
    inputs on the device) and the step's sequence lengths."""

    runner: object
    batch: int
    seq_lens: list[int]


def make_trace(spec: TraceSpec, vocab: int):
    return bench.serving_trace(spec.num_requests, spec.prompt_range, spec.output_range, spec.prefix_len, vocab, SEED)


def decode_state(gpu02, model, spec: TraceSpec, setup: Setup, torch) -> State:
    """Lab 99-02's reference engine, eager and waiting for each step, serving ``spec``'s trace until every
    prompt is done, then ``DECODE_STEPS`` decode steps: its runner holds the last step's inputs and the
    cache its attention reads. Outputs are cut at ``MAX_NEW_TOKENS`` (the cache holds no more), far past
    the step: every request still decodes there (the first prompts done have decoded since, up to a few
    dozen tokens; trace A's shortest output is 64)."""
    trace = make_trace(spec, setup.model["vocab_size"])
    blocks = sum(-(-(len(r.prompt) + MAX_NEW_TOKENS) // BLOCK_SIZE) for r in trace) + 16
    engine = gpu02.Engine(model, num_gpu_blocks=blocks, block_size=BLOCK_SIZE, max_num_seqs=len(trace),
                          max_num_batched_tokens=setup.max_num_batched_tokens, cudagraph_mode="none",
                          async_scheduling=False)
    for r in trace:
        engine.add_request(r.request_id, list(r.prompt), min(r.max_new_tokens, MAX_NEW_TOKENS))
    while engine.waiting or any(r.num_computed_tokens < len(r.prompt_token_ids) for r in engine.running):
        engine.step()
    for _ in range(DECODE_STEPS):
        engine.step()
    runner = engine.runner
    runner.stream.synchronize()
    shape = runner.last_shape
    if not (shape.uniform_decode and shape.num_reqs == len(trace)):
        raise RuntimeError(f"trace {spec.name}: the step reached is not a decode at full batch: {shape}")
    return State(runner, shape.num_reqs, runner.buffers.seq_lens.np[: shape.num_reqs].tolist())


def adopt(runner, state: State) -> None:
    """Make ``runner`` run ``state``'s step: the same KV cache, the same inputs on the device."""
    n, src, dst = state.batch, state.runner.buffers, runner.buffers
    runner.kv_caches = state.runner.kv_caches
    for name in ("input_ids", "positions", "slot_mapping", "seq_lens", "logits_indices"):
        getattr(dst, name).device[:n].copy_(getattr(src, name).device[:n])
    dst.query_start_loc.device[: n + 1].copy_(src.query_start_loc.device[: n + 1])
    runner.input_batch.block_table.table.device[:n].copy_(state.runner.input_batch.block_table.table.device[:n])


# --------------------------------------------------------------------------------------------
# torch.compile of lab 99-02's forward pieces
# --------------------------------------------------------------------------------------------


def _to_attention(layer, hidden, cos, sin, q_out, k_out, v_out, rotate_half):
    attn, t = layer.self_attn, hidden.shape[0]
    head_dim = q_out.shape[-1]
    x = layer.input_layernorm(hidden)
    q = attn.q_proj(x).view(t, -1, head_dim)
    k = attn.k_proj(x).view(t, -1, head_dim)
    q_out.copy_(q * cos[:, None] + rotate_half(q) * sin[:, None])
    k_out.copy_(k * cos[:, None] + rotate_half(k) * sin[:, None])
    v_out.copy_(attn.v_proj(x).view(t, -1, head_dim))


def _from_attention(layer, residual, attn_out):
    hidden = residual + layer.self_attn.o_proj(attn_out.reshape(attn_out.shape[0], -1))
    return hidden + layer.mlp(layer.post_attention_layernorm(hidden))


def compiled_pieces_class(torch, mode: str, backend: str):
    """Lab 99-02's ``ForwardPieces``, the same modules and the same arithmetic, as three functions compiled
    once each: the layers are arguments (their weights are the graph's inputs), so one compiled graph
    serves every layer."""
    from transformers.models.llama.modeling_llama import rotate_half

    options = dict(fullgraph=True, dynamic=False, backend=backend)
    if backend == "inductor":
        options["mode"] = mode

    def first(embed, rotary_emb, layer, input_ids, positions, residual, cos_out, sin_out, q, k, v):
        hidden = embed(input_ids)
        cos, sin = rotary_emb(hidden[None], positions[None])
        cos_out.copy_(cos[0])
        sin_out.copy_(sin[0])
        residual.copy_(hidden)
        _to_attention(layer, hidden, cos[0], sin[0], q, k, v, rotate_half)

    def middle(previous, layer, residual, attn_out, cos, sin, q, k, v):
        hidden = _from_attention(previous, residual, attn_out)
        residual.copy_(hidden)
        _to_attention(layer, hidden, cos, sin, q, k, v, rotate_half)

    def last(layer, norm, lm_head, residual, attn_out, rows, logits_out, sampled_out):
        hidden = norm(_from_attention(layer, residual, attn_out))
        logits = lm_head(hidden[rows]).float()
        logits_out.copy_(logits)
        sampled_out.copy_(torch.argmax(logits, dim=-1))

    first_c = torch.compile(first, **options)
    middle_c = torch.compile(middle, **options)
    last_c = torch.compile(last, **options)

    class CompiledPieces:
        def __init__(self, model, buffers) -> None:
            self.model, self.b = model, buffers
            self.layers = model.model.layers
            self.num_layers = len(self.layers)

        def first(self, t: int) -> None:
            b, inner = self.b, self.model.model
            first_c(inner.embed_tokens, inner.rotary_emb, self.layers[0], b.input_ids.device[:t],
                    b.positions.device[:t], b.residual[:t], b.cos[:t], b.sin[:t], b.q[:t], b.k[:t], b.v[:t])

        def middle(self, layer: int, t: int) -> None:
            b = self.b
            middle_c(self.layers[layer - 1], self.layers[layer], b.residual[:t], b.attn_out[:t], b.cos[:t],
                     b.sin[:t], b.q[:t], b.k[:t], b.v[:t])

        def last(self, t: int, r: int) -> None:
            b = self.b
            last_c(self.layers[-1], self.model.model.norm, self.model.lm_head, b.residual[:t], b.attn_out[:t],
                   b.logits_indices.device[:r], b.logits[:r], b.sampled[:r])

    return CompiledPieces


# --------------------------------------------------------------------------------------------
# Timing and profiling one captured step
# --------------------------------------------------------------------------------------------


class Replay:
    """``fn`` captured once in a CUDA graph (warmed up first on a side stream), or on a CPU ``fn`` itself."""

    def __init__(self, fn, torch) -> None:
        self.torch, self.fn, self.graph = torch, fn, None
        start = time.perf_counter()
        if torch.cuda.is_available():
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            self.warmup_s = time.perf_counter() - start
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                fn()
            torch.cuda.synchronize()
        else:
            fn()
            self.warmup_s = time.perf_counter() - start

    def __call__(self) -> None:
        if self.graph is not None:
            self.graph.replay()
        else:
            self.fn()

    def median_ms(self, reps: int) -> float:
        """Median of ``reps`` replays, each timed with CUDA events after a 256 MiB write that evicts the L2
        cache (``labkit.bench.graph_time_us``'s way); on a CPU, wall time."""
        torch = self.torch
        if self.graph is None:
            times = []
            for _ in range(reps):
                start = time.perf_counter()
                self()
                times.append(1e3 * (time.perf_counter() - start))
            return statistics.median(times)
        flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        self()
        for start, end in zip(starts, ends, strict=True):
            flush.zero_()
            start.record()
            self()
            end.record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends, strict=True))

    def release(self) -> None:
        if self.graph is not None:
            self.graph.reset()
            self.graph = None


def category(name: str) -> str:
    """The category of a kernel (GPU) or operator (CPU) by its name."""
    n = name.lower()
    if any(k in n for k in ("_partition_kernel", "_reduce_kernel", "_prefill_kernel", "paged", "attention")):
        return "attention"
    if "argmax" in n:
        return "sampling"
    if any(k in n for k in ("gemm", "nvjet", "cutlass", "xmma", "cublas", "matmul", "triton_tem", "splitk",
                            "aten::mm", "aten::addmm", "aten::linear", "aten::bmm")):
        return "GEMM"
    if any(k in n for k in ("norm", "silu", "rotary", "elementwise", "reduce_kernel", "triton_poi", "triton_red",
                            "triton_per", "index", "cat", "copy", "fill", "embedding", "gather", "scatter",
                            "aten::")):
        return "norm and elementwise"
    return "other"


def profile(replay: Replay, steps: int, torch) -> dict:
    """Kernel milliseconds per step by category, and kernels per step, over ``steps`` replays
    (torch.profiler; on a CPU its ``aten::`` operators, which mean little)."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            replay()
        if cuda:
            torch.cuda.synchronize()
    totals = dict.fromkeys(CATEGORIES, 0.0)
    kernels = 0
    for event in prof.events():
        on_device = "cuda" in str(getattr(event, "device_type", "")).lower()
        if cuda and not on_device:
            continue
        if not cuda and (not event.name.startswith("aten::") or event.cpu_parent is not None):
            continue  # on a CPU: top-level operators only
        if "memset" in event.name.lower() or "memcpy" in event.name.lower():
            continue
        kernels += 1
        totals[category(event.name)] += event.time_range.elapsed_us() / 1e3
    return {"categories": {k: v / steps for k, v in totals.items()}, "kernels": kernels / steps}


@dataclass
class Measured:
    name: str
    step_ms: float = math.nan
    categories: dict = field(default_factory=dict)
    kernels: float = math.nan
    tokens: list = field(default_factory=list)
    note: str = ""
    skipped: str = ""


def measure(name: str, runner, state: State, setup: Setup, torch) -> Measured:
    """Capture ``runner``'s forward pass of ``state``'s step once, time its replays, profile them, keep the
    sampled tokens."""
    n = state.batch
    replay = Replay(lambda: runner._forward(n, n, n, 1, n), torch)
    try:
        step_ms = replay.median_ms(setup.reps)
        prof = profile(replay, setup.profile_steps, torch)
        replay()
        tokens = runner.buffers.sampled[:n].tolist()
    finally:
        replay.release()
    return Measured(name, step_ms, prof["categories"], prof["kernels"], tokens,
                    note=f"first runs (compiling) {replay.warmup_s:.1f} s")


# --------------------------------------------------------------------------------------------
# The bound and the rates
# --------------------------------------------------------------------------------------------


def gemm_shapes(model: dict, batch: int) -> list[tuple[int, int, int]]:
    """(m, k, n) of every matrix product of a decode step of ``batch`` rows: per layer q, k and v, the output
    projection, gate and up, down; then the head over the batch's rows."""
    hidden, inter = model["hidden_size"], model["intermediate_size"]
    heads, kv, dim = model["num_attention_heads"], model["num_key_value_heads"], model["head_dim"]
    layer = [(batch, hidden, (heads + 2 * kv) * dim), (batch, heads * dim, hidden), (batch, hidden, 2 * inter),
             (batch, inter, hidden)]
    return layer * model["num_hidden_layers"] + [(batch, hidden, model["vocab_size"])]


def physical_bound(model: dict, state: State, tflops: float, read_bw: float, itemsize: int) -> dict:
    """The step's physical bound: each product at ``tflops``, or its weights at ``read_bw`` when slower;
    plus the KV cache at ``read_bw`` (bytes/s)."""
    gemms = gemm_shapes(model, state.batch)
    flops = sum(2 * m * k * n for m, k, n in gemms)
    weights = sum(k * n * itemsize for _, k, n in gemms)
    gemm_ms = sum(max(2 * m * k * n / (tflops * 1e12), k * n * itemsize / read_bw) for m, k, n in gemms) * 1e3
    kv = model["num_hidden_layers"] * bench.kv_bytes(state.seq_lens, model["num_key_value_heads"], model["head_dim"],
                                                     itemsize)
    kv_ms = kv / read_bw * 1e3
    return {"flops": flops, "weights": weights, "gemm_ms": gemm_ms, "weights_ms": weights / read_bw * 1e3,
            "kv_bytes": kv, "kv_ms": kv_ms, "bound_ms": gemm_ms + kv_ms}


GEMM_NAMES = ("q, k and v (merged)", "output projection", "gate and up (merged)", "down", "head")
# The split-K kernel's configurations tried on each product: (splits, BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).
SPLIT_K_CONFIGS = [(splits, block_m, block_n, 64, 4, stages) for splits in (1, 2, 4)
                   for block_m, block_n in ((64, 64), (128, 64), (64, 128), (128, 128)) for stages in (3, 4)]


@triton.jit
def split_k_gemm_kernel(x_ptr, w_ptr, part_ptr, M, N, K, k_per_split,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile of ``x @ w.T`` over one split of K, in float32 into ``part[split]``. A
    step would sum the splits in the kernel that reads the product next; that sum is not timed here."""
    pid_m, pid_n, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(split * k_per_split, (split + 1) * k_per_split, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :])
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None])  # w is [N, K], as F.linear takes it
        acc += tl.dot(x, w)
    tl.store(part_ptr + split * M * N + rows[:, None] * N + cols[None, :], acc)


def time_split_k(x, w, torch, reps: int) -> tuple[float, tuple] | None:
    """The fastest of :data:`SPLIT_K_CONFIGS` for ``x @ w.T`` (µs under CUDA-graph replay, L2 flushed) and
    its configuration; a configuration whose result is off is not timed. None if no configuration fits
    the shape."""
    (m, k), n = x.shape, w.shape[0]
    want = (x.double() @ w.double().T)
    part = torch.empty(max(c[0] for c in SPLIT_K_CONFIGS), m, n, device=x.device, dtype=torch.float32)
    best = None
    for splits, block_m, block_n, block_k, warps, stages in SPLIT_K_CONFIGS:
        if m % block_m or n % block_n or k % (splits * block_k):
            continue

        def launch(splits=splits, block_m=block_m, block_n=block_n, block_k=block_k, warps=warps, stages=stages):
            split_k_gemm_kernel[(m // block_m, n // block_n, splits)](
                x, w, part, m, n, k, k // splits, block_m, block_n, block_k, num_warps=warps, num_stages=stages)

        launch()
        error = (part[:splits].double().sum(0) - want).norm() / want.norm()
        if not error < 1e-2:
            continue
        replay = Replay(launch, torch)
        us = 1e3 * replay.median_ms(reps)
        replay.release()
        if best is None or us < best[0]:
            best = (us, (splits, block_m, block_n, block_k, warps, stages))
    return best


def time_gemms(model: dict, batch: int, tflops: float, read_bw: float, dtype, torch, reps: int) -> list[list[str]]:
    """Each matrix product of a decode step of ``batch`` rows alone (``F.linear``, as engines 1 to 5 run it,
    random inputs of ``dtype``): microseconds under CUDA-graph replay with the L2 cache flushed (each layer's
    weights arrive cold), through cuBLAS and, for comparison, cuBLASLt (torch's other BLAS backend) and the
    best of a few configurations of a plain Triton split-K GEMM (GPU only); its bound (its FLOPs at
    ``tflops``, or its weights at ``read_bw`` if slower) and the time per step. Says which products keep
    the GEMMs from their bound: at 256 rows the narrow ones (2048 outputs) fill few of the GPU's
    multiprocessors, and whether splitting K is the cure."""
    import torch.nn.functional as F

    shapes = gemm_shapes(model, batch)
    counts = [model["num_hidden_layers"]] * 4 + [1]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    itemsize = torch.empty((), dtype=dtype).element_size()
    rows, total_us, total_bound_us = [], 0.0, 0.0
    for name, (m, k, n), count in zip(GEMM_NAMES, shapes[:4] + shapes[-1:], counts, strict=True):
        gen = torch.Generator(device=device).manual_seed(0)
        x = torch.randn(m, k, generator=gen, device=device).to(dtype)
        w = (torch.randn(n, k, generator=gen, device=device) * 0.02).to(dtype)
        times = {}
        for library in ("cublas", "cublaslt") if device == "cuda" else ("default",):
            previous = torch.backends.cuda.preferred_blas_library() if device == "cuda" else None
            try:
                if previous is not None:
                    torch.backends.cuda.preferred_blas_library(library)
                replay = Replay(lambda x=x, w=w: F.linear(x, w), torch)  # captured under this backend
                times[library] = 1e3 * replay.median_ms(reps)
                replay.release()
            finally:
                if previous is not None:
                    torch.backends.cuda.preferred_blas_library(previous)
        split_k = time_split_k(x, w, torch, reps) if device == "cuda" else None
        us = next(iter(times.values()))
        bound_us = max(2 * m * k * n / (tflops * 1e12), k * n * itemsize / read_bw) * 1e6
        total_us += count * us
        total_bound_us += count * bound_us
        rows.append([name, f"{m} x {k} x {n}", str(count), f"{us:.1f}", f"{2 * m * k * n / (us * 1e-6) / 1e12:.0f}",
                     f"{times['cublaslt']:.1f}" if "cublaslt" in times else "-",
                     f"{split_k[0]:.1f} {split_k[1]}" if split_k else "-", f"{bound_us:.1f}",
                     f"{us / bound_us:.2f}", f"{count * us / 1e3:.3f}"])
        del x, w
    rows.append(["all, per step", "", "", "", "", "", "", f"{total_bound_us:.1f}", f"{total_us / total_bound_us:.2f}",
                 f"{total_us / 1e3:.3f}"])
    return rows


GEMM_HEADERS = ["product", "m x k x n", "per step", "µs (cuBLAS)", "TFLOP/s", "µs (cuBLASLt)",
                "µs (Triton split-K) (splits, BLOCK_M, BLOCK_N, BLOCK_K, warps, stages)", "bound µs",
                "x bound", "ms per step"]


# --------------------------------------------------------------------------------------------
# The decode attention's configurations
# --------------------------------------------------------------------------------------------


def sweep_attention(lab, state: State, model: dict, read_bw: float, torch, reps: int,
                    left) -> list[list[str]]:
    """Layer 0's decode attention of ``state``'s batch under step 5's configuration, lab 04-06's defaults
    and their neighbours: tile, warps, stages, splits. One row per configuration: microseconds, the read
    bandwidth's share (the layer's K and V bytes over the time). Stops when ``left()`` seconds run low."""
    decode = load_reference("04-06")
    n, heads, dim = state.batch, model["num_attention_heads"], model["head_dim"]
    k_cache, v_cache = state.runner.kv_caches[0]
    table = state.runner.input_batch.block_table.table.device[:n]
    seq_lens = state.runner.buffers.seq_lens.device[:n]
    gen = torch.Generator(device=k_cache.device).manual_seed(0)
    q = torch.randn(n, heads, dim, generator=gen, device=k_cache.device).to(k_cache.dtype)
    out = torch.empty_like(q)
    layer_bytes = bench.kv_bytes(state.seq_lens, model["num_key_value_heads"], dim, k_cache.element_size())
    sms = torch.cuda.get_device_properties(k_cache.device).multi_processor_count if k_cache.is_cuda else 132
    chosen = lab.choose_decode_config(n, model["num_key_value_heads"], dim, k_cache.element_size(),
                                      table.shape[1] * BLOCK_SIZE, sms)
    candidates = [("step 5's choice", chosen)]
    for tile in (64, 128, 256):
        for warps in (2, 4, 8):
            for stages in (2, 3):
                config = lab.DecodeConfig(chosen.num_splits, tile, warps, stages)
                if config != chosen:
                    candidates.append(("", config))
    for splits in (2, 4):
        if splits != chosen.num_splits:
            candidates.append(("", lab.DecodeConfig(splits, chosen.tile_tokens, chosen.num_warps, chosen.num_stages)))
    rows = []

    def time_it(fn) -> float:
        replay = Replay(fn, torch)
        try:
            return 1e3 * replay.median_ms(reps)
        finally:
            replay.release()

    try:
        us = time_it(lambda: decode.paged_decode(q, k_cache, v_cache, table, seq_lens))
        rows.append(["lab 04-06's paged_decode, its defaults (new tensor)", f"{us:.1f}",
                     f"{layer_bytes / (us * 1e-6) / read_bw:.0%}", "engines 0-4"])
    except Exception as err:  # noqa: BLE001 (a configuration that does not run is reported, not fatal)
        rows.append(["lab 04-06's paged_decode, its defaults (new tensor)", "-", "-", f"failed: {str(err)[:80]}"])
    for note, config in candidates:
        label = f"splits {config.num_splits}, tile {config.tile_tokens}, warps {config.num_warps}, " \
                f"stages {config.num_stages}"
        if left() < 8:
            rows.append([label, "-", "-", "not timed: the budget ran out"])
            continue
        try:
            us = time_it(lambda c=config: lab.decode_attention(q, k_cache, v_cache, table, seq_lens, out, c))
            rows.append([label, f"{us:.1f}", f"{layer_bytes / (us * 1e-6) / read_bw:.0%}", note])
        except Exception as err:  # noqa: BLE001
            rows.append([label, "-", "-", f"failed: {str(err).splitlines()[0][:80]}"])
        gc.collect()
    return rows


# --------------------------------------------------------------------------------------------
# The compiled engine, in a child process
# --------------------------------------------------------------------------------------------


def compiled_child(args) -> int:
    """``--compile-child PATH``: build the model, reach each trace's state, measure lab 99-02's runner with
    compiled pieces, write a JSON file at PATH."""
    import torch
    import transformers

    setup = setup_for(args)
    torch.set_grad_enabled(False)
    torch._dynamo.config.cache_size_limit = 64
    gpu02 = load_reference("99-02")
    device = "cpu" if args.smoke else "cuda"
    model = load_reference("99-01").build_model(transformers.LlamaConfig(**setup.model), seed=SEED,
                                                dtype=getattr(torch, setup.dtype), device=device)
    pieces_class = compiled_pieces_class(torch, args.compile_child_mode, setup.compile_backend)
    result = {"mode": args.compile_child_mode, "backend": setup.compile_backend, "traces": {}}
    for spec in setup.traces:
        state = decode_state(gpu02, model, spec, setup, torch)
        runner = gpu02.ModelRunner(model, 2, BLOCK_SIZE, state.batch, state.batch, None, "none")
        adopt(runner, state)
        runner.pieces = pieces_class(model, runner.buffers)
        start = time.perf_counter()
        run = measure(COMPILED, runner, state, setup, torch)
        result["traces"][spec.name] = {"step_ms": run.step_ms, "categories": run.categories, "kernels": run.kernels,
                                       "tokens": run.tokens, "first_s": time.perf_counter() - start}
        del runner, state
        gc.collect()
    Path(args.compile_child).write_text(json.dumps(result))
    return 0


def run_compiled(args, setup: Setup, timeout: float, mode: str, notes: list[str]) -> dict | None:
    """The child process of ``compiled_child`` in ``mode``, stopped after ``timeout`` seconds; its JSON, or None."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"lab9903-compiled-{os.getpid()}-{mode}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--compile-child", str(path), "--compile-child-mode",
               mode, "--traces", args.traces]
    command += (["--smoke"] if args.smoke else []) + (["--quick"] if args.quick else [])
    if args.impl:
        command += ["--impl", args.impl]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        notes.append(f"torch.compile in mode {mode!r} was stopped after {timeout:.0f} s (model, states and compile "
                     "included).")
        return None
    if done.returncode != 0 or not path.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        notes.append(f"torch.compile in mode {mode!r} failed: {' / '.join(tail)[:300]}")
        return None
    result = json.loads(path.read_text())
    path.unlink()
    result["child_s"] = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------------------------
# Report and plot
# --------------------------------------------------------------------------------------------

HEADERS = ["engine", "step (ms)", "x bound", "against 0.", *CATEGORIES, "kernels per step", "tokens as 0."]


def report(setup: Setup, header: str, rates: dict, results: dict, sweep_rows: dict, gemm_rows,
           compiled: dict | None,
           elapsed: float, notes: list[str]) -> str:
    model = setup.model
    lines = [
        "# Lab 99-03 results", "",
        f"{header}. Run {datetime.date.today().isoformat()}, {elapsed:.0f} s in all (model build included).", "",
        f"Measured in this run: read bandwidth {rates['read'] / 1e12:.2f} TB/s (1 GiB read once by a Triton "
        f"kernel), copy bandwidth {rates['copy'] / 1e12:.2f} TB/s (read + write), bf16 matrix rate "
        f"{rates['tflops']:.0f} TFLOP/s (8192 x 8192 x 8192 torch.matmul products back to back, after a second of "
        "them for the clocks to ramp up).", "",
        f"Model: Llama-shaped, hidden {model['hidden_size']}, {model['num_hidden_layers']} layers, "
        f"{model['num_attention_heads']} query heads and {model['num_key_value_heads']} KV heads of "
        f"{model['head_dim']}, MLP {model['intermediate_size']}, vocabulary {model['vocab_size']}; "
        f"{setup.dtype}, random weights (seed {SEED}); blocks of {BLOCK_SIZE} tokens.", "",
        "Each engine replays the same decode step (lab 99-02's engine brought to full batch: every prompt done, "
        f"{DECODE_STEPS} decode steps run) from one CUDA graph; step: median of {setup.reps} replays, the L2 cache "
        f"flushed before each; categories: kernel milliseconds per step by torch.profiler over {setup.profile_steps} "
        "replays; tokens as 0.: the batch's greedy tokens equal to engine 0's (bfloat16 rounds differently in "
        "other kernels).", "",
    ]
    for spec in setup.traces:
        if spec.name not in results:
            continue
        res = results[spec.name]
        b, lens = res["bound"], res["seq_lens"]
        lines += [
            f"## Trace {spec.name}", "",
            f"The step: {len(lens)} requests decoding, contexts of {min(lens)} to {max(lens)} tokens (mean "
            f"{sum(lens) / len(lens):.0f}).", "",
            f"Physical bound: the matrix products {b['gemm_ms']:.3f} ms ({b['flops'] / 1e9:.0f} GFLOP at "
            f"{rates['tflops']:.0f} TFLOP/s; their {b['weights'] / 1e9:.2f} GB of weights would take "
            f"{b['weights_ms']:.3f} ms at the read bandwidth), the KV cache {b['kv_ms']:.3f} ms "
            f"({b['kv_bytes'] / 1e9:.2f} GB at the read bandwidth): **{b['bound_ms']:.3f} ms**; 1.3x the bound: "
            f"{1.3 * b['bound_ms']:.3f} ms.", "",
        ]
        runs = res["runs"]
        base = runs.get(RUNGS[0])
        rows = []
        for name in [*RUNGS, COMPILED]:
            run = runs.get(name)
            if run is None or run.skipped:
                rows.append([name, "-", "-", "-", *["-"] * len(CATEGORIES), "-",
                             f"skipped: {run.skipped}" if run else "not run"])
                continue
            against = f"{base.step_ms / run.step_ms:.2f}x" if base and not base.skipped else "-"
            same = sum(a == c for a, c in zip(run.tokens, base.tokens, strict=False)) if base and base.tokens else None
            rows.append([name, f"{run.step_ms:.3f}", f"{run.step_ms / b['bound_ms']:.2f}", against,
                         *[f"{run.categories.get(c, 0.0):.3f}" for c in CATEGORIES], f"{run.kernels:.0f}",
                         f"{same}/{len(run.tokens)}" if same is not None else "-"])
        lines += [bench.markdown_table(HEADERS, rows), ""]
        lines += ["Notes on the engines: " + "; ".join(f"{name.split(':')[0].split(' +')[0]}: {run.note}"
                                                       for name, run in runs.items() if run.note) + ".", ""]
    for trace, rows in sweep_rows.items():
        lines += [f"## The decode attention alone (layer 0 of trace {trace[:1]}'s step)", "",
                  "Microseconds per call under CUDA-graph replay (L2 flushed); the share of the read bandwidth is "
                  "the layer's K and V bytes over that time.", "",
                  bench.markdown_table(["configuration", "µs", "of read bandwidth", "note"], rows), ""]
    if gemm_rows:
        lines += ["## The matrix products alone", "",
                  "Each product of the step on random inputs, microseconds under CUDA-graph replay (L2 flushed); "
                  "cuBLAS is what the engines run (cuBLASLt: torch's other backend, for comparison); Triton split-K: "
                  f"the fastest of {len(SPLIT_K_CONFIGS)} configurations of bench.py's plain split-K kernel, its "
                  "partial sums left to the next kernel (not timed); bound: its FLOPs at the measured matrix rate, or "
                  "its weights at the read bandwidth if slower.", "",
                  bench.markdown_table(GEMM_HEADERS, gemm_rows), ""]
    lines += ["## torch.compile", ""]
    if compiled:
        lines += [f"Mode {compiled['mode']!r} (backend {compiled['backend']}); the child process took "
                  f"{compiled['child_s']:.0f} s, model and states included; the first runs of trace "
                  f"{setup.traces[0].name[:1]}, compiling, {compiled['first_s']:.0f} s.", ""]
    else:
        lines += ["Not measured (see the notes).", ""]
    lines += ["## The bar", ""]
    for spec in setup.traces:
        res = results.get(spec.name)
        final = res["runs"].get(RUNGS[5]) if res else None
        if not final or final.skipped:
            continue
        ratio = final.step_ms / res["bound"]["bound_ms"]
        comp = res["runs"].get(COMPILED)
        versus = (f", torch.compile's step {comp.step_ms:.3f} ms ({comp.step_ms / final.step_ms:.2f}x engine 5's)"
                  if comp and not comp.skipped else "")
        lines.append(f"- Trace {spec.name}: engine 5 at {ratio:.2f}x its physical bound (bar: 1.3x){versus}.")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def trace_tables(results_md: Path) -> dict[str, list[dict[str, str]]]:
    """The engines' table of each trace in a results.md this script wrote, by the trace's heading."""
    found, trace, headers = {}, None, None
    for line in results_md.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            trace = line.removeprefix("## Trace ").strip() if line.startswith("## Trace ") else None
        if not line.startswith("|"):
            headers = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if headers is None:
            headers = cells
        elif trace and headers[:2] == HEADERS[:2] and not set(line) <= set("|-: "):
            found.setdefault(trace, []).append(dict(zip(headers, cells, strict=True)))
    if not found:
        raise SystemExit(f"{results_md}: no engine table (not a results.md of this bench.py?)")
    return found


def bounds_from(results_md: Path) -> dict[str, float]:
    """Each trace's bound in ms, from the "Physical bound: ... **X ms**" line under its heading."""
    import re

    found, trace = {}, None
    for line in results_md.read_text(encoding="utf-8").splitlines():
        if line.startswith("## Trace "):
            trace = line.removeprefix("## Trace ").strip()
        match = re.search(r"\*\*([0-9.]+) ms\*\*", line)
        if trace and match and line.startswith("Physical bound"):
            found[trace] = float(match.group(1))
    return found


def plot(results_md: Path, path: Path) -> Path:
    """``path`` (an SVG) from ``results_md``: for each trace, each engine's kernel time by category (stacked
    bars), its step time (a dot), the physical bound and 1.3x it (lines)."""
    import textwrap

    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    from labkit import figures

    tables, bounds = trace_tables(results_md), bounds_from(results_md)
    machine = next(line for line in results_md.read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")).split(", ")[0].split(" (")[0]
    plt = figures.pyplot()
    fig, axes = plt.subplots(len(tables), 1, figsize=(figures.WIDTH, 3.6 * len(tables) + 0.8), squeeze=False,
                             layout="constrained")
    colors = dict(zip(CATEGORIES, figures.SERIES, strict=False))
    for ax, (trace, rows) in zip(axes[:, 0], tables.items(), strict=True):
        names = [row["engine"].split(".")[0] if not row["engine"].startswith("C.") else "C" for row in rows]
        for x, row in enumerate(rows):
            bottom = 0.0
            for cat in CATEGORIES:
                value = figures.number(row.get(cat, "-"))
                if value:
                    ax.bar(x, value, 0.6, bottom=bottom, color=colors[cat])
                    bottom += value
            step = figures.number(row.get("step (ms)", "-"))
            if step is not None:
                ax.plot([x], [step], "o", color=figures.COLORS["ink"], markersize=5)
                ax.text(x, step, f" {step:.2f}", ha="left", va="bottom", fontsize=9, color=figures.COLORS["ink"])
            else:
                ax.text(x, 0, " skipped", rotation=90, ha="center", va="bottom", fontsize=9,
                        color=figures.COLORS["muted"])
        if trace in bounds:
            ax.axhline(bounds[trace], color=figures.COLORS["ink"], linestyle="--", linewidth=1.0)
            ax.axhline(1.3 * bounds[trace], color=figures.COLORS["muted"], linestyle=":", linewidth=1.0)
        ax.set_xticks(range(len(rows)), names)
        ax.set_ylabel("ms per decode step")
        ax.set_title(textwrap.fill(f"trace {trace}", 80), loc="left")
        ax.grid(axis="y", alpha=0.6)
        ax.set_axisbelow(True)
    handles = [Rectangle((0, 0), 1, 1, facecolor=colors[c]) for c in CATEGORIES]
    labels = [f"kernels: {c}" for c in CATEGORIES]
    handles += [Line2D([], [], marker="o", linestyle="", color=figures.COLORS["ink"]),
                Line2D([], [], linestyle="--", color=figures.COLORS["ink"]),
                Line2D([], [], linestyle=":", color=figures.COLORS["muted"])]
    labels += ["step (graph replay)", "physical bound", "1.3x the bound"]
    fig.suptitle(textwrap.fill(f"{machine}: one decode step at full batch, engine by engine (0: lab 99-02; "
                               "1-5: this lab's steps; C: torch.compile)", 80), x=0.01, ha="left", fontsize=10)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return figures.save(fig, path)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = bench.arguments(__doc__)
    parser.add_argument("--quick", action="store_true", help="trace A only, fewer replays, torch.compile's default "
                        "mode, no configuration sweep: every path in a few minutes")
    bench.model_options(parser)
    parser.add_argument("--traces", choices=("A", "B", "AB"), default="AB",
                        help="the traces to measure (default both; one per run splits a long run in two)")
    parser.add_argument("--budget-s", type=float, help="the whole run's time budget in seconds")
    parser.add_argument("--gemms-only", action="store_true", help="print the matrix products' table alone "
                        "(cuBLAS, cuBLASLt, Triton split-K against their bound) and stop")
    parser.add_argument("--compile-timeout-s", type=float, help="stop torch.compile's child after this long")
    parser.add_argument("--compile-child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--compile-child-mode", default="default", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0
    torch, transformers = bench.model_stack(BACKEND, args.smoke, gpu="an H200")
    if args.compile_child:
        return compiled_child(args)

    began = time.perf_counter()
    setup = setup_for(args)
    budget = args.budget_s or setup.budget_s

    def left() -> float:
        return budget - (time.perf_counter() - began)

    torch.set_grad_enabled(False)
    if args.smoke:
        torch.set_num_threads(1)
    lab = load_impl(HERE, args.impl)
    gpu02 = load_reference("99-02")
    device = "cpu" if args.smoke else "cuda"
    header = (bench.device_line() if device == "cuda" else "CPU smoke run (a tiny model; timings mean nothing)") + \
        f", transformers {transformers.__version__}"
    print(header, flush=True)
    if device == "cuda":
        rates = {"read": bench.read_bandwidth(), "copy": bench.copy_bandwidth(),
                 "tflops": bench.matmul_tflops(8192, torch.bfloat16)}
    else:
        rates = {"read": 1e11, "copy": 1e11, "tflops": 1.0}  # placeholders: a CPU's timings mean nothing
    print(f"read {rates['read'] / 1e12:.2f} TB/s, copy {rates['copy'] / 1e12:.2f} TB/s, bf16 matmul "
          f"{rates['tflops']:.0f} TFLOP/s", flush=True)
    if args.gemms_only:  # a full batch of the first trace: every request decoding
        rows = time_gemms(setup.model, setup.traces[0].num_requests, rates["tflops"], rates["read"],
                          getattr(torch, setup.dtype), torch, max(setup.reps // 2, 2))
        print(bench.markdown_table(GEMM_HEADERS, rows))
        return 0
    model = load_reference("99-01").build_model(transformers.LlamaConfig(**setup.model), seed=SEED,
                                                dtype=getattr(torch, setup.dtype), device=device)
    itemsize = next(model.parameters()).element_size()
    notes: list[str] = []
    results: dict = {}
    states: dict = {}
    rung_seconds: list[float] = []  # how long each engine took to build, capture, time and profile

    def run_rung(spec: TraceSpec, rung: int) -> None:
        state, runs = states[spec.name], results[spec.name]["runs"]
        name = RUNGS[rung]
        if left() < 2 * max(rung_seconds, default=10.0):
            runs[name] = Measured(name, skipped=f"only {left():.0f} s of the budget left")
            return
        start = time.perf_counter()
        if rung == 0:
            runner = gpu02.ModelRunner(model, 2, BLOCK_SIZE, state.batch, state.batch, None, "none")
        else:
            runner = lab.ModelRunner(model, 2, BLOCK_SIZE, state.batch, state.batch, None, "none", fused_steps=rung)
        adopt(runner, state)
        runs[name] = run = measure(name, runner, state, setup, torch)
        bound = results[spec.name]["bound"]["bound_ms"]
        print(f"trace {spec.name[:1]}, {name}: {run.step_ms:.3f} ms ({run.step_ms / bound:.2f}x the bound), "
              + ", ".join(f"{c} {v:.3f}" for c, v in run.categories.items()), flush=True)
        del runner
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        rung_seconds.append(time.perf_counter() - start)

    # The baseline and the finished lab first (the bar), then the compiled model, then the steps between.
    for spec in setup.traces:
        start = time.perf_counter()
        states[spec.name] = state = decode_state(gpu02, model, spec, setup, torch)
        results[spec.name] = {"bound": physical_bound(setup.model, state, rates["tflops"], rates["read"], itemsize),
                              "seq_lens": state.seq_lens, "runs": {}}
        print(f"trace {spec.name[:1]}: a decode step of {state.batch} requests reached in "
              f"{time.perf_counter() - start:.1f} s; bound {results[spec.name]['bound']['bound_ms']:.3f} ms",
              flush=True)
        for rung in (0, 5):
            run_rung(spec, rung)
    compiled = None
    # What must still fit after torch.compile: the four engines between on each trace, the sweeps, the GEMMs
    # alone, a margin.
    per_engine = statistics.mean(rung_seconds) if rung_seconds else 10.0
    reserve = per_engine * 4 * len(setup.traces) + (40.0 + 15.0 * len(setup.traces) if setup.sweep else 0.0) + 25.0
    timeout = min(args.compile_timeout_s or setup.compile_timeout_s, max(0.0, left() - reserve))
    if timeout >= 60:
        compiled = run_compiled(args, setup, timeout, setup.compile_mode, notes)
        if compiled is None and setup.compile_mode != "default" and left() - reserve >= 90:
            notes.append("torch.compile measured again in its default mode instead.")
            compiled = run_compiled(args, setup, min(150.0, left() - reserve), "default", notes)
    else:
        notes.append(f"torch.compile was not measured: {left():.0f} s of the budget left.")
    if compiled:
        for spec in setup.traces:
            got = compiled["traces"].get(spec.name)
            if got:
                results[spec.name]["runs"][COMPILED] = Measured(
                    COMPILED, got["step_ms"], got["categories"], got["kernels"], got["tokens"],
                    note=f"mode {compiled['mode']}, first runs {got['first_s']:.0f} s")
        compiled["first_s"] = compiled["traces"][setup.traces[0].name]["first_s"]
    for spec in setup.traces:
        for rung in (1, 2, 3, 4):
            run_rung(spec, rung)
    sweep_rows = {}
    for spec in setup.traces if setup.sweep else ():
        if left() > 30:
            sweep_rows[spec.name] = sweep_attention(lab, states[spec.name], setup.model, rates["read"], torch,
                                                    max(setup.reps // 2, 2), left)
        else:
            notes.append(f"The decode attention's configurations on trace {spec.name[:1]} were not timed: "
                         f"{left():.0f} s of the budget left.")
    gemm_rows = None
    if left() > 15:
        batch = states[setup.traces[0].name].batch
        gemm_rows = time_gemms(setup.model, batch, rates["tflops"], rates["read"], getattr(torch, setup.dtype), torch,
                               max(setup.reps // 2, 2))
    else:
        notes.append(f"The matrix products alone were not timed: {left():.0f} s of the budget left.")
    if device != "cuda":
        notes.append("No GPU: the categories are the CPU's torch operators and the rates are placeholders.")

    text = report(setup, header, rates, results, sweep_rows, gemm_rows, compiled, time.perf_counter() - began,
                  notes)
    print()
    bench.write_results(args.out, text, plot, began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
