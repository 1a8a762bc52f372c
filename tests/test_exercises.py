"""The phases' exercise pages cannot drift from the code: every written answer is recomputed.

An exercise whose answer is a number or a short list writes it as ``**Answer: ...**`` under its
heading (``### C1. ...``) in ``phase-*/EXERCISES.md``. Each such answer has a function here that
recomputes it from first principles (float64 or exact integers), and, where a lab implements the
same quantity, checks that the lab's reference solution agrees. An answer with no function here,
or a function whose answer has vanished from the page, fails too.
"""

from __future__ import annotations

import functools
import math
import random
import re

import numpy as np
import pytest

import labkit
from labkit.course import registry
from labkit.testing import loader

ROOT = registry.ROOT
P2, P4, P99 = "phase-02-paged-attention", "phase-04-attention-backends", "phase-99-capstone"


def written_answers() -> dict[tuple[str, str], str]:
    """{(phase folder, exercise id): the answer as written} for every page that has answers."""
    found = {}
    for page in sorted(ROOT.glob("phase-*/EXERCISES.md")):
        exercise = None
        for line in page.read_text(encoding="utf-8").splitlines():
            heading = re.match(r"###\s+([A-Z]\d+)\.", line)
            if heading:
                exercise = heading.group(1)
            answer = re.search(r"\*\*Answer: (.+?)\*\*", line)
            if answer:
                assert exercise, f"{page}: an answer before any '### X1.' heading: {line}"
                key = (page.parent.name, exercise)
                assert key not in found, f"{page}: exercise {exercise} has two written answers"
                found[key] = answer.group(1).strip()
    return found


def listed(*values) -> str:
    return ", ".join(str(v) for v in values)


# --------------------------------------------------------------------------- Phase 2


def p2_blocks_for_a_prompt():
    n, block = 1000, 16
    blocks = math.ceil(n / block)
    assert blocks == labkit.cases.blocks_needed(n, block)
    return listed(blocks, blocks * block - n)


def p2_slot_mapping_by_hand():
    table, block, start, count = [7, 2, 9], 4, 5, 5
    slots = [table[t // block] * block + t % block for t in range(start, start + count)]
    lab = labkit.load_reference("02-06").build_slot_mapping(np.array(table), block, start, count)
    assert lab.tolist() == slots, "lab 02-06's build_slot_mapping disagrees with the formula"
    return listed(*slots)


def _bytes_per_token(layers=32, kv_heads=8, head_dim=128, dtype=np.float16):
    return 2 * layers * kv_heads * head_dim * np.dtype(dtype).itemsize  # K and V, every layer


def p2_bytes_per_token():
    return listed(_bytes_per_token(), _bytes_per_token() * 16)


def p2_tokens_that_fit():
    tokens = 40 * 2**30 // _bytes_per_token()
    return listed(tokens, tokens // 16)


def p2_which_kv_head():
    heads, kv_heads, head = 32, 8, 13
    # Ask the float64 reference which KV head it reads: one token, each KV head's value is its index.
    q = np.zeros((heads, 4))
    k = np.zeros((1, kv_heads, 4))
    v = np.broadcast_to(np.arange(kv_heads, dtype=np.float64)[None, :, None], (1, kv_heads, 4))
    read = labkit.attention_f64(q, k, v)[head, 0]
    assert read == head // (heads // kv_heads)
    return listed(int(read), head % kv_heads)


def p2_inside_the_key_cache():
    kv_heads, head_size, block_size, itemsize = 8, 128, 16, 2
    x = 16 // itemsize
    shape = (10, kv_heads, head_size // x, block_size, x)
    block, head, row, component = 3, 2, 5, 37
    return listed(np.ravel_multi_index((block, head, component // x, row, component % x), shape))


def p2_choosing_a_block_size():
    n, sizes = 1000, (1, 16, 256)
    entries = [math.ceil(n / b) for b in sizes]
    waste = [e * b - n for e, b in zip(entries, sizes, strict=True)]
    return listed(*entries) + "; " + listed(*waste)


def p2_sharing_a_system_prompt():
    # Only full blocks are hashed and cached, so only whole blocks of the shared prompt are shared.
    return listed(48 // 16, 50 // 16)


def p2_blocks_a_gpu_gets():
    gib = 2**30
    available = int(0.9 * 80 * gib) - (16 + 2 + 1) * gib  # the utilization's share of the total, minus the rest
    page = 2 * 16 * 8 * 128 * 2  # K and V, block_size, KV heads, head_dim, bf16 bytes: one block, one layer
    blocks = available // page // 32
    concurrency = blocks / math.ceil(8192 / 16)
    lab = labkit.load_reference("02-03")
    config = {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096,
              "torch_dtype": "bfloat16"}
    lab_available = lab.available_kv_memory(80 * gib, 79 * gib, 0.9, 16 * gib, 2 * gib, 1 * gib)
    assert lab_available == available, "lab 02-03's available_kv_memory disagrees"
    assert lab.num_gpu_blocks(lab_available, config, 16) == blocks, "lab 02-03's num_gpu_blocks disagrees"
    assert lab.max_concurrency(blocks, 16, 8192) == concurrency, "lab 02-03's max_concurrency disagrees"
    return listed(blocks, f"{concurrency:.1f}")


def p2_the_same_prompt_twice():
    n, block = 48, 16
    hit_blocks = (n - 1) // block  # the last prompt token is always computed: it needs logits
    return listed(hit_blocks, n - hit_blocks * block)


# --------------------------------------------------------------------------- Phase 4


def p4_one_correction_factor():
    return f"{math.exp(2 - 3):.4f}"


def p4_online_softmax_by_hand():
    s, v = np.array([1.0, 3.0, 2.0]), np.array([10.0, 20.0, 30.0])
    weights = np.exp(s - s.max())
    truth = weights @ v / weights.sum()
    # Lab 04-01 streams the same three tokens (head_dim 1, so the scale is 1) one block at a time.
    k_cache, v_cache = s.reshape(3, 1, 1), v.reshape(3, 1, 1)
    lab = labkit.load_reference("04-01").paged_online_attention(np.ones(1), k_cache, v_cache, [0, 1, 2], 3, 1)
    assert abs(lab[0] - truth) < 1e-12
    return f"{truth:.4f}"


def p4_merging_two_partitions():
    (m1, l1, a1), (m2, l2, a2) = (1.0, 2.0, 6.0), (3.0, 1.0, 5.0)
    m = max(m1, m2)
    merged = (a1 * math.exp(m1 - m) + a2 * math.exp(m2 - m)) / (l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m))
    _, denom, acc = labkit.load_reference("04-04").merge_two((m1, l1, np.array([a1])), (m2, l2, np.array([a2])))
    assert abs(acc[0] / denom - merged) < 1e-12
    return listed(f"{merged:.4f}", f"{(a1 / l1 + a2 / l2) / 2:.4f}")


PARTITION_SIZE = 512  # csrc/attention/paged_attention_v2.cu's default PARTITION_SIZE


def _uses_v1(max_seq_len: int, num_seqs: int, num_heads: int) -> bool:
    """The rule by which vLLM chose its v1 kernel while it launched it (the walkthrough's section 2).

    History: v0.10.1's PagedAttention.forward_decode (use_v1); v0.22.1 launches neither kernel."""
    partitions = math.ceil(max_seq_len / PARTITION_SIZE)
    return max_seq_len <= 8192 and (partitions == 1 or num_seqs * num_heads > 512)


def p4_v1_or_v2():
    cases = [(4096, 1, 32), (4096, 64, 32), (10000, 64, 32)]
    return listed(*("v1" if _uses_v1(*case) else "v2" for case in cases))


def p4_shared_memory_of_v1():
    head_size, num_warps, block_size = 128, 128 // 32, 16

    def dynamic_bytes(max_seq_len):  # paged_attention_v1.cu: max(logits_size, outputs_size)
        padded = math.ceil(max_seq_len / block_size) * block_size
        return max(padded * 4, (num_warps // 2) * head_size * 4)

    return listed(dynamic_bytes(8192), dynamic_bytes(16384))


def p4_partitions_of_a_sequence():
    n = 3000
    partitions = math.ceil(n / PARTITION_SIZE)
    return listed(partitions, n - (partitions - 1) * PARTITION_SIZE)


def p4_bytes_of_a_decode_step():
    kv_bytes = 2 * 32768 * 8 * 128 * np.dtype(np.float16).itemsize
    return listed(kv_bytes, f"{kv_bytes / 3.00e12 * 1e6:.1f}")


def p4_keys_seen_by_a_chunk():
    start, count = 10, 3
    seen = [sum(1 for t in range(start + count) if t <= start + i) for i in range(count)]
    lab = labkit.load_reference("04-03").causal_mask(start, count, np.arange(start + count))
    assert lab.sum(axis=1).tolist() == seen, "lab 04-03's causal_mask disagrees"
    return f"{listed(*seen)}; {sum(seen)}"


def p4_tokens_per_rank():
    n, world = 10, 4
    answers = []
    for stripe in (1, 4):
        counts = [sum(1 for t in range(n) if (t // stripe) % world == r) for r in range(world)]
        lab = labkit.load_reference("04-07").local_seq_lens(np.array([n]), world, stripe)
        assert lab[:, 0].tolist() == counts, f"lab 04-07's local_seq_lens disagrees for stripe {stripe}"
        answers.append(listed(*counts))
    return "; ".join(answers)


# --------------------------------------------------------------------------- Phase 99

CAPSTONE_BLOCK = 16  # the block size every Phase 99 exercise assumes


@functools.cache
def _capstone_lab_and_model():
    """Lab 99-01's reference engine module and the lab's tiny random Llama (two layers, float32, CPU).
    Loaded once: importing transformers takes seconds, a step of the tiny model milliseconds."""
    labkit.triton_env.require_torch_and_triton()  # skips, naming the install command, without them
    pytest.importorskip("transformers", minversion="5.0",
                        reason='the capstone engine needs transformers >= 5: pip install -e ".[model]"')
    lab = labkit.load_reference("99-01")
    return lab, lab.build_model(lab.tiny_config())


def _capstone_engine(**settings):
    lab, model = _capstone_lab_and_model()
    settings = {"num_gpu_blocks": 64, "block_size": CAPSTONE_BLOCK, "max_num_seqs": 8,
                "max_num_batched_tokens": 256, **settings}
    return lab, lab.Engine(model, **settings)


def _tokens(seed: int, n: int) -> list[int]:
    """``n`` random token ids of the tiny model's vocabulary (512): prompts of different seeds share no block."""
    rng = random.Random(seed)
    return [rng.randrange(512) for _ in range(n)]


def _run(engine, steps: int | None = None) -> list:
    """Step ``engine`` ``steps`` times, or until every request is finished; each step's SchedulerOutput.
    One torch thread, as in the lab's tests: the model is so small that a second thread only waits."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        outputs = []
        while engine.has_unfinished_requests() and len(outputs) != steps:
            assert len(outputs) < 100, "the engine did not finish in 100 steps"
            outputs.append(engine.step())
    finally:
        torch.set_num_threads(threads)
    return outputs


def p99_blocks_for_one_request():
    prompt, answers = 40, []
    for max_new_tokens in (10, 9):
        written = prompt + max_new_tokens - 1  # the last output is sampled, never written back
        blocks = math.ceil(written / CAPSTONE_BLOCK)
        _, engine = _capstone_engine()
        engine.add_request("r", _tokens(1, prompt), max_new_tokens)
        held = sum(len(out.new_block_ids.get("r", [])) for out in _run(engine))  # never preempted: only grows
        assert held == blocks, f"lab 99-01's engine gave the request {held} blocks, expected {blocks}"
        answers.append(blocks)
    return listed(*answers)


def _budget_only_schedule(prompt_lens: dict, max_new_tokens: int, budget: int) -> list[int]:
    """Tokens computed per step when only the budget limits who runs (roomy pool, seats for everyone,
    no shared prefix): requests in arrival order, each computing as much of what it lacks as is left."""
    num_tokens, computed, emitted = dict(prompt_lens), dict.fromkeys(prompt_lens, 0), dict.fromkeys(prompt_lens, 0)
    alive, per_step = list(prompt_lens), []
    while alive:
        left = budget
        for rid in alive:
            k = min(num_tokens[rid] - computed[rid], left)
            if k == 0:
                break
            computed[rid] += k
            left -= k
            if computed[rid] == num_tokens[rid]:  # the chunk reached its last token: one output
                emitted[rid] += 1
                num_tokens[rid] += 1
        alive = [rid for rid in alive if emitted[rid] < max_new_tokens]
        per_step.append(budget - left)
    return per_step


def p99_three_prompts_under_a_budget():
    lens, budget = {"A": 40, "B": 10, "C": 20}, 32
    per_step = _budget_only_schedule(lens, 3, budget)
    _, engine = _capstone_engine(max_num_batched_tokens=budget)
    for seed, (rid, n) in enumerate(lens.items()):
        engine.add_request(rid, _tokens(10 + seed, n), 3)
    ran = [out.total_num_scheduled_tokens for out in _run(engine)]
    assert ran == per_step, f"lab 99-01's engine computed {ran} tokens per step, the brute force {per_step}"
    return f"{len(per_step)}; {listed(*per_step)}"


def p99_the_batch_of_a_mixed_step():
    block = CAPSTONE_BLOCK
    # id: (tokens computed, tokens in all, block table before the step, blocks new this step, tokens now)
    batch = {"A": (40, 41, [3, 8, 5], [], 1), "B": (17, 18, [6, 2], [], 1), "C": (30, 60, [9, 4], [7], 5)}
    computed, _, table, new, k = batch["C"]
    table = table + new  # the table grows before any slot is computed
    slots_c = [table[p // block] * block + p % block for p in range(computed, computed + k)]
    starts = [0]
    for *_, k in batch.values():
        starts.append(starts[-1] + k)
    seq_lens = [computed + k for computed, *_, k in batch.values()]
    rows = [end - 1 for end in starts[1:]]

    lab, engine = _capstone_engine(num_gpu_blocks=16)
    requests = [lab.Request(rid, _tokens(20 + i, total), num_computed_tokens=computed, block_ids=list(table))
                for i, (rid, (computed, total, table, _, _)) in enumerate(batch.items())]
    out = lab.SchedulerOutput(scheduled_requests=requests,
                              num_scheduled_tokens={rid: k for rid, (*_, k) in batch.items()},
                              new_block_ids={rid: list(new) for rid, (_, _, _, new, _) in batch.items()})
    inputs = engine.prepare_inputs(out)
    assert inputs.slot_mapping[starts[2]:] == slots_c, "lab 99-01's prepare_inputs disagrees on C's slots"
    assert (inputs.query_start_loc, inputs.seq_lens, inputs.logits_indices) == (starts, seq_lens, rows), \
        "lab 99-01's prepare_inputs disagrees on the batch's offsets"
    return "; ".join(listed(*values) for values in (slots_c, starts, seq_lens, rows))


def p99_two_prompts_share_a_system_prompt():
    block = CAPSTONE_BLOCK
    system = _tokens(30, 40)
    p1, p2 = system + _tokens(31, 10), system + _tokens(32, 30)
    prompts = {"P2": p2, "P3": list(p1)}
    # After step 0 the cache holds P1's full blocks, each keyed by every token up to its end.
    cached = {tuple(p1[: block * (i + 1)]) for i in range(len(p1) // block)}

    def hit_tokens(prompt):
        hits = 0
        while hits < (len(prompt) - 1) // block and tuple(prompt[: block * (hits + 1)]) in cached:
            hits += 1
        return hits * block

    hits = {rid: hit_tokens(p) for rid, p in prompts.items()}
    step1 = 1 + sum(len(p) - hits[rid] for rid, p in prompts.items())  # P1 decodes one token

    _, engine = _capstone_engine()
    engine.add_request("P1", p1, 4)
    _run(engine, steps=1)
    for rid, prompt in prompts.items():
        engine.add_request(rid, prompt, 4)
    ran = _run(engine, steps=1)[0].total_num_scheduled_tokens
    got = {rid: engine.requests[rid].num_cached_tokens for rid in prompts}
    assert got == hits and ran == step1, f"lab 99-01's engine: hits {got}, {ran} tokens in step 1"
    return listed(hits["P2"], hits["P3"], step1)


def p99_who_is_preempted():
    block, usable = CAPSTONE_BLOCK, 6 - 1
    arrivals = {"A": (16, 2), "B": (24, 4), "C": (30, 4)}  # id: (prompt tokens, max_new_tokens), in order
    # Step 0 admits all three and fills the pool; in step 1 A's 17th token needs a second block.
    assert sum(math.ceil(p / block) for p, _ in arrivals.values()) == usable
    assert math.ceil((arrivals["A"][0] + 1) / block) == 2
    victim = list(arrivals)[-1]  # the newest running request
    back = arrivals[victim][0] + 1  # it comes back with its prompt and its first output
    recompute = {True: back - block * ((back - 1) // block), False: back}  # its first full block still cached

    answers = {}
    for caching in (True, False):
        _, engine = _capstone_engine(num_gpu_blocks=6, max_num_batched_tokens=128, enable_prefix_caching=caching)
        for seed, (rid, (n, m)) in enumerate(arrivals.items()):
            engine.add_request(rid, _tokens(40 + seed, n), m)
        outputs = _run(engine)
        preempted = [rid for out in outputs for rid in out.preempted_req_ids]
        assert preempted == [victim], f"lab 99-01's engine preempted {preempted}, expected {[victim]}"
        when = next(i for i, out in enumerate(outputs) if out.preempted_req_ids)
        again = next(out for out in outputs[when + 1:] if victim in out.num_scheduled_tokens)
        assert again.num_scheduled_tokens[victim] == recompute[caching], \
            f"prefix caching {caching}: the victim recomputed {again.num_scheduled_tokens[victim]} tokens"
        answers[caching] = recompute[caching]
    return listed(victim, answers[True], answers[False])


# Lab 99-02: graphs and the host one step ahead


def p99_which_graph_runs_a_step():
    full, piecewise, max_num_seqs = [1, 2, 4, 8, 16], [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64], 32
    steps = {"a": [1] * 5, "b": [1, 1, 1, 30], "c": [1] * 24, "d": [100]}  # tokens per row, decodes first

    def rule(rows):
        tokens = sum(rows)
        if all(k == 1 for k in rows) and len(rows) <= full[-1]:
            return "full", min(s for s in full if s >= len(rows))
        if tokens <= piecewise[-1]:
            return "piecewise", min(s for s in piecewise if s >= tokens)
        return "eager", tokens

    lab = labkit.load_reference("99-02")
    runner = type("Sizes", (), {"full_sizes": full, "piecewise_sizes": piecewise, "max_num_reqs": max_num_seqs})()
    answers = []
    for name, rows in steps.items():
        mode, size = rule(rows)
        decodes = next((i for i, k in enumerate(rows) if k != 1), len(rows))
        plan = lab.ModelRunner.choose_graph(runner, lab.StepShape(sum(rows), len(rows), decodes, max(rows), 0))
        assert (plan.mode, plan.num_tokens) == (mode, size), \
            f"step ({name}): lab 99-02's choose_graph gives {plan}, the rule {mode} {size}"
        answers.append(f"{mode} {size}")
    return "; ".join(answers)


@functools.cache
def _gpu_engine_lab_and_model():
    """Lab 99-02's reference module and its own tiny model (the engine takes its model over)."""
    _capstone_lab_and_model()  # the same skips
    lab = labkit.load_reference("99-02")
    return lab, lab.build_model(lab.tiny_config())


def p99_a_request_one_step_late():
    prompt, max_new_tokens = 10, 3
    # Brute force: a placeholder per sampled step; a call launches a step unless the outputs known plus
    # those on their way reach max_new_tokens, then reads the step launched by the call before.
    scheduled, known, placeholders, in_flight, computed = [], [], 0, False, 0
    outputs = 0
    while outputs < max_new_tokens:
        k = 0 if outputs + placeholders >= max_new_tokens else (prompt if computed == 0 else 1)
        computed += k
        launched = k > 0
        placeholders += launched
        if in_flight:
            placeholders, outputs = placeholders - 1, outputs + 1
        in_flight = launched
        scheduled.append(k)
        known.append(outputs)
    lab, model = _gpu_engine_lab_and_model()
    calls = {}
    for asynchronous in (True, False):
        engine = lab.Engine(model, num_gpu_blocks=16, block_size=CAPSTONE_BLOCK, max_num_seqs=4,
                            max_num_batched_tokens=64, cudagraph_mode="none", async_scheduling=asynchronous)
        engine.add_request("r", _tokens(50, prompt), max_new_tokens)
        ran, seen = [], []
        while engine.has_unfinished_requests():
            assert len(ran) < 10, "the engine did not finish in 10 calls"
            ran.append(_run(engine, steps=1)[0].num_scheduled_tokens.get("r", 0))
            seen.append(len(engine.requests["r"].output_token_ids))
        if asynchronous:
            assert (ran, seen) == (scheduled, known), \
                f"lab 99-02's engine scheduled {ran} and knew {seen} outputs, the brute force {scheduled}, {known}"
        calls[asynchronous] = len(ran)
    assert calls[False] == max_new_tokens, f"without async, {calls[False]} calls for {max_new_tokens} outputs"
    return f"{listed(*scheduled)}; {listed(*known)}; {calls[False]}"


def _pipeline_ms(host: float, gpu: float, steps: int, ahead: bool) -> float:
    """When the last of ``steps`` steps ends: the host prepares and launches each step (``host`` ms),
    the GPU runs it (``gpu`` ms) once launched and free; waiting, the host starts the next step only
    after the GPU finished this one."""
    host_free = gpu_free = 0.0
    for _ in range(steps):
        launched = host_free + host
        gpu_free = max(launched, gpu_free) + gpu
        host_free = launched if ahead else gpu_free
    return gpu_free


def p99_waiting_or_one_step_ahead():
    answers = []
    for host, gpu in ((3, 5), (6, 5)):
        waiting, ahead = _pipeline_ms(host, gpu, 100, False), _pipeline_ms(host, gpu, 100, True)
        assert waiting == 100 * (host + gpu) and ahead == max(host + 100 * gpu, 100 * host + gpu)
        answers += [f"{waiting:g}", f"{ahead:g}"]
    return f"{answers[0]}, {answers[1]}; {answers[2]}, {answers[3]}"


# Lab 99-03: the physical bound


def p99_physical_bound_of_a_decode_step():
    hidden, layers, heads, kv_heads, dim, inter, vocab = 2048, 16, 32, 8, 64, 8192, 32000
    batch, context, read_bw, rate, itemsize = 256, 614, 4.43e12, 800e12, 2
    per_layer = [(hidden, (heads + 2 * kv_heads) * dim), (heads * dim, hidden), (hidden, 2 * inter), (inter, hidden)]
    products = per_layer * layers + [(hidden, vocab)]
    gemm_s = sum(max(2 * batch * k * n / rate, k * n * itemsize / read_bw) for k, n in products)
    kv_s = layers * 2 * batch * context * kv_heads * dim * itemsize / read_bw  # keys and values, every layer
    gemm_ms, kv_ms = round(gemm_s * 1e3, 2), round(kv_s * 1e3, 2)

    pytest.importorskip("torch")  # lab 99-03's bench imports labkit's torch helpers
    pytest.importorskip("triton")  # and its split-K GEMM, a Triton kernel
    lab_dir = registry.get("99-03").path
    bench = loader.exec_file(lab_dir, loader.module_name(lab_dir, "bench"), lab_dir / "bench.py")
    state = type("State", (), {"batch": batch, "seq_lens": [context] * batch})()
    got = bench.physical_bound(bench.MODEL_1B, state, rate / 1e12, read_bw, itemsize)
    assert (round(got["gemm_ms"], 2), round(got["kv_ms"], 2)) == (gemm_ms, kv_ms), \
        f"lab 99-03's bench.physical_bound gives {got}, the brute force {gemm_ms} ms and {kv_ms} ms"
    return listed(f"{gemm_ms:.2f}", f"{kv_ms:.2f}", f"{(gemm_s + kv_s) * 1e3:.2f}")


CHECKS = {
    (P2, "W3"): p2_blocks_for_a_prompt,
    (P2, "C1"): p2_slot_mapping_by_hand,
    (P2, "C2"): p2_bytes_per_token,
    (P2, "C3"): p2_tokens_that_fit,
    (P2, "C4"): p2_which_kv_head,
    (P2, "C5"): p2_inside_the_key_cache,
    (P2, "C7"): p2_blocks_a_gpu_gets,
    (P2, "C8"): p2_the_same_prompt_twice,
    (P2, "D1"): p2_choosing_a_block_size,
    (P2, "D2"): p2_sharing_a_system_prompt,
    (P4, "W3"): p4_one_correction_factor,
    (P4, "C1"): p4_online_softmax_by_hand,
    (P4, "C2"): p4_merging_two_partitions,
    (P4, "C3"): p4_v1_or_v2,
    (P4, "C4"): p4_shared_memory_of_v1,
    (P4, "C5"): p4_partitions_of_a_sequence,
    (P4, "C6"): p4_bytes_of_a_decode_step,
    (P4, "C8"): p4_keys_seen_by_a_chunk,
    (P4, "C9"): p4_tokens_per_rank,
    (P99, "W2"): p99_blocks_for_one_request,
    (P99, "C1"): p99_three_prompts_under_a_budget,
    (P99, "C2"): p99_the_batch_of_a_mixed_step,
    (P99, "C3"): p99_two_prompts_share_a_system_prompt,
    (P99, "C4"): p99_who_is_preempted,
    (P99, "C5"): p99_which_graph_runs_a_step,
    (P99, "C6"): p99_a_request_one_step_late,
    (P99, "C7"): p99_waiting_or_one_step_ahead,
    (P99, "C8"): p99_physical_bound_of_a_decode_step,
}


def test_every_written_answer_has_a_check_and_every_check_an_answer():
    written = set(written_answers())
    assert written - set(CHECKS) == set(), "answers on an EXERCISES.md page that no check here recomputes"
    assert set(CHECKS) - written == set(), "checks here whose answer is no longer on its page"


@pytest.mark.parametrize("key", sorted(CHECKS), ids=lambda key: f"{key[0][:8]}-{key[1]}")
def test_written_answer_is_what_the_code_computes(key):
    """The answer on the page equals the recomputed one: catches a page edited without the code,
    and a lab whose reference changed behaviour under a page that still describes the old one."""
    written = written_answers().get(key)
    assert written is not None, f"{key[0]}/EXERCISES.md has no written answer for {key[1]}"
    expected = CHECKS[key]()
    assert written == expected, f"{key[0]}/EXERCISES.md, {key[1]}: the page says {written!r}, the code {expected!r}"
