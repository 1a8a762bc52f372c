"""Figures of lab 99-03 (``python figures.py`` rewrites them; a minute on a CPU).

Each is an SVG with a dark-mode twin (``*.dark.svg``), drawn 7 in wide for the site's column.

- ``figures/launches.svg``: the kernels one decode step launches, engine by engine (lab 99-02's runner,
  then this lab's after each step), counted by ``_launches.LaunchCounter`` in the forward pass itself:
  a 16-layer model of the benchmark's shape in miniature (8 query heads on 2 KV heads, tables of 128
  tokens, so that lab 04-06's rule takes one split as it does at the benchmark's full batch), four
  requests decoding, the decode kernels run by Triton's interpreter (lab 04-06's input checks, which
  read values on a CPU only, are not counted). What is counted does not depend on the sizes: the
  benchmark's model launches the same kernels on larger tensors (torch's CPU and GPU operators differ
  a little: a GPU profile of lab 99-02's step counts its own).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from labkit import load_reference, load_sibling, triton_env  # noqa: E402
from labkit.figures import COLORS, SERIES, WIDTH, pyplot, save  # noqa: E402

triton_env.select_backend()

CONFIG = dict(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=16, num_attention_heads=8,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=128, bos_token_id=None, eos_token_id=None,
    pad_token_id=None, tie_word_embeddings=False,
)
KINDS = ("matrix products", "this lab's Triton kernels", "other torch operators", "attention")
ENGINES = ("0. lab 99-02", "1. merged", "2. norms", "3. rotary + KV", "4. sampling", "5. attention")


def counts() -> list[dict[str, int]]:
    """Per engine, the launches of one decode step of four requests, by kind."""
    import torch
    import transformers

    sys.path.insert(0, str(HERE))
    from _launches import GEMMS, LaunchCounter, uncounted

    lab = load_sibling(__file__)
    gpu02 = load_reference("99-02")
    # Lab 04-06 checks the values of CPU tensors (on a GPU, where reading them would make the host wait, it
    # does not): those reads are no launches of a step.
    decode_globals = load_reference("04-06").paged_decode.__globals__
    check = decode_globals["_check_inputs"]

    def quiet_check(*args, **kwargs):
        with uncounted():
            return check(*args, **kwargs)

    decode_globals["_check_inputs"] = quiet_check
    torch.set_num_threads(1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()
    engine = gpu02.Engine(model, num_gpu_blocks=40, block_size=16, max_num_seqs=4, max_num_batched_tokens=128,
                          cudagraph_mode="none", async_scheduling=False)
    for i, n in enumerate((20, 37, 9, 50)):
        engine.add_request(f"r{i}", [(7 * i + j) % CONFIG["vocab_size"] for j in range(n)], 8)
    with torch.no_grad():
        while engine.waiting or any(r.num_computed_tokens < len(r.prompt_token_ids) for r in engine.running):
            engine.step()
        engine.step()
        source = engine.runner
        n = source.last_shape.num_reqs
        rows = []
        for rung in range(6):
            if rung == 0:
                runner = gpu02.ModelRunner(model, 2, 16, n, n, "triton", "none")
            else:
                runner = lab.ModelRunner(model, 2, 16, n, n, "triton", "none", fused_steps=rung)
            runner.kv_caches = source.kv_caches
            for name in ("input_ids", "positions", "slot_mapping", "seq_lens", "logits_indices"):
                getattr(runner.buffers, name).device[:n].copy_(getattr(source.buffers, name).device[:n])
            runner.buffers.query_start_loc.device[: n + 1].copy_(source.buffers.query_start_loc.device[: n + 1])
            runner.input_batch.block_table.table.device[:n].copy_(source.input_batch.block_table.table.device[:n])
            with LaunchCounter() as counter:
                if rung:
                    runner._counter = counter  # the fused runner counts its attention apart
                    runner._forward(n, n, n, 1, n)
                else:  # lab 99-02's runner: its attention counted apart the same way, its KV write not
                    attention, runner_globals = runner._attention, gpu02.ModelRunnerBase._attention.__globals__
                    write_kv = runner_globals["write_kv"]

                    def counted(*args, attention=attention):
                        with counter.section("attention"):
                            attention(*args)

                    def counted_write(*args, write_kv=write_kv):
                        with counter.section(None):
                            write_kv(*args)

                    runner._attention, runner_globals["write_kv"] = counted, counted_write
                    try:
                        runner._forward(n, n, n, 1, n)
                    finally:
                        runner_globals["write_kv"] = write_kv
            found = counter.as_dict()
            gemms = sum(v for k, v in found["torch"].items() if k in GEMMS)
            inside = found.get("attention", {"triton": {}, "torch": {}})
            rows.append({
                "matrix products": gemms,
                "this lab's Triton kernels": sum(found["triton"].values()),
                "other torch operators": sum(found["torch"].values()) - gemms,
                "attention": sum(inside["triton"].values()) + sum(inside["torch"].values()),
            })
    return rows


def launches_figure(path: Path, rows: list[dict[str, int]]) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(WIDTH, 3.6), layout="constrained")
    colors = dict(zip(KINDS, SERIES, strict=False))
    for x, row in enumerate(rows):
        bottom = 0
        for kind in KINDS:
            if row[kind]:
                ax.bar(x, row[kind], 0.62, bottom=bottom, color=colors[kind], label=kind if x == 0 else None)
                bottom += row[kind]
        ax.text(x, bottom, f"{bottom}", ha="center", va="bottom", fontsize=9, color=COLORS["ink"])
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colors[k]) for k in KINDS]
    ax.legend(handles, KINDS, loc="upper right", frameon=False, fontsize=9)
    ax.set_xticks(range(len(rows)), ENGINES)
    ax.set_ylabel("launches per decode step")
    ax.set_ylim(0, max(sum(r.values()) for r in rows) * 1.15)
    ax.set_title("Kernels one decode step launches (16 layers), counted in the forward pass", loc="left")
    ax.grid(axis="y", alpha=0.6)
    ax.set_axisbelow(True)
    return save(fig, path)


def main() -> None:
    rows = counts()
    for engine, row in zip(ENGINES, rows, strict=True):
        print(f"{engine}: {row} = {sum(row.values())}")
    print(f"wrote {launches_figure(HERE / 'figures' / 'launches.svg', rows)}")


if __name__ == "__main__":
    main()
