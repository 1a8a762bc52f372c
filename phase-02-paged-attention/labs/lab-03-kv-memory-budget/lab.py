"""Lab 02-03 on a GPU: measure what vLLM measures at start-up, predict its block count, check it.

    python phase-02-paged-attention/labs/lab-03-kv-memory-budget/lab.py          # on a CUDA GPU (about a minute)
    python phase-02-paged-attention/labs/lab-03-kv-memory-budget/lab.py --dry    # anywhere: no GPU needed
    LAB_IMPL=starter python phase-02-paged-attention/labs/lab-03-kv-memory-budget/lab.py --dry   # your functions

On a GPU: builds the model from its config with random weights (nothing is downloaded), measures
the weights, the peak activation of a profiling run (vLLM's dummy requests, their forward pass and
a sampling step) and the memory taken outside torch, feeds them to the lab's functions
(``available_kv_memory``, ``num_gpu_blocks``, ...), allocates a KV cache of the predicted size, runs
the profiling run beside it, and then looks for the edge of the card: the largest cache the
profiling run still fits beside, found by allocating and catching
``torch.cuda.OutOfMemoryError`` (never more than the card's free memory, never managed memory).

``--dry``: the same arithmetic on a nominal card with stated assumptions for what only a GPU can
measure, then the same code path (build, profiling run, cache, profiling run beside it) on a tiny
model on the CPU. ``--out FILE`` also writes the report as Markdown.

Needs torch and transformers (``pip install -e ".[torch,model]"``).
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

import labkit  # noqa: E402

HERE = Path(__file__).resolve().parent
KiB, MiB, GiB = 2**10, 2**20, 2**30
GPU = "cuda"  # the device of the GPU run

# Model shapes as their config.json files give them (the keys transformers needs to build the model).
MODELS = {
    "llama-3-8b": {  # meta-llama/Meta-Llama-3-8B
        "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192, "rope_theta": 500000.0,
        "vocab_size": 128256, "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    },
    "opt-125m": {  # facebook/opt-125m
        "model_type": "opt", "hidden_size": 768, "ffn_dim": 3072, "num_attention_heads": 12, "num_hidden_layers": 12,
        "max_position_embeddings": 2048, "vocab_size": 50272, "word_embed_proj_dim": 768, "torch_dtype": "float16",
    },
    "tiny-llama": {  # small enough for a CPU: the dry run's model
        "model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "num_attention_heads": 8,
        "num_hidden_layers": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024, "vocab_size": 4096,
        "tie_word_embeddings": False, "torch_dtype": "float32",
    },
}

# --dry: what only a GPU can measure, stated instead (an 80 GiB card, a CUDA context of 0.5 GiB).
ASSUMED_TOTAL = 80 * GiB
ASSUMED_FREE = ASSUMED_TOTAL - GiB // 2
ASSUMED_ACTIVATION = 3 * GiB // 2
ASSUMED_NON_TORCH = 400 * MiB


class Report:
    """Prints each line and keeps it, for ``--out``."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def write(self, path: Path, title: str) -> None:
        body = "\n".join(self.lines)
        path.write_text(f"# {title}\n\n```\n{body}\n```\n", encoding="utf-8")
        print(f"\nwrote {path}")


def gib(nbytes: float) -> str:
    return f"{nbytes / GiB:.2f} GiB"


def require_torch_and_transformers():
    try:
        import torch
        import transformers
    except ImportError:
        raise SystemExit('this demo needs torch and transformers: pip install -e ".[torch,model]"') from None
    return torch, transformers


# ----------------------------------------------------------------------------- the model


def build_model(config: dict, device: str):
    """The model of ``config`` with random weights, on ``device``, in the config's dtype."""
    torch, transformers = require_torch_and_transformers()
    hf_config = transformers.AutoConfig.for_model(**config)
    dtype = getattr(torch, config["torch_dtype"])
    torch.manual_seed(0)
    with torch.device(device):  # parameters are created on the device: no copy of the weights elsewhere
        try:
            model = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=dtype)
        except TypeError:  # transformers before 4.56 calls it torch_dtype
            model = transformers.AutoModelForCausalLM.from_config(hf_config, torch_dtype=dtype)
    return model.eval()


def profile_forward(model, config: dict, num_tokens: int, max_num_seqs: int, device: str):
    """What vLLM v0.22.1's ``profile_run`` does, on a transformers model: ``_dummy_run`` splits the
    ``num_tokens`` budget into ``min(num_tokens, max_num_seqs)`` dummy requests of equal length (vLLM
    gives the remainder to the last one; here it is left out, and with the defaults there is none),
    runs one forward pass over them and keeps each request's last hidden state; then
    ``_dummy_sampler_run`` computes their logits and samples one token per request."""
    import torch

    num_reqs = min(num_tokens, max_num_seqs)
    seq_len = min(num_tokens // num_reqs, config["max_position_embeddings"])
    generator = torch.Generator(device=device).manual_seed(1)
    input_ids = torch.randint(0, config["vocab_size"], (num_reqs, seq_len), device=device, generator=generator)
    with torch.inference_mode():
        hidden = model.get_decoder()(input_ids=input_ids, use_cache=False).last_hidden_state
        last = hidden[:, -1]  # [num_reqs, hidden_size]: one row per request, as vLLM's logit_indices
        del hidden
        logits = model.get_output_embeddings()(last)  # [num_reqs, vocab_size], in the model's dtype
        return dummy_sample(logits, generator)


def dummy_sample(logits, generator):
    """vLLM v0.22.1's dummy sampling step (``_dummy_sampler_run``: temperature 0.5, top-k of all but
    one token, top-p 0.9), on the sort-based PyTorch path (``apply_top_k_top_p_pytorch`` in
    ``vllm/v1/sample/ops/topk_topp_sampler.py``): float32 logits, a full sort of the vocabulary,
    softmax and cumulative sums, one token per request. Its float32 copies of ``[num_reqs,
    vocab_size]`` are part of the profiled peak. v0.22.1 takes this path only when FlashInfer's
    sampler is off (``VLLM_USE_FLASHINFER_SAMPLER=0``, on by default on CUDA) and for fewer than 8
    requests (from 8 on, a Triton kernel replaces the sort): this is the costliest of its paths."""
    import torch

    vocab = logits.shape[-1]
    logits = logits.to(torch.float32).div_(0.5)  # the sampler works in float32; temperature 0.5
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    top_k = vocab - 1  # the k-th largest value is column vocab - k of the ascending sort
    kth = logits_sort[:, vocab - top_k : vocab - top_k + 1]
    logits_sort.masked_fill_(logits_sort < kth, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = torch.cumsum(probs_sort, dim=-1, out=probs_sort)
    top_p_mask = probs_sum <= 1 - 0.9
    top_p_mask[:, -1] = False  # at least one token
    logits_sort.masked_fill_(top_p_mask, -float("inf"))
    logits = logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
    del logits_sort, logits_idx, probs_sort, probs_sum, top_p_mask
    probs = logits.softmax(dim=-1, dtype=torch.float32)
    q = torch.empty_like(probs).exponential_(generator=generator)  # sampling without a CPU sync
    return probs.div_(q).argmax(dim=-1)


def allocate_kv_cache(lab, config: dict, num_blocks: int, block_size: int, device: str):
    """The KV cache of ``num_blocks`` blocks: one zeroed byte buffer (vLLM zeroes its own), viewed as
    ``[layers, 2 (K and V), num_blocks, block_size, kv_heads, head_dim]`` in the cache's dtype."""
    import torch

    page = lab.page_size_bytes(config, block_size)
    layers = config["num_hidden_layers"]
    buffer = torch.zeros(layers * num_blocks * page, dtype=torch.int8, device=device)
    heads = config.get("num_key_value_heads") or config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    dtype = getattr(torch, config["torch_dtype"])
    return buffer.view(dtype).view(layers, 2, num_blocks, block_size, heads, head_dim)


# ----------------------------------------------------------------------------- GPU memory


@dataclass
class Snapshot:
    """What vLLM's ``MemorySnapshot`` records: the device's view and torch's view of the memory."""

    free: int
    total: int
    torch_reserved: int  # what torch's caching allocator holds from CUDA
    torch_allocated: int  # what live tensors use

    @classmethod
    def take(cls) -> Snapshot:
        import torch

        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        return cls(free, total, torch.cuda.memory_reserved(), torch.cuda.memory_allocated())

    @property
    def non_torch(self) -> int:
        """Used on the device but not through torch: the CUDA context, library workspaces."""
        return (self.total - self.free) - self.torch_reserved


def release() -> None:
    import torch

    gc.collect()
    torch.cuda.empty_cache()


def _forward_beside_cache(lab, model, config, num_blocks, block_size, tokens, max_num_seqs) -> bool:
    import torch

    try:
        cache = allocate_kv_cache(lab, config, num_blocks, block_size, GPU)  # noqa: F841  (held, not read)
        profile_forward(model, config, tokens, max_num_seqs, GPU)
        torch.cuda.synchronize()
        return True
    except torch.cuda.OutOfMemoryError:
        return False
    except RuntimeError as err:  # a library that allocates on its own says it differently
        if "out of memory" in str(err).lower() or "ALLOC_FAILED" in str(err):
            return False
        raise


def fits_beside_forward(lab, model, config, num_blocks, block_size, tokens, max_num_seqs) -> bool:
    """Whether a cache of ``num_blocks`` blocks and the profiling run fit together."""
    ok = _forward_beside_cache(lab, model, config, num_blocks, block_size, tokens, max_num_seqs)
    release()  # after the call has returned: its tensors (and any exception's frames) are gone
    return ok


def find_edge(lab, model, config, block_size, tokens, max_num_seqs, guess, ceiling, out) -> tuple[int, int]:
    """The largest cache (in blocks) that fits beside the forward pass, searched around ``guess``;
    ``ceiling``: a count that cannot fit (more than the free memory). Returns (blocks, probes)."""
    probes = 0

    def fits(n: int) -> bool:
        nonlocal probes
        probes += 1
        ok = fits_beside_forward(lab, model, config, n, block_size, tokens, max_num_seqs)
        out(f"    probe {probes:2d}: {n} blocks -> {'fits' if ok else 'out of memory'}")
        return ok

    lo, step = guess - 8, 8
    while lo > 0 and not fits(lo):  # a count that fits, below the guess
        step *= 2
        lo = max(guess - step, 0)
    hi, step = guess + 8, 8
    while hi < ceiling and fits(hi):  # a count that does not fit, above it
        lo, step = hi, step * 2
        hi = min(guess + step, ceiling)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo, probes


# ----------------------------------------------------------------------------- the two runs


def describe_model(lab, config: dict, name: str, block_size: int, out) -> None:
    layers = config["num_hidden_layers"]
    per_token = lab.kv_bytes_per_token(config)
    page = lab.page_size_bytes(config, block_size)
    heads = config.get("num_key_value_heads") or config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    out(f"model: {name}, {layers} layers, {heads} KV heads of {head_dim}, {config['torch_dtype']}, random weights")
    out(f"KV cache: {per_token / KiB:.1f} KiB per token; a block of {block_size} tokens: {page / KiB:.1f} KiB a "
        f"layer, {layers * page / MiB:.2f} MiB in all")


def predict(lab, config, out, *, total, free, utilization, weights, activation, non_torch, block_size,
            max_model_len, log_lines=True) -> int:
    """The lab's functions on the measured numbers, printed the way vLLM prints them."""
    available = lab.available_kv_memory(total, free, utilization, weights, activation, non_torch)
    blocks = lab.num_gpu_blocks(available, config, block_size)
    for label, value in [(f"requested ({utilization} x {gib(total)})", math.ceil(total * utilization)),
                         ("- weights", weights), ("- peak activation", activation),
                         ("- non-torch increase", non_torch), ("= available for KV cache", available)]:
        out(f"  {label:<32} {gib(value):>11}")
    out(f"  # GPU blocks: {blocks}")
    if log_lines:
        concurrency = lab.max_concurrency(blocks, block_size, max_model_len)
        out(f"  vLLM logs: \"Available KV cache memory: {available / GiB:.2f} GiB\"")
        # v0.22.1 logs int(max_concurrency * max_model_len): num_blocks * block_size when max_model_len
        # is a multiple of the block size, less otherwise.
        out(f"  vLLM logs: \"GPU KV cache size: {int(concurrency * max_model_len):,} tokens\"")
        out(f"  vLLM logs: \"Maximum concurrency for {max_model_len:,} tokens per request: {concurrency:.2f}x\"")
    return blocks


def run_gpu(lab, args, out) -> None:
    torch, transformers = require_torch_and_transformers()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU here: run with --dry for the arithmetic and a tiny model on the CPU")
    config, started = MODELS[args.model], time.perf_counter()
    torch.cuda.set_device(0)
    torch.zeros(1, device=GPU)  # the CUDA context exists before the baseline, as in vLLM's worker
    release()
    base = Snapshot.take()
    props = torch.cuda.get_device_properties(0)
    out(f"device: {props.name}, {gib(base.total)} total, {gib(base.free)} free at start; torch {torch.__version__}, "
        f"transformers {transformers.__version__}")
    describe_model(lab, config, args.model, args.block_size, out)

    model = build_model(config, GPU)
    release()
    weights = torch.cuda.memory_allocated() - base.torch_allocated
    params = sum(p.numel() for p in model.parameters())
    out(f"\nweights: {params:,} parameters, {gib(weights)} allocated by torch (built in "
        f"{time.perf_counter() - started:.0f} s)")

    torch.cuda.reset_peak_memory_stats()
    before = Snapshot.take()
    profile_forward(model, config, args.profile_tokens, args.max_num_seqs, GPU)
    torch.cuda.synchronize()
    peak, peak_reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    release()
    after = Snapshot.take()
    activation = peak - before.torch_allocated
    non_torch = max(after.non_torch - base.non_torch, 0)
    num_reqs = min(args.profile_tokens, args.max_num_seqs)
    out(f"profiling run, {args.profile_tokens} tokens as {num_reqs} dummy requests of "
        f"{args.profile_tokens // num_reqs}, their logits and a sampling step: peak activation {gib(activation)} "
        f"(allocated), "
        f"{gib(peak_reserved - before.torch_reserved)} (reserved by the allocator); non-torch increase "
        f"{gib(non_torch)}")

    out(f"\nthe prediction, at gpu_memory_utilization {args.utilization}:")
    blocks = predict(lab, config, out, total=base.total, free=base.free, utilization=args.utilization,
                     weights=weights, activation=activation, non_torch=non_torch, block_size=args.block_size,
                     max_model_len=args.max_model_len)
    block_bytes = lab.page_size_bytes(config, args.block_size) * config["num_hidden_layers"]

    out(f"\nthe check: a cache of {blocks} blocks ({gib(blocks * block_bytes)}), then the profiling run beside it")
    cache = allocate_kv_cache(lab, config, blocks, args.block_size, GPU)
    torch.cuda.reset_peak_memory_stats()
    try:
        profile_forward(model, config, args.profile_tokens, args.max_num_seqs, GPU)
    except torch.cuda.OutOfMemoryError:
        out("  OUT OF MEMORY: the predicted cache does not leave room for the profiling run")
    torch.cuda.synchronize()
    peak_with_cache = torch.cuda.max_memory_allocated()
    now = Snapshot.take()
    budget = int(base.total * args.utilization)
    used = peak_with_cache + max(now.non_torch - base.non_torch, 0)
    verdict = "it fits" if used <= budget else "OVER BUDGET"
    out(f"  {verdict}: torch peak {gib(peak_with_cache)} + non-torch {gib(used - peak_with_cache)} = {gib(used)} "
        f"of the {gib(budget)} requested; {(budget - used) / MiB:.1f} MiB to spare "
        f"({(budget - used) / block_bytes:.2f} blocks)")
    del cache
    release()

    if args.no_edge:
        out(f"\ndone in {time.perf_counter() - started:.0f} s")
        return
    out("\nthe edge of the card: the same arithmetic with the whole free memory (utilization 1.0 of it)")
    edge = predict(lab, config, out, total=base.free, free=base.free, utilization=1.0, weights=weights,
                   activation=activation, non_torch=non_torch, block_size=args.block_size,
                   max_model_len=args.max_model_len, log_lines=False)
    ceiling = Snapshot.take().free // block_bytes + 1  # more than the free memory: cannot fit
    largest, probes = find_edge(lab, model, config, args.block_size, args.profile_tokens, args.max_num_seqs, edge,
                                ceiling, out)
    out(f"  measured: {largest} blocks fit beside the profiling run, {largest + 1} do not "
        f"(torch.cuda.OutOfMemoryError caught; {probes} probes)")
    gap = edge - largest
    out(f"  predicted - measured: {gap} blocks ({gap * block_bytes / MiB:.0f} MiB); a positive gap is memory the "
        f"allocator needs beyond what tensors use (segment rounding, reserved but unallocated activation memory)")
    out(f"  at utilization {args.utilization}, vLLM leaves {largest - blocks} blocks "
        f"({gib((largest - blocks) * block_bytes)}) of the card unused: the headroom")
    out(f"\ndone in {time.perf_counter() - started:.0f} s")


def run_dry(lab, args, out) -> None:
    config = MODELS[args.model]
    out(f"dry run: the arithmetic on a nominal card, for {args.model}; ASSUMED marks what only a GPU measures")
    describe_model(lab, config, args.model, args.block_size, out)
    torch, _ = require_torch_and_transformers()
    params = sum(p.numel() for p in build_model(config, "meta").parameters())  # shapes, no memory
    weights = params * getattr(torch, config["torch_dtype"]).itemsize
    out(f"weights: {params:,} parameters in {config['torch_dtype']} = {gib(weights)} (counted on the meta device)")
    out(f"\nthe prediction, at gpu_memory_utilization {args.utilization}, on an ASSUMED card of {gib(ASSUMED_TOTAL)}\n"
        f"with {gib(ASSUMED_FREE)} free, ASSUMED peak activation and non-torch increase:")
    predict(lab, config, out, total=ASSUMED_TOTAL, free=ASSUMED_FREE, utilization=args.utilization, weights=weights,
            activation=ASSUMED_ACTIVATION, non_torch=ASSUMED_NON_TORCH, block_size=args.block_size,
            max_model_len=args.max_model_len)

    tiny, started = MODELS["tiny-llama"], time.perf_counter()
    model = build_model(tiny, "cpu")
    profile_forward(model, tiny, 512, 256, "cpu")
    blocks = lab.num_gpu_blocks(64 * MiB, tiny, args.block_size)  # pretend 64 MiB are left for the cache
    cache = allocate_kv_cache(lab, tiny, blocks, args.block_size, "cpu")
    profile_forward(model, tiny, 512, 256, "cpu")
    out(f"\nthe GPU run's code path on the CPU, with tiny-llama ({sum(p.numel() for p in model.parameters()):,} "
        f"parameters): built, a profiling run of 512 tokens (256 dummy requests of 2, their logits, a sampling "
        f"step), a cache of {blocks} blocks {tuple(cache.shape)} for 64 MiB, the profiling run again beside it: "
        f"ok ({time.perf_counter() - started:.1f} s)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry", action="store_true", help="no GPU: the arithmetic, and a tiny model on the CPU")
    parser.add_argument("--model", choices=sorted(MODELS), default="llama-3-8b")
    parser.add_argument("--utilization", type=float, default=0.92, help="gpu_memory_utilization (vLLM's default)")
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--profile-tokens", type=int, default=8192,
                        help="tokens of the profiling run (vLLM: max_num_batched_tokens; 8192 for the OpenAI server "
                             "on a GPU of 70 GiB or more, A100 aside)")
    parser.add_argument("--max-num-seqs", type=int, default=1024,
                        help="the most requests in one step; the profiling run splits its tokens into "
                             "min(tokens, this) dummy requests (vLLM: max_num_seqs, 1024 on such GPUs, 256 on others)")
    parser.add_argument("--max-model-len", type=int,
                        help="longest request (default: the model's max_position_embeddings, as vLLM does)")
    parser.add_argument("--no-edge", action="store_true", help="skip the search for the edge of the card")
    parser.add_argument("--out", type=Path, help="also write the report to this Markdown file")
    args = parser.parse_args(argv)
    args.max_model_len = args.max_model_len or MODELS[args.model]["max_position_embeddings"]
    lab = labkit.load_impl(HERE)
    out = Report()
    (run_dry if args.dry else run_gpu)(lab, args, out)
    if args.out:
        out.write(args.out, f"Lab 02-03: {'dry run' if args.dry else 'GPU run'}, {args.model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
