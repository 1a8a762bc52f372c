"""The registry of labs: one entry per lab, in study order.

Everything that lists labs reads this table: the README's lab map (checked by
``tests/test_repo.py``), the ``labs`` command line, the maintainers' checks.
Numbering follows the book's chapters, not study order, which crosses phases: no lab may
need an idea that a later lab teaches. 02-06 (numpy) comes before 04-01 (the online softmax in
numpy), which comes before 02-04 (the same recurrence in a Triton kernel), which comes before 04-03
(prefill: the recurrence per query row, then a Triton kernel over query tiles).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Lab:
    id: str  # "02-06": phase number, lab number
    phase: str  # the phase folder, e.g. "phase-02-paged-attention"
    folder: str  # the lab folder, relative to the repository root
    title: str
    builds: str  # what the learner builds, one line for the lab map
    # "python" (the standard library only), "cpu" (numpy only), "triton" (torch + triton; GPU or
    # interpreter) or "distributed" (torch.distributed: gloo on a CPU, NCCL on GPUs); "model" as well:
    # a transformer built with transformers (a tiny one on a CPU)
    tags: tuple[str, ...]

    @property
    def path(self) -> Path:
        return ROOT / self.folder

    @property
    def needs(self) -> tuple[str, ...]:
        """The ids of the earlier labs this one builds on (``NEEDS``)."""
        return NEEDS.get(self.id, ())

    @property
    def runs_on(self) -> str:
        """Where the lab runs, for the README's map and ``labs list``."""
        if "model" in self.tags:
            return "GPU, or CPU with a tiny model"
        if "triton" in self.tags:
            return "GPU, or CPU via Triton's interpreter"
        if "python" in self.tags:
            return "CPU (plain Python)"
        if "distributed" in self.tags:
            return "CPU (numpy + torch.distributed, gloo), or several GPUs (NCCL)"
        return "CPU (numpy)"


def _lab(id: str, phase: str, name: str, title: str, builds: str, *tags: str) -> Lab:
    return Lab(id, phase, f"{phase}/labs/{name}", title, builds, tags)


P2 = "phase-02-paged-attention"
P4 = "phase-04-attention-backends"
P99 = "phase-99-capstone"

# Study order is the order of this list.
LABS: tuple[Lab, ...] = (
    _lab("02-01", P2, "lab-01-block-allocator", "The block allocator",
         "KV-cache blocks, the O(1) free queue, the block pool with its prefix-cache index", "python"),
    _lab("02-02", P2, "lab-02-fragmentation-viz", "Fragmentation, measured: contiguous vs paged",
         "reserved vs used KV memory of one request stream, admissions, the block-size trade-off", "cpu"),
    _lab("02-03", P2, "lab-03-kv-memory-budget", "The KV memory budget: how many blocks a GPU gets",
         "KV bytes per token, the profiled memory budget, vLLM's block count (GPU demo)", "python"),
    _lab("02-05", P2, "lab-05-share-and-evict", "Share and evict: the KV-cache manager",
         "prefix-cache hits, slot allocation, freeing tail first, sharing and reviving blocks", "python"),
    _lab("02-06", P2, "lab-06-paged-attention-numpy", "Paged attention in pure numpy",
         "slot mapping, KV scatter, gather-through-the-table attention (GQA)", "cpu"),
    _lab("04-01", P4, "lab-01-paged-attention-gather", "Paged attention with online softmax",
         "one streaming pass over paged blocks with a running max and correction", "cpu"),
    _lab("02-04", P2, "lab-04-paged-attention-triton", "A block-table-indexed attention kernel in Triton",
         "a torch reference and a Triton decode kernel that reads the block table", "triton"),
    _lab("04-03", P4, "lab-03-causal-prefill-attention", "Causal prefill over the paged cache",
         "chunked causal attention with a start offset (numpy), a ragged-batch Triton prefill kernel",
         "triton"),
    _lab("04-04", P4, "lab-04-flash-decoding-partitions", "Flash-decoding: split the keys, merge the partials",
         "the (max, denominator, accumulator) summary and its exact merge", "cpu"),
    _lab("04-05", P4, "lab-05-kernel-walkthrough-exercises", "Inside vLLM's paged-attention kernel: exercises",
         "block-table arithmetic, shared-memory budget, a QK score kernel (Triton; CUDA on a GPU)",
         "triton"),
    _lab("04-06", P4, "lab-06-paged-decode-roofline", "Paged decode at the memory roofline",
         "split-KV + grouped-query Triton decode kernels with an exact reduce", "triton"),
    _lab("04-02", P4, "lab-02-backend-selection", "Choosing an attention backend",
         "vLLM v0.22.1's backend selector with its reasons, and a dispatcher fed by H100 timings", "python"),
    _lab("04-07", P4, "lab-07-context-parallel-decode", "Decode with the KV cache split across ranks",
         "a striped KV layout over ranks, per-rank summaries, their combine by all-reduce or all-gather",
         "distributed"),
    _lab("99-01", P99, "lab-01-serving-engine", "Capstone: a serving engine for a real model",
         "the engine step (schedule, batch, update) over the course's paged cache and kernels, token for token "
         "with transformers' generate", "triton", "model"),
    _lab("99-02", P99, "lab-02-engine-at-gpu-speed", "Capstone: the serving engine at GPU speed",
         "a persistent batch, inputs in numpy, CUDA graphs for every step, the host one step ahead, a cheap "
         "scheduler: 99-01's tokens, the GPU busy", "triton", "model"),
    _lab("99-03", P99, "lab-03-model-at-the-roofline", "Capstone: the model at the roofline",
         "merged GEMMs, a fused residual add + RMSNorm, SiLU-and-mul, rotary fused with the KV write, greedy "
         "sampling on the GPU, a decode attention tuned for the model: generate's tokens, each launch counted",
         "triton", "model"),
)

PHASES = {
    P2: "Phase 2: paged attention",
    P4: "Phase 4: attention backends",
    P99: "Phase 99: capstone",
}


# What each lab builds on: the earlier labs whose ideas or code it needs, as its README says. The
# site's course map draws these; tests/test_docs_site.py checks that each is an earlier lab and that
# every lab whose reference solution a lab loads (labkit.load_reference) is listed.
NEEDS = {
    "02-02": ("02-01",),
    "02-03": ("02-01", "02-02"),
    "02-05": ("02-01",),
    "02-06": ("02-01", "02-05"),
    "04-01": ("02-06",),
    "02-04": ("02-06", "04-01"),
    "04-03": ("02-04", "02-06", "04-01"),
    "04-04": ("04-01",),
    "04-05": ("02-04", "04-04"),
    "04-06": ("02-04", "04-01", "04-04"),
    "04-02": ("04-01", "04-03", "04-04", "04-06"),
    "04-07": ("02-06", "04-04", "04-06"),
    "99-01": ("02-01", "02-04", "02-05", "02-06", "04-03", "04-06"),
    "99-02": ("02-01", "04-03", "04-06", "99-01"),
    "99-03": ("04-03", "04-06", "99-01", "99-02"),
}


def get(lab_id: str) -> Lab:
    """The lab with this id ("02-06"), or a ValueError that lists the ids."""
    for lab in LABS:
        if lab.id == lab_id:
            return lab
    known = ", ".join(lab.id for lab in LABS)
    raise ValueError(f"no lab {lab_id!r}; the labs are: {known}")


def lab_for_path(path: Path) -> Lab | None:
    """The lab whose folder holds ``path`` (a file or the folder itself), if any."""
    path = Path(path).resolve()
    for lab in LABS:
        if path == lab.path or lab.path in path.parents:
            return lab
    return None


def render_lab_map() -> str:
    """The README's lab map: a Markdown table in study order."""
    rows = ["| # | lab | what you build | runs on | folder |", "|---|---|---|---|---|"]
    for n, lab in enumerate(LABS, start=1):
        rows.append(
            f"| {n} | {lab.id} {lab.title} | {lab.builds} | {lab.runs_on} | [`{lab.folder}`]({lab.folder}) |"
        )
    return "\n".join(rows)


if __name__ == "__main__":  # python -m labkit.registry: the lab map for README.md
    print(render_lab_map())
