"""The capstone labs' truth: a Llama-shaped model with random weights, and transformers' own greedy
``generate`` on a dense twin of it.

An engine under test must give the tokens ``generate`` gives, one for one, and logits within a
tolerance the lab sets. Nothing here comes from the code under test: the model is built from a
config (nothing downloaded), the truth runs transformers' eager attention over its own dense cache.
Needs torch and transformers (imported when called).
"""

from __future__ import annotations

import contextlib
import copy
import random


@contextlib.contextmanager
def one_torch_thread():
    """One torch thread inside: a test model is so small that a second thread only waits for the first
    (on a busy machine, 30 times slower). The count is restored afterwards."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def make_model(config: dict, seed: int = 0, dtype=None, device: str = "cpu"):
    """``LlamaForCausalLM`` of ``config`` (a dict of ``LlamaConfig``'s fields), weights drawn from
    ``seed`` without touching the global random state; float32 unless ``dtype``; in eval mode."""
    import torch
    import transformers

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))
    return model.to(device=device, dtype=dtype or torch.float32).eval()


def greedy_truth(model, logit_atol: float):
    """``truth(prompt, n)`` -> ``(tokens, logits [n, vocab] float32)`` of ``generate`` on a dense twin
    of ``model`` (eager attention), one request at a time, memoized.

    Greedy equality decides only where no step is a near-tie: with every logit within ``logit_atol``,
    a gap above ``2 * logit_atol`` between the best two cannot flip. A truth with a near-tie fails
    here (choose another seed or prompt), as does a ``generate`` that stops early (the config must
    have no EOS token)."""
    import torch

    dense = copy.deepcopy(model)
    dense.set_attn_implementation("eager")
    memo = {}

    def truth(prompt, n):
        key = (tuple(prompt), n)
        if key not in memo:
            ids = torch.tensor([prompt])
            with torch.no_grad():
                out = dense.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False,
                                     output_logits=True, return_dict_in_generate=True)
            tokens = out.sequences[0, len(prompt):].tolist()
            logits = torch.stack(out.logits)[:, 0].float()
            assert len(tokens) == n, "generate stopped early: the config must have no EOS token"
            top2 = logits.topk(2, dim=-1).values
            assert bool(((top2[:, 0] - top2[:, 1]) > 2 * logit_atol).all()), f"near-tie in the truth for {key}"
            memo[key] = tokens, logits
        return memo[key]

    return truth


def random_prompts(seed: int, lengths, vocab_size: int) -> list[list[int]]:
    """One prompt of random token ids in ``[0, vocab_size)`` per length, reproducible for ``seed``."""
    rng = random.Random(seed)
    return [[rng.randrange(vocab_size) for _ in range(n)] for n in lengths]
