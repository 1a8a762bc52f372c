"""Lab 99-01 benchmark: the capstone engine against transformers' own serving paths (GPU).

    python phase-99-capstone/labs/lab-01-serving-engine/bench.py --out DIR   # H100: under 5 minutes
    python phase-99-capstone/labs/lab-01-serving-engine/bench.py --smoke     # CPU: a tiny model, every path
    python phase-99-capstone/labs/lab-01-serving-engine/bench.py --impl starter --smoke   # your engine

The engine benchmarked is the reference solution unless ``--impl NAME`` (or ``LAB_IMPL=NAME``, as for the
tests) names another module of the lab folder: ``--impl starter`` times your own ``starter.py``.

One process builds a ~1.1B-parameter Llama-shaped model in bfloat16 with random weights, directly on the
GPU, and serves one seeded trace of requests (``make_trace``: prompt and output lengths drawn uniformly,
half the prompts opening with one of four shared 256-token prefixes) four ways:

1. this lab's engine (the reference solution, or the one ``--impl`` names), every step eager;
2. the same engine with decode-only steps replayed from CUDA graphs (one per batch-size bucket);
3. transformers' ``generate`` in static batches of the trace's requests (a batch runs until its longest
   request is done; only the tokens each request asked for count);
4. transformers' continuous batching with paged attention (``continuous_batching_context_manager``,
   transformers 5), in a child process with a time limit (skipped with the reason if it fails).

It reports output tokens per second and the mean time per output token (TPOT) of each, the ratios,
where the engine's time goes (host timers around the phases of every step; GPU kernel time by kind
from torch.profiler over a window of steps), and the engine's throughput against its batch-size limit
(``max_num_seqs``). The whole run keeps to a time budget (``Setup.budget_s``): the parts that come last
(the batch-size sweep, transformers' continuous batching) shrink or are skipped, with the reason, when
time runs short. ``--out DIR`` writes ``results.md`` and ``results.svg`` (the plot, drawn from that table;
``--plot-from results.md`` redraws it on any machine); without it the tables are printed only.
Without a CUDA GPU it stops at once with a message, unless ``--smoke`` asks for the tiny CPU run
(which checks the code paths; its timings mean nothing).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, load_sibling, triton_env  # noqa: E402
from labkit.testing.loader import ImplNotFoundError, impl_name  # noqa: E402

BACKEND = triton_env.select_backend()

MODEL_1B = bench.MODEL_1B  # the capstone benchmarks' model: ~1.1B parameters, random weights
MODEL_TINY = bench.llama_config(512, 64, 128, 2, 4, 2, 16, 256)  # --smoke, on a CPU (bench.llama_config's order)


@dataclass(frozen=True)
class Setup:
    """Everything a run depends on: the GPU's and the CPU smoke run's."""

    model: dict
    dtype: str
    num_requests: int
    prompt_range: tuple[int, int]
    output_range: tuple[int, int]
    prefix_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    static_batch: int
    sweep: tuple[int, ...]  # max_num_seqs values for the batch-size plot (the largest is max_num_seqs)
    graph_sizes: tuple[int, ...]  # CUDA-graph batch-size buckets for decode steps
    profile_steps: int  # steps under torch.profiler (GPU)
    budget_s: float  # the whole run, model build included
    cb_reserve_s: float  # kept for transformers' continuous batching (the sweep stops to leave it)


GPU_SETUP = Setup(MODEL_1B, "bfloat16", 256, (128, 1024), (64, 256), 256, 256, 4096, 64,
                  (16, 32, 64, 128, 256), (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256), 30, 280.0, 100.0)
SMOKE_SETUP = Setup(MODEL_TINY, "float32", 12, (16, 64), (4, 16), 24, 8, 64, 4, (2, 4, 8), (), 10, 600.0, 60.0)
SEED = 0
BLOCK_SIZE = 16


# --------------------------------------------------------------------------------------------
# The trace
# --------------------------------------------------------------------------------------------


def make_trace(setup: Setup, seed: int = SEED) -> list[bench.TraceRequest]:
    """``num_requests`` requests, all arriving at once (offline serving). Prompt lengths uniform in
    ``prompt_range``, output lengths uniform in ``output_range``; half the prompts open with one of four
    shared prefixes of ``prefix_len`` tokens (a system prompt, a few-shot preamble), the rest of every
    prompt is random token ids (``labkit.bench.serving_trace``)."""
    return bench.serving_trace(setup.num_requests, setup.prompt_range, setup.output_range, setup.prefix_len,
                         setup.model["vocab_size"], seed)


def describe_trace(setup: Setup, trace) -> str:
    prompts = [len(r.prompt) for r in trace]
    outputs = [r.max_new_tokens for r in trace]
    return (f"{len(trace)} requests arriving at once; prompt lengths uniform in {setup.prompt_range[0]}-"
            f"{setup.prompt_range[1]} (mean {sum(prompts) / len(prompts):.0f}), output lengths uniform in "
            f"{setup.output_range[0]}-{setup.output_range[1]} (mean {sum(outputs) / len(outputs):.0f}, "
            f"{sum(outputs)} in all); half the prompts open with one of 4 shared {setup.prefix_len}-token "
            f"prefixes; seed {SEED}")


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    seconds: float = math.nan
    output_tokens: int = 0
    tpot_ms: float = math.nan  # mean over requests of (last token time - first token time) / (n - 1)
    tokens: dict = field(default_factory=dict)  # request id -> output token ids
    note: str = ""
    skipped: str = ""  # why it did not run
    phases_ms: dict = field(default_factory=dict)  # the engine's runs: host time per step, by phase
    steps: int = 0

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else math.nan


def mean_tpot(times: dict) -> float:
    """Mean over requests with two tokens or more of (last - first) / (n - 1), in milliseconds."""
    per_request = [(t[-1] - t[0]) / (len(t) - 1) for t in times.values() if len(t) >= 2]
    return 1e3 * sum(per_request) / len(per_request) if per_request else math.nan


def sync(torch):
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def free_memory(torch):
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def num_blocks_for(trace, headroom: float = 1.25) -> int:
    """Blocks for every request of the trace at once, plus headroom: the pool never forces a preemption."""
    need = sum(-(-(len(r.prompt) + r.max_new_tokens) // BLOCK_SIZE) for r in trace)
    return int(need * headroom) + 1


PHASES = ("schedule", "prepare_inputs", "forward (model runner)", "sample + update")


def new_engine(lab, model, setup: Setup, num_blocks: int, max_num_seqs: int, runner=None):
    """The lab's engine; with ``runner``, an earlier engine's model runner (its caches and CUDA graphs)
    takes the place of the new one, so that one capture serves every run. The new engine's KV-cache
    manager is fresh: no prefix-cache entry points at the reused caches' old contents."""
    engine = lab.Engine(model, num_gpu_blocks=num_blocks, block_size=BLOCK_SIZE, max_num_seqs=max_num_seqs,
                        max_num_batched_tokens=setup.max_num_batched_tokens)
    if runner is not None:
        engine.runner = runner
    return engine


def timed_step(engine, torch, phases: dict):
    """``Engine.step`` taken apart, with a host timer around each phase. The forward's time includes
    waiting for the GPU (a synchronization after it); the sample's ``tolist`` synchronizes anyway,
    so the timers cost the run nothing."""
    t0 = time.perf_counter()
    output = engine.schedule()
    if not output.scheduled_requests:
        return output
    t1 = time.perf_counter()
    inputs = engine.prepare_inputs(output)
    t2 = time.perf_counter()
    logits = engine.runner.execute_model(inputs)
    sync(torch)
    t3 = time.perf_counter()
    engine.update_from_output(output, engine.runner.sample(logits))
    engine.num_steps += 1
    t4 = time.perf_counter()
    for key, dt in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
        phases[key] += dt
    return output


def run_engine(lab, torch, model, trace, setup: Setup, *, num_blocks: int, max_num_seqs: int, runner=None,
               name: str) -> tuple[Run, object]:
    """Serve ``trace`` with the lab's engine (every request arriving at once); returns the run and the
    engine's model runner (to reuse)."""
    engine = new_engine(lab, model, setup, num_blocks, max_num_seqs, runner)
    for r in trace:
        engine.add_request(r.request_id, list(r.prompt), r.max_new_tokens)
    times = {r.request_id: [] for r in trace}
    phases = dict.fromkeys(PHASES, 0.0)
    replays_before = engine.runner.num_graph_replays
    sync(torch)
    start = time.perf_counter()
    while engine.has_unfinished_requests():
        output = timed_step(engine, torch, phases)
        now = time.perf_counter()
        for request in output.scheduled_requests:
            if len(request.output_token_ids) > len(times[request.request_id]):
                times[request.request_id].append(now)
    seconds = time.perf_counter() - start
    replays = engine.runner.num_graph_replays - replays_before
    hits = sum(max(r.num_cached_tokens, 0) for r in engine.requests.values())
    prompt_tokens = sum(len(r.prompt) for r in trace)
    preempted = sum(r.num_preemptions for r in engine.requests.values())
    note = f"{engine.num_steps} steps" + (f" ({replays} replayed from CUDA graphs)" if engine.runner.graphs else "")
    note += f"; {hits} of {prompt_tokens} prompt tokens from the prefix cache; {preempted} preemptions"
    run = Run(name, seconds, sum(len(r.output_token_ids) for r in engine.requests.values()), mean_tpot(times),
              {rid: list(r.output_token_ids) for rid, r in engine.requests.items()}, note,
              phases_ms={k: 1e3 * v / max(engine.num_steps, 1) for k, v in phases.items()}, steps=engine.num_steps)
    return run, engine.runner


def profile_kernels(lab, torch, model, trace, setup: Setup, num_blocks: int, runner, steps: int) -> dict:
    """GPU kernel time per kind, in ms per step, over ``steps`` decode-only steps at full batch (every
    prompt of the trace done), against the same steps' wall time: the difference is time the GPU waits
    for the host. The steps before the window (every prompt's prefill) also compile the kernels."""
    from torch.profiler import ProfilerActivity, profile

    engine = new_engine(lab, model, setup, num_blocks, setup.max_num_seqs, runner)
    for r in trace:
        engine.add_request(r.request_id, list(r.prompt), r.max_new_tokens)
    while engine.has_unfinished_requests() and (engine.waiting or any(
            r.num_computed_tokens < r.num_tokens - 1 for r in engine.running)):
        engine.step()
    for _ in range(3):  # a few decode-only steps outside the window (the first replay of a graph)
        engine.step()
    done = 0
    sync(torch)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        while engine.has_unfinished_requests() and done < steps:
            engine.step()
            done += 1
        sync(torch)
        wall = time.perf_counter() - start
    kinds: dict[str, float] = {}
    for event in prof.key_averages():
        if getattr(event, "device_type", None) is not None and "CUDA" not in str(event.device_type):
            continue
        self_us = getattr(event, "self_device_time_total", None)
        if self_us is None:
            self_us = getattr(event, "self_cuda_time_total", 0)
        if self_us:
            kind = kernel_kind(event.key)
            kinds[kind] = kinds.get(kind, 0.0) + self_us / 1e3
    return {"kernels_ms": {k: v / max(done, 1) for k, v in kinds.items()}, "steps": done,
            "wall_ms": 1e3 * wall / max(done, 1)}


def warm_up(lab, torch, model, trace, setup: Setup, num_blocks: int, runner=None):
    """Serve the trace's first 8 requests (up to 32 new tokens each), untimed: compiles the kernels at
    small batches (prefill, decode with splits). Returns the engine's model runner, to reuse."""
    engine = new_engine(lab, model, setup, num_blocks, setup.max_num_seqs, runner)
    for r in trace[:8]:
        engine.add_request(r.request_id, list(r.prompt), min(r.max_new_tokens, 32))
    while engine.has_unfinished_requests():
        engine.step()
    sync(torch)
    return engine.runner


def run_hf_static(torch, transformers, model, trace, batch_size: int) -> Run:
    """transformers' ``generate`` (greedy, its dense cache, SDPA attention), ``batch_size`` requests at a
    time in trace order, left-padded; each batch generates its longest request's ``max_new_tokens``."""
    model.set_attn_implementation("sdpa")
    device = next(model.parameters()).device

    class Clock(transformers.LogitsProcessor):
        """Called once per decoding step: the step's time."""

        def __init__(self):
            self.times = []

        def __call__(self, input_ids, scores):
            self.times.append(time.perf_counter())
            return scores

    tokens, times = {}, {}
    sync(torch)
    start = time.perf_counter()
    for first in range(0, len(trace), batch_size):
        batch = trace[first : first + batch_size]
        width = max(len(r.prompt) for r in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros(len(batch), width, dtype=torch.long)
        for row, r in enumerate(batch):
            ids[row, width - len(r.prompt):] = torch.tensor(r.prompt)
            mask[row, width - len(r.prompt):] = 1
        clock = Clock()
        with torch.no_grad():
            out = model.generate(ids.to(device), attention_mask=mask.to(device), do_sample=False, pad_token_id=0,
                                 max_new_tokens=max(r.max_new_tokens for r in batch),
                                 logits_processor=transformers.LogitsProcessorList([clock]))
        out = out.cpu()
        for row, r in enumerate(batch):
            tokens[r.request_id] = out[row, width : width + r.max_new_tokens].tolist()
            times[r.request_id] = clock.times[: r.max_new_tokens]
    seconds = time.perf_counter() - start
    generated = sum(max(r.max_new_tokens for r in trace[i : i + batch_size]) * len(trace[i : i + batch_size])
                    for i in range(0, len(trace), batch_size))
    useful = sum(r.max_new_tokens for r in trace)
    return Run(f"transformers generate, static batches of {batch_size}", seconds, useful, mean_tpot(times), tokens,
               f"{generated} tokens generated, {useful} asked for ({useful / generated:.0%} useful)")


def run_hf_cb(trace, smoke: bool, timeout_s: float) -> Run:
    """transformers' continuous batching, in a child process (a fresh model with the same seed)."""
    name = "transformers continuous batching"
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.json"
        result = Path(tmp) / "result.json"
        spec.write_text(json.dumps({"smoke": smoke, "trace": [[r.request_id, list(r.prompt), r.max_new_tokens]
                                                               for r in trace]}))
        try:
            proc = subprocess.run([sys.executable, __file__, "--hf-cb-child", str(spec), str(result)],
                                  capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return Run(name, skipped=f"did not finish within {timeout_s:.0f} s (warm-up included)")
        if proc.returncode != 0 or not result.is_file():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return Run(name, skipped="failed: " + " | ".join(tail)[-400:])
        data = json.loads(result.read_text())
    return Run(f"{name} ({data['attn']})", data["seconds"], data["output_tokens"], data["tpot_ms"],
               data["tokens"], data["note"])


def hf_cb_child(spec_path: str, result_path: str) -> None:
    """The child's side of ``run_hf_cb``: build the model, serve the trace, write the result as JSON."""
    import torch
    import transformers

    spec = json.loads(Path(spec_path).read_text())
    setup = SMOKE_SETUP if spec["smoke"] else GPU_SETUP
    trace = [bench.TraceRequest(rid, tuple(p), n) for rid, p, n in spec["trace"]]
    lab = load_sibling(__file__)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(1)
    model = lab.build_model(transformers.LlamaConfig(**setup.model), seed=SEED, dtype=getattr(torch, setup.dtype),
                            device=device)
    config = transformers.GenerationConfig(max_new_tokens=max(r.max_new_tokens for r in trace), do_sample=False)
    hints = {}
    try:  # what generate_batch tells the manager about the workload, so that it sizes its cache and batches
        from transformers.generation.continuous_batching.utils import WorkloadHints

        hints["workload_hints"] = WorkloadHints(max_prompt_length=max(len(r.prompt) for r in trace),
                                                max_generated_length=config.max_new_tokens, num_requests=len(trace))
    except (ImportError, TypeError):
        pass
    warm = time.perf_counter()
    # Its warm-up (transformers' default: CUDA graphs for its batch shapes, on a CPU a first run of
    # them) is not timed; without it, the first batches pay for it instead.
    with model.continuous_batching_context_manager(generation_config=config, block=True, timeout=30,
                                                   **hints) as manager:
        warm = time.perf_counter() - warm
        attn = None
        sync(torch)
        start = time.perf_counter()
        for r in trace:
            manager.add_request(list(r.prompt), request_id=r.request_id, max_new_tokens=r.max_new_tokens,
                                record_timestamps=True)
        done = {}
        while len(done) < len(trace):
            result = manager.get_result(timeout=1)
            # The attention it serves with: "sdpa" or a flash one over its paged cache (5.23), "paged|sdpa"
            # (5.17): read once it serves.
            attn = attn or (model.config._attn_implementation if result is not None else None)
            if result is not None and result.is_finished():
                if result.error is not None:
                    raise RuntimeError(f"request {result.request_id}: {result.error}")
                done[result.request_id] = result
        seconds = time.perf_counter() - start
    times = {rid: list(r.timestamps or []) for rid, r in done.items()}
    Path(result_path).write_text(json.dumps({
        "seconds": seconds, "output_tokens": sum(len(r.generated_tokens) for r in done.values()),
        "tpot_ms": mean_tpot(times), "tokens": {rid: list(r.generated_tokens) for rid, r in done.items()},
        "attn": attn, "note": f"transformers {transformers.__version__}, attention {attn}, warm-up {warm:.1f} s "
                              "(not timed)",
    }))


# --------------------------------------------------------------------------------------------
# Where the engine's time goes
# --------------------------------------------------------------------------------------------


def kernel_kind(name: str) -> str:
    """A CUDA kernel's kind, from its name."""
    lowered = name.lower()
    if any(k in lowered for k in ("_partition_kernel", "_reduce_kernel", "_prefill_kernel", "index_put", "scatter")):
        return "attention (kernels and the cache write)"
    if any(k in lowered for k in ("gemm", "cutlass", "nvjet", "sm90_", "sm80_", "cublas", "matmul", "splitk")):
        return "GEMMs (projections, MLP, head)"
    return "other kernels (norms, rotary, activations, copies)"


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def agreement(reference: dict, other: dict) -> str:
    """How many requests got exactly the reference's tokens, and how many share the first token."""
    same = sum(other.get(rid) == toks for rid, toks in reference.items())
    first = sum(bool(other.get(rid)) and other[rid][:1] == toks[:1] for rid, toks in reference.items())
    return f"{same}/{len(reference)} identical, {first}/{len(reference)} same first token"


def report(setup: Setup, trace, runs: list[Run], sweep: list[tuple[int, Run, Run]], profiles: dict, header: str,
           elapsed: float, notes: list[str]) -> str:
    engine_runs = [r for r in runs[:2] if not r.skipped]
    ours = max(engine_runs, key=lambda r: r.tokens_per_s)
    model = setup.model
    lines = [
        "# Lab 99-01 results", "",
        f"{header}. Run {datetime.date.today().isoformat()}, {elapsed:.0f} s in all (model build included).", "",
        f"Model: Llama-shaped, hidden {model['hidden_size']}, {model['num_hidden_layers']} layers, "
        f"{model['num_attention_heads']} query heads and {model['num_key_value_heads']} KV heads of "
        f"{model['head_dim']}, MLP {model['intermediate_size']}, vocabulary {model['vocab_size']}; {setup.dtype}, "
        f"random weights (seed {SEED}).", "",
        f"Trace: {describe_trace(setup, trace)}.", "",
        f"Engine: blocks of {BLOCK_SIZE} tokens, max_num_seqs {setup.max_num_seqs}, max_num_batched_tokens "
        f"{setup.max_num_batched_tokens}, a pool with room for the whole trace (no preemption), prefix caching on.",
        "",
        "## Throughput", "",
        "Output tokens per second over the whole trace (every request arrives at time 0); TPOT, the mean over "
        "requests of (last token time - first token time) / (tokens - 1).", "",
    ]
    rows = []
    for run in runs:
        if run.skipped:
            rows.append([run.name, "-", "-", "-", "-", f"skipped: {run.skipped}"])
            continue
        rows.append([run.name, f"{run.tokens_per_s:,.0f}", f"{run.tpot_ms:.2f}", f"{run.seconds:.1f}",
                     f"{ours.tokens_per_s / run.tokens_per_s:.2f}x", run.note])
    lines.append(bench.markdown_table(["system", "output tokens/s", "mean TPOT (ms)", "wall (s)",
                                       f"'{ours.name}' is faster by", "notes"], rows))
    lines += ["", f"Token agreement with the eager engine ({setup.dtype}: other kernels and other batch shapes "
              "round differently, a random model's top logits are close, and a sequence drifts apart after its "
              "first flip; the lab's tests check token equality in float32):", ""]
    for run in runs[1:]:
        if not run.skipped:
            lines.append(f"- {run.name}: {agreement(runs[0].tokens, run.tokens)}")
    if sweep:
        rows = [[str(size), str(len(eager.tokens)), f"{eager.tokens_per_s:,.0f}", f"{eager.tpot_ms:.2f}",
                 "-" if graphed.skipped else f"{graphed.tokens_per_s:,.0f}",
                 "-" if graphed.skipped else f"{graphed.tpot_ms:.2f}"] for size, eager, graphed in sweep]
        lines += ["", "## Throughput against the batch-size limit (max_num_seqs)", "",
                  "The first 2 x max_num_seqs requests of the trace (all of it from 128 on), same settings otherwise.",
                  "", bench.markdown_table(["max_num_seqs", "requests", "eager tokens/s", "eager TPOT (ms)",
                                            "CUDA graphs tokens/s", "CUDA graphs TPOT (ms)"], rows)]
    lines += ["", "## Where the engine's time goes", ""]
    for run in engine_runs:
        phases = run.phases_ms
        lines += [f"{run.name}: {run.steps} steps, {sum(phases.values()):.2f} ms per step on average (host "
                  "timers; the forward's time includes waiting for the GPU):", "",
                  bench.markdown_table(["phase", "ms per step"], [[k, f"{v:.2f}"] for k, v in phases.items()]), ""]
        prof = profiles.get(run.name)
        if prof and prof["kernels_ms"]:
            busy = sum(prof["kernels_ms"].values())
            lines += [f"GPU kernels over {prof['steps']} decode steps at full batch, after every prompt's prefill "
                      f"(torch.profiler): {busy:.2f} ms of kernels per step of {prof['wall_ms']:.2f} ms wall "
                      f"(profiler included): the GPU idles {max(0.0, 1 - busy / prof['wall_ms']):.0%} of the time, "
                      "waiting for Python.", "",
                      bench.markdown_table(["kernels", "ms per step"],
                                           [[k, f"{v:.2f}"] for k, v in sorted(prof["kernels_ms"].items())]), ""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(lines) + "\n"


def plot(results: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the tables of ``results`` (a results.md this script wrote): the
    throughput of each system, then the engine's against max_num_seqs. The run and its plot cannot
    disagree, and the plot can be redrawn anywhere (``--plot-from``)."""
    import textwrap

    from labkit import figures

    runs = [r for r in figures.results_table(results, "system") if figures.number(r["output tokens/s"])]
    try:
        sweep = figures.results_table(results, "max_num_seqs")
    except ValueError:  # the sweep was skipped (time budget)
        sweep = []
    plt = figures.pyplot()
    fig, axes = plt.subplots(2 if sweep else 1, 1, figsize=(figures.WIDTH, 6.6 if sweep else 3.0),
                             layout="constrained", squeeze=False, height_ratios=[1, 1.15] if sweep else None)
    left = axes[0, 0]
    names = [r["system"] for r in runs]
    speeds = [figures.number(r["output tokens/s"]) for r in runs]
    left.barh(range(len(runs)), speeds, height=0.6,
              color=[figures.COLORS["accent" if n.startswith("this engine") else "valid"] for n in names])
    left.set_yticks(range(len(runs)), [textwrap.fill(n, 26) for n in names])
    left.invert_yaxis()
    for y, v in enumerate(speeds):
        left.text(v, y, f" {v:,.0f}", va="center", fontsize=9)
    left.set_xlim(0, max(speeds) * 1.15)
    left.set_xlabel("output tokens/s (higher is better)")
    left.set_title("The same trace, served each way", loc="left")
    if sweep:
        right = axes[1, 0]
        sizes = [int(r["max_num_seqs"]) for r in sweep]
        right.plot(sizes, [figures.number(r["eager tokens/s"]) for r in sweep], "o-", label="engine, eager",
                   color=figures.COLORS["valid"])
        graphs = [(b, figures.number(r["CUDA graphs tokens/s"])) for b, r in zip(sizes, sweep, strict=True)]
        graphs = [(b, v) for b, v in graphs if v is not None]
        if graphs:
            right.plot(*zip(*graphs, strict=True), "s-", label="engine, CUDA graphs for decode",
                       color=figures.COLORS["accent"])
        right.set_xscale("log", base=2)
        right.set_xticks(sizes, [str(b) for b in sizes])
        right.set_ylim(bottom=0)
        right.grid(alpha=0.6)
        right.set_xlabel("max_num_seqs (most requests running at once)")
        right.set_ylabel("output tokens/s")
        right.set_title("Throughput against the batch-size limit", loc="left")
        right.legend()
    return figures.save(fig, path)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = bench.arguments(__doc__)
    bench.model_options(parser)
    parser.add_argument("--no-hf-cb", action="store_true", help="skip transformers' continuous batching")
    parser.add_argument("--hf-cb-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hf_cb_child:
        hf_cb_child(*args.hf_cb_child)
        return 0
    if bench.replotted(args, plot):
        return 0

    began = time.perf_counter()
    torch, transformers = bench.model_stack(BACKEND, args.smoke)
    setup = SMOKE_SETUP if args.smoke else GPU_SETUP
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        torch.set_num_threads(1)
    impl = args.impl or impl_name()
    try:
        lab = load_sibling(__file__, impl)
    except ImplNotFoundError as err:
        raise SystemExit(str(err)) from None
    header = (bench.device_line() if device == "cuda" else "CPU smoke run (a tiny model; timings mean nothing)") + \
        f", transformers {transformers.__version__}; the engine: {impl}.py"
    print(header, flush=True)

    def left() -> float:
        return setup.budget_s - (time.perf_counter() - began)

    def show(run: Run) -> None:
        print(f"{run.name}: " + (f"skipped ({run.skipped})" if run.skipped else
                                 f"{run.tokens_per_s:,.0f} tokens/s, TPOT {run.tpot_ms:.2f} ms ({run.note})"),
              flush=True)

    model = lab.build_model(transformers.LlamaConfig(**setup.model), seed=SEED, dtype=getattr(torch, setup.dtype),
                            device=device)
    params = sum(p.numel() for p in model.parameters())
    print(f"model: {params / 1e9:.2f}B parameters, built in {time.perf_counter() - began:.1f} s", flush=True)
    trace = make_trace(setup)
    num_blocks = num_blocks_for(trace)
    print(f"trace: {describe_trace(setup, trace)}; a pool of {num_blocks} blocks", flush=True)
    notes, profiles = [], {}

    # 1. The engine, eager. A warm-up on a few requests compiles the kernels (small batches: decode with
    # splits), the profiled window the rest (large batches); neither is timed.
    try:
        runner = warm_up(lab, torch, model, trace, setup, num_blocks, None)
    except NotImplementedError as err:
        raise SystemExit(f"{impl}.py is not finished yet: {err}") from None
    eager_name = "this engine, eager"
    if device == "cuda":
        profiles[eager_name] = profile_kernels(lab, torch, model, trace, setup, num_blocks, runner,
                                               setup.profile_steps)
    eager, runner = run_engine(lab, torch, model, trace, setup, num_blocks=num_blocks,
                               max_num_seqs=setup.max_num_seqs, runner=runner, name=eager_name)
    runs = [eager]
    show(eager)

    # 2. The engine, decode-only steps replayed from CUDA graphs (captured once, before timing).
    graphs_name = "this engine, CUDA graphs for decode steps"
    graph_runner = None
    if device == "cuda":
        try:
            graph_runner = new_engine(lab, model, setup, num_blocks, setup.max_num_seqs).runner
            start = time.perf_counter()
            graph_runner.capture_decode_graphs(setup.graph_sizes)
            sizes = ", ".join(map(str, setup.graph_sizes))
            notes.append(f"{len(setup.graph_sizes)} CUDA graphs (decode batches of {sizes}) captured in "
                         f"{time.perf_counter() - start:.1f} s, before timing.")
            profiles[graphs_name] = profile_kernels(lab, torch, model, trace, setup, num_blocks, graph_runner,
                                                    setup.profile_steps)
            graphed, graph_runner = run_engine(lab, torch, model, trace, setup, num_blocks=num_blocks,
                                               max_num_seqs=setup.max_num_seqs, runner=graph_runner, name=graphs_name)
        except Exception as err:  # a capture that fails is a result to report, not a crash
            graphed, graph_runner = Run(graphs_name, skipped=f"{type(err).__name__}: {err}"), None
            free_memory(torch)
    else:
        graphed = Run(graphs_name, skipped="needs a CUDA GPU")
    runs.append(graphed)
    show(graphed)

    # 3. transformers' generate, static batches.
    runs.append(run_hf_static(torch, transformers, model, trace, setup.static_batch))
    show(runs[-1])

    # 4. Throughput against max_num_seqs (the largest point is the runs above), on the same runners,
    # while time is left beyond what transformers' continuous batching is kept.
    sweep = []
    for size in setup.sweep:
        if size >= setup.max_num_seqs:
            sweep.append((setup.max_num_seqs, eager, graphed))
            continue
        if left() < setup.cb_reserve_s + 20:
            notes.append(f"The batch-size sweep stopped before max_num_seqs={size}: {left():.0f} s of the budget "
                         "were left, kept for transformers' continuous batching.")
            break
        part = trace[: min(len(trace), 2 * size)]
        point, runner = run_engine(lab, torch, model, part, setup, num_blocks=num_blocks, max_num_seqs=size,
                                   runner=runner, name=f"eager {size}")
        graph_point = Run(f"graphs {size}", skipped=graphed.skipped or "no CUDA graphs")
        if graph_runner is not None:
            graph_point, graph_runner = run_engine(lab, torch, model, part, setup, num_blocks=num_blocks,
                                                   max_num_seqs=size, runner=graph_runner, name=f"graphs {size}")
        sweep.append((size, point, graph_point))
        graph_text = "skipped" if graph_point.skipped else f"{graph_point.tokens_per_s:,.0f} tokens/s"
        print(f"sweep max_num_seqs={size} ({len(part)} requests): eager {point.tokens_per_s:,.0f} tokens/s, CUDA "
              f"graphs {graph_text}", flush=True)
    del runner, graph_runner
    free_memory(torch)

    # 5. transformers' continuous batching, in a child process, with whatever time is left.
    if args.no_hf_cb:
        runs.append(Run("transformers continuous batching", skipped="--no-hf-cb"))
    elif left() < 30:
        runs.append(Run("transformers continuous batching", skipped=f"only {left():.0f} s of the budget left"))
    else:
        runs.append(run_hf_cb(trace, args.smoke, left() - 5))
    show(runs[-1])

    text = report(setup, trace, runs, sweep, profiles, header, time.perf_counter() - began, notes)
    print()
    bench.write_results(args.out, text, plot, began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
