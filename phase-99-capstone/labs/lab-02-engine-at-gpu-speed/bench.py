"""Lab 99-02 benchmark: lab 99-01's engine made fast, one step of the lab at a time (GPU).

    python phase-99-capstone/labs/lab-02-engine-at-gpu-speed/bench.py --out DIR   # H100: about 4 minutes
    python phase-99-capstone/labs/lab-02-engine-at-gpu-speed/bench.py --smoke     # CPU: a tiny model, every path
    python phase-99-capstone/labs/lab-02-engine-at-gpu-speed/bench.py --plot-from DIR/results.md  # redraw its plot

One process builds lab 99-01's ~1.1B-parameter Llama-shaped model in bfloat16 with random weights on
the GPU and serves two seeded traces, every request arriving at once:

- **A**, lab 99-01's trace (256 requests, prompts of 128-1024 tokens, half opening with one of four
  shared 256-token prefixes, outputs of 64-256 tokens: the same seed, the same requests);
- **B**, a decode-heavy one (256 requests, prompts of 128-512 tokens, outputs of 512-1024).

Each trace is served by five engines, each one step of the lab further than the one before:

0. lab 99-01's engine, decode steps replayed from CUDA graphs (its reference solution: the baseline);
1. this lab's engine after steps 1 and 2 (persistent batch, inputs in numpy), decode-only graphs as
   lab 99-01, the host waiting for every step, lab 99-01's scheduling costs (every request asks the
   KV-cache manager for blocks at every step, a request's blocks are all hashed again when one fills);
2. after step 3: piecewise graphs for the other steps;
3. after step 4: the host one step ahead;
4. after step 5: the cheap scheduler: this lab's engine as it is.

It reports output tokens/s and the mean time per output token (TPOT), the host's time per step by
phase (timers around each phase), and the GPU's busy fraction over 30 decode steps at full batch
(torch.profiler: the union of the kernels' intervals over the window from the first kernel's start to
the last one's end). The engine under test is ``--impl`` (or ``LAB_IMPL``: ``starter`` for yours). The
run keeps to ``--budget-s`` (default 480 s): the baseline and the finished engine come first; the
intermediate engines and profiles are skipped, with the reason, when time runs short. ``--out DIR``
writes ``results.md`` and ``results.svg`` (the plot, drawn from that table; ``--plot-from results.md``
redraws it on any machine). Without a CUDA GPU it stops at once, unless ``--smoke`` asks
for the tiny CPU run (which checks the code paths: the device work runs on the CPU queue of
``_device.Stream``; its timings mean nothing).
"""

from __future__ import annotations

import datetime
import gc
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import bench, load_impl, load_reference, triton_env  # noqa: E402

BACKEND = triton_env.select_backend()

MODEL_1B = bench.MODEL_1B  # the capstone benchmarks' model: ~1.1B parameters, random weights
MODEL_TINY = bench.llama_config(512, 64, 128, 2, 4, 2, 16, 256)  # --smoke, on a CPU (bench.llama_config's order)
SEED = 0
BLOCK_SIZE = 16


@dataclass(frozen=True)
class TraceSpec:
    name: str
    num_requests: int
    prompt_range: tuple[int, int]
    output_range: tuple[int, int]
    prefix_len: int  # half the prompts open with one of four shared prefixes of this length


@dataclass(frozen=True)
class Setup:
    model: dict
    dtype: str
    traces: tuple[TraceSpec, ...]
    max_num_seqs: int
    max_num_batched_tokens: int
    capture_sizes: tuple[int, ...]  # full graphs up to max_num_seqs, piecewise graphs up to the budget
    baseline_graph_sizes: tuple[int, ...]  # lab 99-01's decode graphs (its benchmark's buckets)
    profile_steps: int  # decode steps at full batch under torch.profiler
    budget_s: float


_DECODE_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256)
GPU_SETUP = Setup(
    MODEL_1B, "bfloat16",
    (TraceSpec("A: lab 99-01's trace", 256, (128, 1024), (64, 256), 256),
     TraceSpec("B: decode-heavy", 256, (128, 512), (512, 1024), 128)),
    256, 4096, _DECODE_SIZES + (320, 384, 448, 512, 640, 768, 1024, 1536, 2048, 3072, 4096),
    (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256), 30, 480.0,
)
SMOKE_SETUP = Setup(
    MODEL_TINY, "float32",
    (TraceSpec("A: lab 99-01's trace", 12, (16, 64), (4, 16), 24),
     TraceSpec("B: decode-heavy", 8, (16, 32), (24, 48), 16)),
    8, 64, (1, 2, 4, 8, 16, 32, 64), (), 6, 900.0,
)


# --------------------------------------------------------------------------------------------
# Traces
# --------------------------------------------------------------------------------------------


def make_trace(spec: TraceSpec, vocab: int, seed: int = SEED) -> list[bench.TraceRequest]:
    """``num_requests`` requests; prompt lengths uniform in ``prompt_range``, outputs uniform in
    ``output_range``; half the prompts open with one of four shared prefixes. The same generator as lab
    99-01's ``bench.py`` (``labkit.bench.serving_trace``: trace A is its trace, request for request)."""
    return bench.serving_trace(spec.num_requests, spec.prompt_range, spec.output_range, spec.prefix_len, vocab, seed)


def describe_trace(spec: TraceSpec, trace) -> str:
    prompts = [len(r.prompt) for r in trace]
    outs = [r.max_new_tokens for r in trace]
    return (f"{len(trace)} requests at once; prompts {spec.prompt_range[0]}-{spec.prompt_range[1]} tokens (mean "
            f"{sum(prompts) / len(prompts):.0f}), half opening with one of 4 shared {spec.prefix_len}-token "
            f"prefixes; outputs {spec.output_range[0]}-{spec.output_range[1]} (mean {sum(outs) / len(outs):.0f}, "
            f"{sum(outs)} in all)")


def num_blocks_for(traces, headroom: float = 1.25) -> int:
    """Blocks for every request of the largest trace at once, plus headroom: no preemption."""
    need = max(sum(-(-(len(r.prompt) + r.max_new_tokens) // BLOCK_SIZE) for r in trace) for trace in traces)
    return int(need * headroom) + 1


# --------------------------------------------------------------------------------------------
# The engines: lab 99-01's, and this lab's after each step
# --------------------------------------------------------------------------------------------

RUNGS = (
    "0. lab 99-01, CUDA graphs for decode steps",
    "1. steps 1-2: persistent batch, numpy inputs",
    "2. + step 3: graphs for every step",
    "3. + step 4: host one step ahead",
    "4. + step 5: cheap scheduler",
)


def before_step_5(lab, engine):
    """Give ``engine`` back lab 99-01's scheduling costs: every running request asks the KV-cache manager
    for its blocks at every step, and a request's hashes are all computed again when a block fills
    (lab 02-05's ``_update_block_hashes``, over lab 02-01's ``hash_request_tokens``)."""
    hash_request_tokens = load_reference("02-01").hash_request_tokens

    class RehashingManager(type(engine.kv_manager)):
        def hash_new_full_blocks(self, request) -> None:
            tokens = request.all_token_ids
            if len(request.block_hashes) < len(tokens) // self.block_size:
                request.block_hashes = hash_request_tokens(tokens, self.block_size)

    old = engine.kv_manager
    engine.kv_manager = RehashingManager(old.block_pool.num_gpu_blocks, old.block_size, old.enable_caching)
    engine.allocate_slots = lambda request, n: engine.kv_manager.allocate_slots(request, n)
    return engine


def new_engine(lab, ref, model, setup: Setup, rung: int, num_blocks: int, runners: dict):
    """The engine of ``rung``, on the runner built once for its kind (one KV cache, one capture)."""
    common = dict(num_gpu_blocks=num_blocks, block_size=BLOCK_SIZE, max_num_seqs=setup.max_num_seqs,
                  max_num_batched_tokens=setup.max_num_batched_tokens)
    if rung == 0:
        engine = ref.Engine(model, **common)
        if "baseline" not in runners:
            runners["baseline"] = engine.runner
            if setup.baseline_graph_sizes:
                engine.runner.capture_decode_graphs(setup.baseline_graph_sizes)
        engine.runner = runners["baseline"]
        return engine
    # A runner without graphs costs a cache; the shared one replaces it at once.
    engine = lab.Engine(model, cudagraph_mode="none", async_scheduling=rung >= 3, **common)
    if "lab" not in runners:
        runners["lab"] = lab.ModelRunner(model, num_blocks, BLOCK_SIZE, setup.max_num_seqs,
                                         setup.max_num_batched_tokens, None, "full_and_piecewise",
                                         list(setup.capture_sizes))
        runners["piecewise_sizes"] = list(runners["lab"].piecewise_sizes)
    runner = runners["lab"]
    # Step 3 is what replays the mixed steps: before it, the runner knows its decode graphs only.
    runner.piecewise_sizes = runners["piecewise_sizes"] if rung >= 2 else []
    runner.cudagraph_mode = "full_and_piecewise" if rung >= 2 else "full_decode_only"
    engine.runner = runner
    gc.collect()
    return before_step_5(lab, engine) if rung < 4 else engine


# --------------------------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------------------------


@dataclass
class Run:
    name: str
    trace: str
    seconds: float = math.nan
    output_tokens: int = 0
    tpot_ms: float = math.nan
    steps: int = 0
    phases_ms: dict = field(default_factory=dict)  # host milliseconds per step, by phase
    tokens: dict = field(default_factory=dict)
    note: str = ""
    skipped: str = ""
    busy: dict | None = None  # the profile over decode steps at full batch

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds > 0 else math.nan


def sync(torch) -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


class PhaseTimers:
    """Host time per phase: wraps the engine's methods on the instance (the engine's own code is unchanged).
    The host's waits for the device are a phase of their own ("wait for the device")."""

    def __init__(self, engine, rung: int) -> None:
        self.totals: dict[str, float] = {}
        self.wrapped: list[tuple[object, str]] = []
        self.stream = None
        if rung == 0:
            self._wrap(engine, "schedule", "schedule")
            self._wrap(engine, "prepare_inputs", "inputs (Python lists)")
            self._wrap(engine.runner, "execute_model", "forward: launch (its copies may wait)")
            self._wrap(engine.runner, "sample", "sample: waits for the device")
            self._wrap(engine, "update_from_output", "update_from_output")
            return
        runner = self.runner = engine.runner
        self.stream = runner.stream
        self.wait_before = runner.stream.wait_s
        self._wrap(engine, "schedule", "schedule")
        self._wrap(runner, "update_states", "update_states")
        self._wrap(runner, "prepare_inputs", "prepare_inputs")
        self._wrap(runner, "choose_graph", "graph choice and padding")
        self._wrap(runner, "pad_graph_inputs", "graph choice and padding")
        for name in ("_copy_inputs", "_run", "_output"):
            self._wrap(runner, name, "launch: copies, graphs, kernels")
        self._wrap(engine, "update_from_output", "update_from_output")

    def _wrap(self, obj, name: str, phase: str) -> None:
        fn = getattr(obj, name)
        totals, stream = self.totals, self.stream
        totals.setdefault(phase, 0.0)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            waited = stream.wait_s if stream is not None else 0.0
            try:
                return fn(*args, **kwargs)
            finally:
                # A wait inside the phase (the runner waits for the last input copies) is counted apart.
                totals[phase] += time.perf_counter() - start - ((stream.wait_s - waited) if stream else 0.0)

        setattr(obj, name, timed)
        self.wrapped.append((obj, name))

    def unwrap(self) -> None:
        for obj, name in self.wrapped:
            vars(obj).pop(name, None)

    def per_step_ms(self, steps: int) -> dict:
        totals = dict(self.totals)
        if self.stream is not None:
            totals["wait for the device"] = self.stream.wait_s - self.wait_before
        return {k: 1e3 * v / max(steps, 1) for k, v in totals.items()}


def serve(engine, torch, trace, rung: int, name: str, spec: TraceSpec) -> Run:
    """Serve ``trace`` (every request at once) to the end, timed. A token's time is when the host learns
    it; per request, TPOT is (last token's time - first token's time) / (tokens - 1)."""
    for r in trace:
        engine.add_request(r.request_id, list(r.prompt), r.max_new_tokens)
    if rung > 0:
        runs = engine.runner.num_runs
        for mode in runs:  # the runner is shared: count this run's steps only
            runs[mode] = 0
    else:
        engine.runner.num_graph_replays = 0
    timers = PhaseTimers(engine, rung)
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    no_token_yet = {r.request_id for r in trace}
    sync(torch)
    start = time.perf_counter()
    while engine.has_unfinished_requests():
        engine.step()
        now = time.perf_counter()
        if no_token_yet:  # only until every request has its first token: cheap in the steady state
            got = [rid for rid in no_token_yet if engine.requests[rid].output_token_ids]
            for rid in got:
                first[rid] = now
            no_token_yet.difference_update(got)
        if len(engine.finished) > len(last):
            for rid in list(engine.finished)[len(last):]:
                last[rid] = now
    sync(torch)
    seconds = time.perf_counter() - start
    timers.unwrap()
    steps = engine.num_steps
    counts = {rid: len(r.output_token_ids) for rid, r in engine.requests.items()}
    tpots = [(last[rid] - first[rid]) / (counts[rid] - 1) for rid in last if counts[rid] >= 2]
    run = Run(name, spec.name, seconds, sum(counts.values()), 1e3 * sum(tpots) / max(len(tpots), 1), steps,
              timers.per_step_ms(steps), {rid: list(r.output_token_ids) for rid, r in engine.requests.items()})
    hits = sum(max(r.num_cached_tokens, 0) for r in engine.requests.values())
    run.note = f"{steps} steps; {hits} prompt tokens from the prefix cache"
    if rung > 0:
        runs = engine.runner.num_runs
        run.note += f"; steps run: {runs['full']} full graphs, {runs['piecewise']} piecewise, {runs['eager']} eager"
    else:
        run.note += f", {engine.runner.num_graph_replays} replayed from CUDA graphs"
    return run


def warm_up(engine, trace) -> None:
    """Serve 8 requests (32 new tokens at most), untimed: the kernels compile at the batch sizes they meet."""
    for r in trace[:8]:
        engine.add_request(r.request_id, list(r.prompt), min(r.max_new_tokens, 32))
    while engine.has_unfinished_requests():
        engine.step()


def profile_decode(engine, torch, trace, steps: int) -> dict | None:
    """GPU activity over ``steps`` decode steps at full batch: every prompt done, every request running.
    Returns the busy fraction (the union of the kernels' intervals over the window from the first one's
    start to the last one's end), kernel milliseconds per step and wall milliseconds per step."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    for r in trace:
        engine.add_request(r.request_id, list(r.prompt), r.max_new_tokens)
    while engine.has_unfinished_requests() and (engine.waiting or any(
            r.num_computed_tokens < len(r.prompt_token_ids) for r in engine.running)):
        engine.step()
    for _ in range(3):  # out of the window: the first replays of the decode graphs
        engine.step()
    batch = len(engine.running)
    sync(torch)
    # On a CPU (--smoke) the same code runs over the CPU's torch operators: the numbers mean nothing.
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            engine.step()
        sync(torch)
        wall = time.perf_counter() - start
    intervals = []
    for event in prof.events():
        on_device = "cuda" in str(getattr(event, "device_type", "")).lower()
        if not (on_device if cuda else event.name.startswith("aten::")):
            continue
        name = event.name.lower()
        if "memcpy" in name or "memset" in name:
            continue  # the copies are not compute
        intervals.append((event.time_range.start, event.time_range.end))
    # The rest of the trace is not served: the next engine's first step drops this one's rows.
    sync(torch)
    if not intervals:
        return None
    intervals.sort()
    busy, (lo, hi) = 0.0, intervals[0]
    first, last = intervals[0][0], max(end for _, end in intervals)
    for a, b in intervals[1:]:
        if a > hi:
            busy += hi - lo
            lo, hi = a, b
        else:
            hi = max(hi, b)
    busy += hi - lo
    span = last - first
    return {"busy": busy / span if span > 0 else math.nan, "kernel_ms": busy / 1e3 / steps,
            "span_ms": span / 1e3 / steps, "wall_ms": 1e3 * wall / steps, "batch": batch, "steps": steps}


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def agreement(reference: dict, other: dict) -> str:
    same = sum(other.get(rid) == toks for rid, toks in reference.items())
    first = sum(bool(other.get(rid)) and other[rid][:1] == toks[:1] for rid, toks in reference.items())
    return f"{same}/{len(reference)} identical, {first}/{len(reference)} same first token"


def report(setup: Setup, specs, traces, runs: dict, header: str, elapsed: float, notes: list[str]) -> str:
    model = setup.model
    full = ", ".join(str(s) for s in setup.capture_sizes if s <= setup.max_num_seqs)
    pieces = ", ".join(str(s) for s in setup.capture_sizes)
    lines = [
        "# Lab 99-02 results", "",
        f"{header}. Run {datetime.date.today().isoformat()}, {elapsed:.0f} s in all (model build included).", "",
        f"Model: Llama-shaped, hidden {model['hidden_size']}, {model['num_hidden_layers']} layers, "
        f"{model['num_attention_heads']} query heads and {model['num_key_value_heads']} KV heads of "
        f"{model['head_dim']}, "
        f"MLP {model['intermediate_size']}, vocabulary {model['vocab_size']}; {setup.dtype}, random weights "
        f"(seed {SEED}).", "",
        f"Engines: blocks of {BLOCK_SIZE} tokens, max_num_seqs {setup.max_num_seqs}, max_num_batched_tokens "
        f"{setup.max_num_batched_tokens}, a pool with room for a whole trace (no preemption), prefix caching on. "
        f"This lab's graphs: full graphs of {full} rows; piecewise graphs of {pieces} tokens.", "",
    ]
    for spec, trace in zip(specs, traces, strict=True):
        lines += [f"## Trace {spec.name}", "", describe_trace(spec, trace) + ".", ""]
        base = runs.get((spec.name, 0))
        rows = []
        for rung, name in enumerate(RUNGS):
            run = runs.get((spec.name, rung))
            if run is None or run.skipped:
                rows.append([name, "-", "-", "-", "-", "-", f"skipped: {run.skipped if run else 'not run'}"])
                continue
            speedup = f"{run.tokens_per_s / base.tokens_per_s:.2f}x" if base and not base.skipped else "-"
            busy = f"{run.busy['busy']:.0%}" if run.busy else "-"
            rows.append([name, f"{run.tokens_per_s:,.0f}", f"{run.tpot_ms:.2f}", f"{run.seconds:.1f}", speedup, busy,
                         run.note])
        lines.append(bench.markdown_table(["engine", "output tokens/s", "mean TPOT (ms)", "wall (s)",
                                           "against 0.", "GPU busy, decode at full batch", "notes"], rows))
        lines += ["", "Host milliseconds per step, by phase (timers around each; the waits are the host "
                  "blocked on the device):", ""]
        phases = []
        for rung in range(len(RUNGS)):
            run = runs.get((spec.name, rung))
            if run and not run.skipped:
                phases.extend(p for p in run.phases_ms if p not in phases)
        rows = []
        for rung, name in enumerate(RUNGS):
            run = runs.get((spec.name, rung))
            if run and not run.skipped:
                rows.append([name.split(":")[0]] + [f"{run.phases_ms[p]:.2f}" if p in run.phases_ms else "-"
                                                    for p in phases])
        lines += [bench.markdown_table(["engine"] + phases, rows), ""]
        profiled = [(rung, runs[(spec.name, rung)].busy) for rung in range(len(RUNGS))
                    if (spec.name, rung) in runs and runs[(spec.name, rung)].busy]
        if profiled:
            lines += [f"GPU over {profiled[0][1]['steps']} decode steps at full batch ({profiled[0][1]['batch']} "
                      "requests running), torch.profiler:", ""]
            lines += [bench.markdown_table(
                ["engine", "kernels (ms/step)", "first to last kernel (ms/step)", "host wall (ms/step)", "busy"],
                [[RUNGS[rung].split(":")[0], f"{p['kernel_ms']:.2f}", f"{p['span_ms']:.2f}", f"{p['wall_ms']:.2f}",
                  f"{p['busy']:.0%}"] for rung, p in profiled]), ""]
        final = runs.get((spec.name, 4))
        if base and final and not base.skipped and not final.skipped:
            lines += [f"Token agreement of engine 4 with engine 0 ({setup.dtype}: other kernels and batch shapes "
                      f"round differently; the tests check tokens in float32): {agreement(base.tokens, final.tokens)}.",
                      ""]
    lines += ["## The bar", ""]
    for spec in specs:
        base, final = runs.get((spec.name, 0)), runs.get((spec.name, 4))
        if base and final and not base.skipped and not final.skipped:
            ratio = final.tokens_per_s / base.tokens_per_s
            busy = f", GPU busy {final.busy['busy']:.0%} at full batch (bar: 85%)" if final.busy else ""
            lines.append(f"- Trace {spec.name}: {ratio:.2f}x lab 99-01's tokens/s (bar: 2x){busy}.")
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def trace_tables(results_md: Path) -> dict[str, list[dict[str, str]]]:
    """The engines' table of each trace in a results.md this script wrote, by the trace's heading
    ("A: lab 99-01's trace"): a list of rows, each {header: cell}."""
    found, trace, headers = {}, None, None
    for line in results_md.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            trace = line.removeprefix("## Trace ").strip() if line.startswith("## Trace ") else None
        if not line.startswith("|"):
            headers = None  # a table ends at its first line that is not a row
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if headers is None:
            headers = cells
        elif trace and "output tokens/s" in headers and not set(line) <= set("|-: "):
            found.setdefault(trace, []).append(dict(zip(headers, cells, strict=True)))
    if not found:
        raise SystemExit(f"{results_md}: no trace's table of output tokens/s (not a results.md of this bench.py?)")
    return found


def plot(results_md: Path, path: Path) -> Path:
    """Draw ``path`` (an SVG) from the tables of ``results_md`` (a results.md this script wrote): above,
    the output tokens/s of each engine on each trace; below, the GPU's busy fraction over decode steps
    at full batch, against the 85% bar. The run and its plot cannot disagree, and the plot can be
    redrawn anywhere (``--plot-from``)."""
    import textwrap

    from matplotlib.patches import Rectangle
    from matplotlib.ticker import StrMethodFormatter

    from labkit import figures

    tables = trace_tables(results_md)
    # The run's first line of prose: "NVIDIA H100 80GB HBM3, torch ...", or "CPU smoke run (...), ..."
    machine = next(line for line in results_md.read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")).split(", ")[0].split(" (")[0]
    engines = list(dict.fromkeys(row["engine"] for rows in tables.values() for row in rows))
    plt = figures.pyplot()
    fig, (speed, busy) = plt.subplots(2, 1, figsize=(figures.WIDTH, 7.0), sharex=True, layout="constrained")
    width = 0.8 / len(tables)
    handles, labels = [], []
    for i, (trace, rows) in enumerate(tables.items()):
        by_engine = {row["engine"]: row for row in rows}
        xs = [e + (i - (len(tables) - 1) / 2) * width for e in range(len(engines))]
        color = figures.SERIES[i % len(figures.SERIES)]
        for x, engine in zip(xs, engines, strict=True):
            row = by_engine.get(engine, {})
            tokens = figures.number(row.get("output tokens/s", "-"))
            if tokens is not None:
                speed.bar(x, tokens, width, color=color)
                speed.text(x, tokens, row["against 0."], ha="center", va="bottom", fontsize=9)
            else:  # skipped (the time budget ran out) or not run: say so where its bar would stand
                speed.text(x, 0, " skipped", rotation=90, ha="center", va="bottom", fontsize=9,
                           color=figures.COLORS["muted"])
            fraction = figures.number(row.get("GPU busy, decode at full batch", "-"))
            if fraction is not None:
                busy.bar(x, fraction, width, color=color)
                busy.text(x, fraction, f"{fraction:.0f}%", ha="center", va="bottom", fontsize=9)
        handles.append(Rectangle((0, 0), 1, 1, facecolor=color))
        labels.append(f"trace {trace}")
    speed.set_ylim(0, speed.get_ylim()[1] * 1.08)  # room for the ratios above the bars
    speed.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    speed.set_ylabel("output tokens/s\n(higher is better)")
    speed.set_title(textwrap.fill(f"{machine}: each engine on each trace (above a bar: against engine 0)", 80),
                    loc="left")
    handles.append(busy.axhline(85, color=figures.COLORS["ink"], linestyle="--", linewidth=1.0))
    labels.append("the bar: 85% busy")
    busy.set_ylim(0, 109)  # room for a label above a full bar
    busy.set_yticks(range(0, 101, 20))
    busy.set_ylabel("GPU busy (%), decode\nsteps at full batch")
    busy.set_title("The GPU's busy fraction (torch.profiler; no bar: not profiled)", loc="left")
    busy.set_xticks(range(len(engines)), [textwrap.fill(engine, 16) for engine in engines])
    for ax in (speed, busy):
        ax.grid(axis="y", alpha=0.6)
        ax.set_axisbelow(True)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
    return figures.save(fig, path)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = bench.arguments(__doc__)
    bench.model_options(parser)
    parser.add_argument("--budget-s", type=float, help="the whole run's time budget in seconds (default 480)")
    args = parser.parse_args(argv)
    if bench.replotted(args, plot):
        return 0

    began = time.perf_counter()
    torch, transformers = bench.model_stack(BACKEND, args.smoke)
    setup = SMOKE_SETUP if args.smoke else GPU_SETUP
    budget = args.budget_s or setup.budget_s
    device = "cpu" if args.smoke else "cuda"
    if args.smoke:
        torch.set_num_threads(1)
    lab = load_impl(HERE, args.impl)
    ref = load_reference("99-01")
    header = (bench.device_line() if device == "cuda" else "CPU smoke run (a tiny model; timings mean nothing)") + \
        f", transformers {transformers.__version__}"
    print(header, flush=True)

    def left() -> float:
        return budget - (time.perf_counter() - began)

    model = lab.build_model(transformers.LlamaConfig(**setup.model), seed=SEED, dtype=getattr(torch, setup.dtype),
                            device=device)
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters, built in "
          f"{time.perf_counter() - began:.1f} s", flush=True)
    traces = [make_trace(spec, setup.model["vocab_size"]) for spec in setup.traces]
    num_blocks = num_blocks_for(traces)
    notes: list[str] = []
    runners: dict = {}

    start = time.perf_counter()
    for rung in (0, 4):
        warm_up(new_engine(lab, ref, model, setup, rung, num_blocks, runners), traces[0])
    lab_runner = runners["lab"]
    notes.append(f"This lab's runner captured {len(lab_runner.full_graphs)} full graphs and "
                 f"{len(lab_runner.piecewise_graphs)} sets of piecewise graphs in {lab_runner.capture_s:.1f} s; the "
                 f"warm-ups (8 requests per engine, untimed) and captures took {time.perf_counter() - start:.1f} s.")
    print(notes[-1], flush=True)

    runs: dict = {}
    profiles: dict = {}

    def profile(t: int, rung: int) -> None:
        spec = setup.traces[t]
        if left() < 30:
            notes.append(f"The profile of engine {rung} on trace {spec.name[:1]} was skipped: {left():.0f} s left.")
            return
        engine = new_engine(lab, ref, model, setup, rung, num_blocks, runners)
        profiles[(spec.name, rung)] = busy = profile_decode(engine, torch, traces[t], setup.profile_steps)
        if busy is None:
            notes.append(f"The profile of engine {rung} on trace {spec.name[:1]} saw no kernel (profiler events "
                         "without a CUDA device type).")
        else:
            print(f"trace {spec.name[:1]}, engine {rung}: GPU busy {busy['busy']:.0%} ({busy['kernel_ms']:.2f} ms of "
                  f"kernels per {busy['span_ms']:.2f} ms step)", flush=True)
        del engine
        gc.collect()

    # The first profiles also warm every kernel up at full batch (trace A's prompts, then decodes).
    profile(0, 0)
    profile(0, 4)
    # The baseline and the finished engine first (the bar), then the steps between.
    for t, rung in [(t, r) for r in (0, 4, 1, 2, 3) for t in range(len(traces))]:
        spec, trace = setup.traces[t], traces[t]
        if left() < 40:
            runs[(spec.name, rung)] = Run(RUNGS[rung], spec.name, skipped=f"only {left():.0f} s of the budget left")
            continue
        engine = new_engine(lab, ref, model, setup, rung, num_blocks, runners)
        run = serve(engine, torch, trace, rung, RUNGS[rung], spec)
        runs[(spec.name, rung)] = run
        print(f"trace {spec.name[:1]}, {run.name}: {run.tokens_per_s:,.0f} tokens/s, TPOT {run.tpot_ms:.2f} ms, "
              f"{run.seconds:.1f} s ({run.note})", flush=True)
        del engine
        gc.collect()
    for t, rung in [(1, 0), (1, 4), (0, 1), (0, 2), (0, 3)]:
        if (setup.traces[t].name, rung) in runs and not runs[(setup.traces[t].name, rung)].skipped:
            profile(t, rung)
    for key, busy in profiles.items():
        if key in runs:
            runs[key].busy = busy
    if device != "cuda":
        notes.append("No GPU: the profiles ran over the CPU's torch operators (the busy fractions mean nothing).")

    text = report(setup, setup.traces, traces, runs, header, time.perf_counter() - began, notes)
    print()
    bench.write_results(args.out, text, plot, began)
    return 0


if __name__ == "__main__":
    sys.exit(main())
