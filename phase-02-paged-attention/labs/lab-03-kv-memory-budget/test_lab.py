"""Lab 02-03 tests: the KV memory budget.

Model shapes are written out below with the keys and values of the models' ``config.json`` files
(only the keys that matter here, plus a few that do not, as real configs have them). Every expected
number is worked out by hand in the comments, in plain integers: nothing is computed with a function
of the implementation under test (the ``lab`` fixture; ``LAB_IMPL=starter`` for your own work).
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import pytest

KiB, MiB, GiB = 2**10, 2**20, 2**30


def _size(n) -> str:
    """A byte count as the tests' comments write it: 131072 (128 KiB)."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if isinstance(n, int) and abs(n) >= size and n % (size // 16) == 0:
            return f"{n} ({n / size:g} {unit})"
    return f"{n!r}"


def expect_bytes(got, want: int, call: str, why: str = "") -> None:
    """An integer number of bytes, exactly ``want``; the message says both in KiB/MiB/GiB too."""
    __tracebackhide__ = True
    if isinstance(got, bool) or not isinstance(got, int):
        raise AssertionError(
            f"{call} returned {got!r}, of type {type(got).__name__}: memory sizes are integers of bytes")
    if got != want:
        raise AssertionError(f"{call} = {_size(got)}, expected {_size(want)}" + (f": {why}" if why else ""))


def expect_count(got, want: int, call: str, why: str = "") -> None:
    """An integer count (blocks), exactly ``want``."""
    __tracebackhide__ = True
    if isinstance(got, bool) or not isinstance(got, int):
        raise AssertionError(f"{call} returned {got!r}, of type {type(got).__name__}, expected an int")
    if got != want:
        raise AssertionError(f"{call} = {got}, expected {want}" + (f": {why}" if why else ""))

# meta-llama/Meta-Llama-3-8B: grouped-query attention, 8 KV heads for 32 query heads.
LLAMA_3_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
    "rope_theta": 500000.0, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
# facebook/opt-125m: multi-head attention; its config has no num_key_value_heads at all.
OPT_125M = {
    "architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 768, "ffn_dim": 3072,
    "num_attention_heads": 12, "num_hidden_layers": 12, "max_position_embeddings": 2048,
    "torch_dtype": "float16", "vocab_size": 50272, "word_embed_proj_dim": 768,
}
# meta-llama/Llama-2-7b-hf: multi-head attention, written out (32 KV heads for 32 query heads).
LLAMA_2_7B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 32, "torch_dtype": "float16", "vocab_size": 32000,
}
# Qwen/Qwen2.5-7B: grouped-query attention, 4 KV heads for 28 query heads.
QWEN2_5_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "torch_dtype": "bfloat16", "vocab_size": 152064,
}
# google/gemma-7b: head_dim 256, not hidden_size // num_attention_heads = 192.
GEMMA_7B = {
    "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 3072, "num_attention_heads": 16,
    "num_hidden_layers": 28, "num_key_value_heads": 16, "head_dim": 256, "torch_dtype": "bfloat16",
    "vocab_size": 256000,
}

_CONFIGS = {"LLAMA_3_8B": LLAMA_3_8B, "OPT_125M": OPT_125M, "LLAMA_2_7B": LLAMA_2_7B, "QWEN2_5_7B": QWEN2_5_7B,
            "GEMMA_7B": GEMMA_7B}
_PRISTINE = copy.deepcopy(_CONFIGS)


@pytest.fixture(autouse=True)
def _configs_as_written():
    """Every test starts from the configs as written above: a submission that writes into a config it
    is given (``config.setdefault(...)``) changes it for that test only, so the next test still reads
    the model it names, and test_configs_are_left_alone sees the write whichever test ran first."""
    yield
    for name, config in _CONFIGS.items():
        config.clear()
        config.update(copy.deepcopy(_PRISTINE[name]))



# ----------------------------------------------------------------------------- steps 1-3: bytes


def test_cache_dtype_bytes(lab):
    """Bytes per cache element: the named cache dtype's, or the model's for ``"auto"``.

    Catches a cache dtype that is ignored (an fp8 cache of a bf16 model still counted at 2 bytes),
    ``"auto"`` taken as 2 bytes whatever the model (a float32 model's cache is 4), an fp8 cache
    counted at 2 bytes, torch's other names (``"float"``, ``"half"``) given another size."""
    float32_model = {**OPT_125M, "torch_dtype": "float32"}
    transformers5_style = {k: v for k, v in LLAMA_3_8B.items() if k != "torch_dtype"} | {"dtype": "bfloat16"}
    cases = [  # (config, cache_dtype, bytes)
        (LLAMA_3_8B, "auto", 2), (OPT_125M, "auto", 2), (float32_model, "auto", 4), (transformers5_style, "auto", 2),
        (LLAMA_3_8B, "fp8", 1), (LLAMA_3_8B, "fp8_e4m3", 1), (LLAMA_3_8B, "fp8_e5m2", 1),
        (LLAMA_3_8B, "float16", 2), (float32_model, "bfloat16", 2), (OPT_125M, "float32", 4),
        (LLAMA_3_8B, "float", 4), (LLAMA_3_8B, "half", 2),  # torch's other names of float32 and float16
    ]
    for config, cache_dtype, want in cases:
        got = lab.cache_dtype_bytes(config, cache_dtype)
        model_dtype = config.get("torch_dtype") or config.get("dtype")
        expect_count(got, want, f"cache_dtype_bytes({config['model_type']} in {model_dtype}, {cache_dtype!r})",
                     "'auto' is the model's dtype, any other name its own size (fp8: 1 byte)")


def test_llama_3_8b_takes_128_kib_per_token(lab):
    """The known figure: 2 (K and V) * 32 layers * 8 KV heads * 128 dims * 2 bytes = 131072 = 128 KiB.

    Catches forgetting V (64 KiB), counting query heads instead of KV heads (32 * ... = 512 KiB)
    and forgetting the layers (4 KiB)."""
    why = "2 (K and V) * 32 layers * 8 KV heads * 128 dims * 2 bytes"
    expect_bytes(lab.kv_bytes_per_token(LLAMA_3_8B), 128 * KiB, "kv_bytes_per_token(Llama-3-8B)", why)
    expect_bytes(lab.kv_bytes_per_token(LLAMA_3_8B, "auto"), 128 * KiB, "kv_bytes_per_token(Llama-3-8B, 'auto')", why)


def test_opt_125m_has_no_kv_heads_key(lab):
    """OPT-125m's config has no ``num_key_value_heads``: every query head has its own KV head.
    2 * 12 layers * 12 heads * 64 dims (768 / 12) * 2 bytes (float16) = 36864 = 36 KiB.

    Catches reading the key unconditionally (KeyError) and defaulting it to 1 KV head (3 KiB)."""
    expect_bytes(lab.kv_bytes_per_token(OPT_125M), 36 * KiB, "kv_bytes_per_token(OPT-125m)",
                 "no num_key_value_heads: 12 KV heads, one per query head; 2 * 12 layers * 12 * 64 dims * 2 bytes")


def test_mha_and_gqa(lab):
    """Multi-head vs grouped-query attention, both written out.

    Llama-2-7B (MHA): 2 * 32 * 32 * 128 * 2 = 524288 = 512 KiB, the "half a megabyte per token" of
    a 7B model. Qwen2.5-7B (GQA, 4 KV heads of 128 = 3584 / 28): 2 * 28 * 4 * 128 * 2 = 57344 =
    56 KiB, a ninth of it. Catches query heads counted as KV heads (Qwen: 392 KiB) and a head size
    taken as hidden_size // num_key_value_heads (Qwen: 896 dims)."""
    expect_bytes(lab.kv_bytes_per_token(LLAMA_2_7B), 512 * KiB, "kv_bytes_per_token(Llama-2-7B)",
                 "2 * 32 layers * 32 KV heads * 128 dims * 2 bytes")
    expect_bytes(lab.kv_bytes_per_token(QWEN2_5_7B), 56 * KiB, "kv_bytes_per_token(Qwen2.5-7B)",
                 "2 * 28 layers * 4 KV heads * 128 dims (3584 // 28 query heads) * 2 bytes")


def test_explicit_head_dim_wins(lab):
    """Gemma-7B gives ``head_dim`` 256, while hidden_size // num_attention_heads is 192.
    2 * 28 * 16 * 256 * 2 = 458752 = 448 KiB (336 KiB with the derived 192). A ``head_dim`` of None
    (some configs write it so) means "derive it". Catches ignoring the config's head_dim."""
    expect_bytes(lab.kv_bytes_per_token(GEMMA_7B), 448 * KiB, "kv_bytes_per_token(Gemma-7B)",
                 "the config's head_dim, 256, wins over hidden_size // num_attention_heads = 192")
    expect_bytes(lab.kv_bytes_per_token({**LLAMA_3_8B, "head_dim": None}), 128 * KiB,
                 "kv_bytes_per_token(Llama-3-8B with head_dim: None)", "None means: derive it (4096 // 32)")


def test_an_explicit_head_dim_needs_no_hidden_size(lab):
    """``hidden_size`` is read only to derive a head_dim the config does not give. With Gemma-7B's
    head_dim of 256 a config is complete without hidden_size, with hidden_size None, or with a
    hidden_size its 16 heads do not divide (3000): 2 * 28 layers * 16 KV heads * 256 dims * 2 bytes =
    458752 = 448 KiB a token, and a page of 16 tokens is 16 * 448 KiB / 28 layers = 256 KiB.

    Catches: hidden_size read (or its divisibility checked) before looking at head_dim, which refuses
    these valid configs with a ValueError about hidden_size."""
    cases = {
        "no hidden_size": _without(GEMMA_7B, "hidden_size"),
        "hidden_size None": {**GEMMA_7B, "hidden_size": None},
        "hidden_size 3000, not a multiple of 16 heads": {**GEMMA_7B, "hidden_size": 3000},
    }
    for what, config in cases.items():
        try:
            per_token = lab.kv_bytes_per_token(config)
            page = lab.page_size_bytes(config, 16)
        except ValueError as err:
            raise AssertionError(
                f"Gemma-7B with head_dim 256 and {what}: ValueError ({err}). The config gives head_dim: "
                f"hidden_size is only needed, and only has to be a multiple of the heads, when head_dim is "
                f"absent or None") from None
        expect_bytes(per_token, 448 * KiB, f"kv_bytes_per_token(Gemma-7B, {what})", "2 * 28 * 16 * 256 * 2")
        expect_bytes(page, 256 * KiB, f"page_size_bytes(Gemma-7B, {what}, 16)", "2 * 16 * 16 * 256 * 2")


def test_cache_dtype_scales_the_bytes(lab):
    """An fp8 cache halves a bf16 model's KV bytes; a float32 model's "auto" cache doubles them.
    Llama-3-8B: 128 KiB (auto, bf16), 64 KiB (fp8, fp8_e4m3, fp8_e5m2), 128 KiB (float16).
    OPT-125m as float32: 2 * 12 * 12 * 64 * 4 = 73728 = 72 KiB."""
    for cache_dtype, want in [("auto", 128 * KiB), ("fp8", 64 * KiB), ("fp8_e4m3", 64 * KiB),
                              ("fp8_e5m2", 64 * KiB), ("float16", 128 * KiB)]:
        got = lab.kv_bytes_per_token(LLAMA_3_8B, cache_dtype)
        expect_bytes(got, want, f"kv_bytes_per_token(Llama-3-8B, {cache_dtype!r})",
                     "the cache dtype's bytes per element")
    expect_bytes(lab.kv_bytes_per_token({**OPT_125M, "torch_dtype": "float32"}), 72 * KiB,
                 "kv_bytes_per_token(OPT-125m in float32)", "'auto' follows the model: 4 bytes per element")


def test_page_size_bytes_is_one_block_of_one_layer(lab):
    """vLLM's page: one block of one layer, K and V.

    Llama-3-8B, blocks of 16: 2 * 16 * 8 * 128 * 2 = 65536 = 64 KiB; times 32 layers = 2 MiB = 16
    tokens * 128 KiB. OPT-125m, blocks of 16: 2 * 16 * 12 * 64 * 2 = 49152 = 48 KiB. Catches a page
    that covers every layer (2 MiB) and one without V."""
    cases = [  # (name, config, block_size, cache_dtype, bytes, arithmetic)
        ("Llama-3-8B", LLAMA_3_8B, 16, "auto", 64 * KiB, "2 * 16 * 8 * 128 * 2"),
        ("Llama-3-8B", LLAMA_3_8B, 16, "fp8", 32 * KiB, "2 * 16 * 8 * 128 * 1"),
        ("OPT-125m", OPT_125M, 16, "auto", 48 * KiB, "2 * 16 * 12 * 64 * 2"),
        ("Gemma-7B", GEMMA_7B, 32, "auto", 2 * 32 * 16 * 256 * 2, "2 * 32 * 16 * 256 * 2"),
        ("Qwen2.5-7B", QWEN2_5_7B, 1, "auto", 2 * 4 * 128 * 2, "2 * 1 * 4 * 128 * 2: one token, one layer"),
    ]
    for name, config, block_size, cache_dtype, want, arithmetic in cases:
        got = lab.page_size_bytes(config, block_size, cache_dtype)
        expect_bytes(got, want, f"page_size_bytes({name}, {block_size}, {cache_dtype!r})",
                     f"one block of one layer, K and V: {arithmetic}")


# ----------------------------------------------------------------------------- step 4: the budget


def test_available_memory_hand_computed(lab):
    """A card of 80 GiB with 79.5 GiB free (another process holds 0.5 GiB), utilization 0.9:
    the engine may use 0.9 * 80 = 72 GiB (of the total, not of the free memory). Weights 15 GiB,
    peak activation 2 GiB, 0.5 GiB grown outside torch: 72 - 17.5 = 54.5 GiB for the cache.

    Catches the utilization applied to the free memory (0.9 * 79.5 - 17.5 = 54.05 GiB), applied
    after subtracting (0.9 * (80 - 17.5) = 56.25 GiB), and a forgotten activation (56.5 GiB) or
    non-torch term (55 GiB)."""
    got = lab.available_kv_memory(80 * GiB, 79 * GiB + 512 * MiB, 0.9, 15 * GiB, 2 * GiB, 512 * MiB)
    expect_bytes(got, 54 * GiB + 512 * MiB,
                 "available_kv_memory(80 GiB total, 79.5 GiB free, 0.9, weights 15 GiB, activation 2 GiB, "
                 "non-torch 0.5 GiB)", "0.9 * 80 GiB (of the total) - (15 + 2 + 0.5) GiB")
    # Utilization 1.0 with everything free; no non-torch term given (it defaults to 0).
    got = lab.available_kv_memory(24 * GiB, 24 * GiB, 1.0, 1 * GiB, 3 * GiB)
    expect_bytes(got, 20 * GiB, "available_kv_memory(24 GiB, 24 GiB free, 1.0, 1 GiB, 3 GiB)", "24 - (1 + 3) GiB")
    # 0.5 of 80 GiB = 40 GiB; more than that is already taken: a negative budget, returned as is.
    got = lab.available_kv_memory(80 * GiB, 80 * GiB, 0.5, 38 * GiB, 3 * GiB, 0)
    expect_bytes(got, -1 * GiB, "available_kv_memory(80 GiB, 80 GiB free, 0.5, 38 GiB, 3 GiB, 0)",
                 "0.5 * 80 - (38 + 3) GiB: negative, returned as is (num_gpu_blocks clamps it)")


def test_utilization_the_free_memory_cannot_cover_is_refused(lab):
    """vLLM refuses to start when the free memory is below ``total * gpu_memory_utilization``: the
    budget would count memory another process holds. 80 GiB card, 70 GiB free, 0.9 asks for 72:
    ValueError naming gpu_memory_utilization; 0.85 asks for 68 GiB: fine. A utilization outside
    (0, 1] is refused too."""
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        lab.available_kv_memory(80 * GiB, 70 * GiB, 0.9, 15 * GiB, 2 * GiB, 0)
        pytest.fail("0.9 of an 80 GiB card with 70 GiB free: no ValueError naming gpu_memory_utilization")
    got = lab.available_kv_memory(80 * GiB, 70 * GiB, 0.85, 15 * GiB, 2 * GiB, 0)
    expect_bytes(got, 68 * GiB - 17 * GiB, "available_kv_memory(80 GiB, 70 GiB free, 0.85, 15 GiB, 2 GiB)",
                 "0.85 * 80 = 68 GiB fits in the 70 GiB free")
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="gpu_memory_utilization"):
            lab.available_kv_memory(80 * GiB, 80 * GiB, bad, 15 * GiB, 2 * GiB, 0)
            pytest.fail(f"gpu_memory_utilization={bad}: no ValueError naming gpu_memory_utilization")


def test_free_memory_that_exactly_covers_the_request_is_enough(lab):
    """The refusal is for free memory *below* the request: free memory equal to
    ``ceil(total * utilization)`` starts, and so does utilization 1.0 on an idle card (all its memory
    free). 80 GiB card, 72 GiB free, 0.9: 72 - (15 + 2) = 55 GiB. 48 GiB card, all free, 1.0:
    48 - (10 + 1) = 37 GiB, and the same with the int 1 (a number in (0, 1] like 1.0).

    Catches: ``free <= requested`` refused (an engine that cannot start on memory that is exactly
    enough), a utilization range that leaves out 1.0 (``0 < u < 1``), a utilization required to be a
    float (``isinstance(u, float)``), which refuses the int 1."""
    for call, args, want in [
        ("available_kv_memory(80 GiB, 72 GiB free, 0.9, 15 GiB, 2 GiB)",
         (80 * GiB, 72 * GiB, 0.9, 15 * GiB, 2 * GiB, 0), 55 * GiB),
        ("available_kv_memory(48 GiB, 48 GiB free, 1.0, 10 GiB, 1 GiB)",
         (48 * GiB, 48 * GiB, 1.0, 10 * GiB, GiB, 0), 37 * GiB),
        ("available_kv_memory(48 GiB, 48 GiB free, 1 (an int), 10 GiB, 1 GiB)",
         (48 * GiB, 48 * GiB, 1, 10 * GiB, GiB, 0), 37 * GiB),
    ]:
        try:
            got = lab.available_kv_memory(*args)
        except ValueError as err:
            raise AssertionError(
                f"{call} raised ValueError ({err}): the free memory covers ceil(total * utilization) exactly, and "
                f"utilization may be any number in (0, 1], 1.0 and the int 1 included; refuse only free < "
                f"requested") from err
        expect_bytes(got, want, call)


# A real card's total memory as torch.cuda.mem_get_info reports it: 85,029,158,912 bytes (81,090.125
# MiB), times most utilizations, is no whole number of bytes.
REAL_TOTAL = 85_029_158_912
LLAMA_3_8B_WEIGHTS, ACTIVATION, NON_TORCH = 16_060_522_496, 3 * GiB // 2, 400 * MiB  # 18,090,565,632 together


def test_utilization_may_be_any_real_number(lab):
    """``gpu_memory_utilization`` is a number in (0, 1] of any real type: a numpy float32 or float16 (a
    setting read out of an array), a float64, a Fraction. The request is ``ceil(total * u)`` of the
    number passed, computed exactly here: on a real card's 85,029,158,912 bytes, float32's 0.9
    (0.89999997615...) asks for 76,526,240,994 bytes. A numpy NaN, 0 or 1.5 is still refused, naming
    gpu_memory_utilization.

    Catches: the given check taking Python's int and float only (``utilization_refuses_numpy_floats``),
    and the number used as it came rather than as the Python float the check hands back
    (``utilization_used_as_it_came``): float32 arithmetic on the card's bytes is 1,250 bytes short,
    float16's overflows to infinity."""
    np = pytest.importorskip("numpy")
    used = LLAMA_3_8B_WEIGHTS + ACTIVATION + NON_TORCH
    for what, u in [("np.float32(0.9)", np.float32(0.9)), ("np.float16(0.9)", np.float16(0.9)),
                    ("np.float64(0.9)", np.float64(0.9)), ("Fraction(9, 10)", Fraction(9, 10))]:
        requested = math.ceil(Fraction(REAL_TOTAL) * Fraction(float(u)))  # exact, before the call
        call = f"available_kv_memory({REAL_TOTAL}, free={requested}, {what}, 16060522496, 1.5 GiB, 400 MiB)"
        try:
            got = lab.available_kv_memory(REAL_TOTAL, requested, u, LLAMA_3_8B_WEIGHTS, ACTIVATION, NON_TORCH)
        except ValueError as err:
            raise AssertionError(f"{call} raised ValueError ({err}): {what} is a number in (0, 1]") from None
        expect_bytes(got, requested - used, call,
                     f"ceil({REAL_TOTAL} * {float(u)!r}) = {requested}, minus 18090565632: compute with the Python "
                     "float _check_utilization returns, not the numpy number as it came")
    for bad in (np.float32("nan"), np.float64(0.0), np.float32(1.5)):
        with pytest.raises(ValueError, match="gpu_memory_utilization"):
            lab.available_kv_memory(80 * GiB, 80 * GiB, bad, 15 * GiB, 2 * GiB, 0)
            pytest.fail(f"gpu_memory_utilization={bad!r}: no ValueError naming gpu_memory_utilization")


@pytest.mark.parametrize(("utilization", "requested"), [
    (0.9, 76_526_243_021),   # 85029158912 * 0.9  = 76526243020.8
    (0.95, 80_777_700_967),  # 85029158912 * 0.95 = 80777700966.4
    (0.8, 68_023_327_130),   # 85029158912 * 0.8  = 68023327129.6
    (0.7, 59_520_411_239),   # 85029158912 * 0.7  = 59520411238.4
], ids=["0.9 (.8 of a byte)", "0.95 (.4 of a byte)", "0.8 (.6 of a byte)", "0.7 (.4 of a byte)"])
def test_the_exact_edge_at_a_real_cards_magnitude(lab, utilization, requested):
    """The request is a whole number of bytes, ``ceil(total * utilization)`` as vLLM's ``request_memory``
    computes it, and the refusal compares the free memory with it. On a real card (85,029,158,912
    bytes) the product has a fraction: free memory equal to the request starts, one byte less is
    refused, and the budget is the request minus weights, activation and non-torch memory
    (18,090,565,632), an integer. Fractions of .4, .6 and .8 of a byte tell ceil from floor and from
    round.

    Catches: the request rounded down (``int()``) or to nearest, or kept as a float; the whole budget
    computed in floating point and truncated at the end (a byte short); the free memory compared with
    the KV budget instead of the request, or refused when it equals the request."""
    budget = requested - (LLAMA_3_8B_WEIGHTS + ACTIVATION + NON_TORCH)
    call = (f"available_kv_memory({REAL_TOTAL}, free={requested}, {utilization}, 16060522496, 1.5 GiB, 400 MiB) "
            f"(the request is ceil({REAL_TOTAL} * {utilization}) = {requested})")
    try:
        got = lab.available_kv_memory(REAL_TOTAL, requested, utilization, LLAMA_3_8B_WEIGHTS, ACTIVATION, NON_TORCH)
    except ValueError as err:
        raise AssertionError(
            f"{call} raised ValueError ({err}): the free memory equals the request, ceil(total * utilization) "
            f"bytes; refuse only free memory below it") from None
    expect_bytes(got, budget, call, f"ceil(total * utilization) = {requested}, minus 18090565632, in integers")
    with pytest.raises(ValueError, match="gpu_memory_utilization"):
        lab.available_kv_memory(REAL_TOTAL, requested - 1, utilization, LLAMA_3_8B_WEIGHTS, ACTIVATION, NON_TORCH)
        pytest.fail(f"available_kv_memory({REAL_TOTAL}, free={requested - 1}, {utilization}, ...): one byte less "
                    f"than the request {requested}, and no ValueError naming gpu_memory_utilization (compare the "
                    "free memory with the request, not with what is left for the KV cache)")


def test_a_negative_budget_at_a_real_cards_magnitude(lab):
    """Utilization 0.3 of the real card requests ceil(25508747673.6) = 25508747674 bytes; a 15B model's
    30,000,000,000 bytes of weights, 1.5 GiB of activation and 400 MiB outside torch leave
    25508747674 - 32030043136 = -6521295462: negative, returned as is (``num_gpu_blocks`` makes it 0
    blocks), and rounded once, at the request.

    Catches: the whole budget computed in floating point and rounded down at the end
    (``math.floor`` of -6521295462.4 is -6521295463), a negative budget clamped to 0 here."""
    got = lab.available_kv_memory(REAL_TOTAL, REAL_TOTAL, 0.3, 30_000_000_000, ACTIVATION, NON_TORCH)
    expect_bytes(got, -6_521_295_462, f"available_kv_memory({REAL_TOTAL}, all free, 0.3, 30000000000, 1.5 GiB, "
                 "400 MiB)", "ceil(85029158912 * 0.3) = 25508747674, then - 32030043136, in integers: negative, "
                 "returned as is (round once, at the request, never the budget at the end)")


# ----------------------------------------------------------------------------- step 5-6: blocks


def test_num_gpu_blocks_llama_3_8b(lab):
    """54.5 GiB for a Llama-3-8B cache with blocks of 16: a block of all 32 layers is 2 MiB, so
    54.5 GiB / 2 MiB = 27904 blocks. With 1 MiB more: still 27904 (half a block is no block).
    With 1.5 MiB more, still 27904 (rounding to nearest gives 27905). With an fp8 cache, blocks of 1 MiB:
    55808. Catches rounding up or to nearest (27905), forgetting the layers
    (892928 blocks of one layer), a block counted without V (55808 for bf16), and a count taken
    through a float (``int(available / page / layers)``), one block too many for 2**60 - 1 bytes, or
    only its last step (``int(available // page / layers)``), one too many for 2**80 - 1 bytes."""
    available = 54 * GiB + 512 * MiB
    cases = [  # (available, config name, config, cache_dtype, blocks, why)
        (available, "Llama-3-8B", LLAMA_3_8B, "auto", 27904, "54.5 GiB // 2 MiB (64 KiB pages * 32 layers)"),
        (available + MiB, "Llama-3-8B", LLAMA_3_8B, "auto", 27904, "half a block more is no block: floor"),
        (available + 3 * MiB // 2, "Llama-3-8B", LLAMA_3_8B, "auto", 27904,
         "three quarters of a block more is no block either: floor, not round"),
        (available + MiB, "Llama-3-8B", LLAMA_3_8B, "fp8", 55809, "fp8 blocks are 1 MiB: the extra MiB is one"),
        (available, "Llama-3-8B", LLAMA_3_8B, "fp8", 55808, "54.5 GiB // 1 MiB (the cache dtype's pages)"),
        # OPT-125m on 10 GiB with blocks of 16: a block is 48 KiB * 12 = 576 KiB; 10 GiB / 576 KiB = 18204.4
        (10 * GiB, "OPT-125m", OPT_125M, "auto", 18204, "10 GiB // 576 KiB (48 KiB pages * 12 layers)"),
        # A byte count no float holds: 2**60 - 1 becomes the float 2**60, whose quotient is one block too many.
        (2**60 - 1, "Llama-3-8B", LLAMA_3_8B, "auto", 2**39 - 1,
         "(2**60 - 1) // 2 MiB is one short of 2**39: floor division of integers, never through a float"),
        # The pages in integers but the layers through a float: (2**80 - 1) // 64 KiB = 2**64 - 1 pages, no
        # float either (2**64), so / 32 layers gives 2**59 blocks where 2**59 - 1 fit.
        (2**80 - 1, "Llama-3-8B", LLAMA_3_8B, "auto", 2**59 - 1,
         "(2**80 - 1) // 64 KiB // 32 layers is one short of 2**59: every division in integers, the last one too"),
    ]
    for memory, name, config, cache_dtype, want, why in cases:
        got = lab.num_gpu_blocks(memory, config, 16, cache_dtype)
        expect_count(got, want, f"num_gpu_blocks({_size(memory)}, {name}, 16, {cache_dtype!r})", why)


def test_num_gpu_blocks_is_never_negative(lab):
    """No memory left, or less than a block: 0 blocks, never a negative count (vLLM clamps to 0 and
    then refuses to start). Catches a floor division of a negative budget (-1 block)."""
    for memory, want in [(-1 * GiB, 0), (-1, 0), (2 * MiB - 1, 0), (2 * MiB, 1)]:
        got = lab.num_gpu_blocks(memory, LLAMA_3_8B, 16)
        expect_count(got, want, f"num_gpu_blocks({_size(memory)} bytes, Llama-3-8B, 16)",
                     "whole 2 MiB blocks, never fewer than 0")


def test_max_concurrency(lab):
    """Requests of ``max_model_len`` tokens that the blocks hold at once, each taking whole blocks.

    27904 blocks of 16: max_model_len 8192 takes 512 blocks: 27904 / 512 = 54.5. 8193 tokens take
    513 blocks: 27904 / 513 = 54.3937... (a count in tokens would say 27904 * 16 / 8193 = 54.49).
    131072 tokens (Llama 3.1's context): 27904 / 8192 = 3.40625. 2**60 + 1 tokens in blocks of 2**30
    take 2**30 + 1 blocks: 2**40 blocks hold 2**40 / (2**30 + 1) = 1023.99999905 of them, not 1024.
    Catches ignoring the block rounding of a request, and a request's blocks counted through a float
    (``math.ceil(max_model_len / block_size)``: 2**60 + 1 is no float, it becomes 2**60 and the
    quotient a whole 2**30). Compared to a relative 1e-12: a correct float64 computation differs from
    the exact quotient by a rounding or two (1e-16 each); the bugs' errors are 2e-3 and 9e-10."""
    cases = [  # (num_blocks, block_size, max_model_len, concurrency, why)
        (27904, 16, 8192, 54.5, "27904 / 512 blocks per request"),
        (27904, 16, 8193, 27904 / 513, "8193 tokens take 513 whole blocks"),
        (27904, 16, 131072, 3.40625, "27904 / 8192 blocks per request"),
        (0, 16, 8192, 0.0, "no block"),
        (100, 16, 1, 100.0, "a one-token request still takes a whole block"),
        (2**40, 2**30, 2**60 + 1, 2**40 / (2**30 + 1),
         "2**60 + 1 tokens take 2**30 + 1 blocks of 2**30: a ceiling in integers, -(-len // block_size); "
         "math.ceil(len / block_size) goes through a float, where 2**60 + 1 is 2**60, and gives 2**30"),
    ]
    for num_blocks, block_size, max_model_len, want, why in cases:
        call = f"max_concurrency({num_blocks}, {block_size}, {max_model_len})"
        got = lab.max_concurrency(num_blocks, block_size, max_model_len)
        assert isinstance(got, float), (
            f"{call} returned {got!r}, of type {type(got).__name__}, expected a float: vLLM logs a fraction (54.50x)")
        assert got == pytest.approx(want, rel=1e-12), f"{call} = {got}, expected {want} ({why})"


def test_the_whole_budget_of_an_h100(lab):
    """The start-up arithmetic end to end, on an H100 80GB's numbers: 85520809984 bytes total
    (81559 MiB), 81003 MiB free (a CUDA context holds the rest); Llama-3-8B in bf16 (8030261248
    parameters = 16060522496 bytes), a peak activation of 1.5 GiB, 400 MiB outside torch,
    utilization 0.9, blocks of 16.

    requested = ceil(85520809984 * 0.9) = 76968728986 (the product is 76968728985.6)
    available = 76968728986 - 16060522496 - 1610612736 - 419430400 = 58878163354 bytes
    blocks = 58878163354 // 65536 // 32 = 28075 (a block is 2 MiB), 449200 tokens
    concurrency at 8192 tokens = 28075 / 512 = 54.833984375"""
    available = lab.available_kv_memory(85520809984, 81003 * MiB, 0.9, 16060522496, 3 * GiB // 2, 400 * MiB)
    expect_bytes(available, 58878163354, "available_kv_memory on an H100 80GB",
                 "ceil(85520809984 * 0.9) = 76968728986 (rounded up, as vLLM's request_memory does) - 16060522496 - "
                 "1610612736 - 419430400")
    blocks = lab.num_gpu_blocks(available, LLAMA_3_8B, 16)
    expect_count(blocks, 28075, "num_gpu_blocks(58878163354, Llama-3-8B, 16)", "58878163354 // 65536 // 32")
    concurrency = lab.max_concurrency(blocks, 16, 8192)
    assert concurrency == pytest.approx(54.833984375, rel=1e-12), (
        f"max_concurrency(28075, 16, 8192) = {concurrency}, expected 54.833984375 (28075 / 512)")


def test_requested_memory_is_rounded_up(lab):
    """The requested share of the card is a whole number of bytes, rounded up as vLLM's
    ``request_memory`` does (``math.ceil``): 0.8 of 85520809984 bytes is 68416647987.2, so the
    budget starts from 68416647988. Nothing else is held, so it is all available.

    Catches: rounding down (``int()``: a byte short) and rounding to the nearest byte (a byte short
    whenever the fraction is below one half)."""
    got = lab.available_kv_memory(85520809984, 85520809984, 0.8, 0, 0, 0)
    expect_bytes(got, 68416647988, "available_kv_memory(85520809984, all free, 0.8, 0, 0, 0)",
                 "ceil(85520809984 * 0.8) = ceil(68416647987.2)")


# ----------------------------------------------------------------------------- inputs


def test_bad_input_names_the_argument(lab):
    """A config without a needed key, with KV heads that do not divide the query heads, an unknown
    cache dtype, "auto" without a model dtype, a block size of 0: ValueError naming what is wrong."""
    no_layers = {k: v for k, v in LLAMA_3_8B.items() if k != "num_hidden_layers"}
    no_dtype = {k: v for k, v in LLAMA_3_8B.items() if k != "torch_dtype"}
    calls = [
        ("num_hidden_layers", "kv_bytes_per_token(a config without num_hidden_layers)",
         lambda: lab.kv_bytes_per_token(no_layers)),
        ("num_key_value_heads", "kv_bytes_per_token(32 query heads, 5 KV heads)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_key_value_heads": 5})),
        ("cache_dtype", "kv_bytes_per_token(Llama-3-8B, 'int4')", lambda: lab.kv_bytes_per_token(LLAMA_3_8B, "int4")),
        ("torch_dtype", "kv_bytes_per_token(a config without torch_dtype, 'auto')",
         lambda: lab.kv_bytes_per_token(no_dtype)),
        ("block_size", "page_size_bytes(Llama-3-8B, 0)", lambda: lab.page_size_bytes(LLAMA_3_8B, 0)),
        ("block_size", "num_gpu_blocks(1 GiB, Llama-3-8B, 0)", lambda: lab.num_gpu_blocks(GiB, LLAMA_3_8B, 0)),
    ]
    for name, call, run in calls:
        with pytest.raises(ValueError, match=name):
            run()
            pytest.fail(f"{call}: no ValueError naming {name}")


def test_configs_are_left_alone(lab):
    """The config dicts come back unchanged: filling in a missing num_key_value_heads or head_dim in
    the caller's dict (``config.setdefault(...)``) changes the model for everyone else. The answers
    are checked too (2 * layers * KV heads * head_dim * 2 bytes a token; a page holds one layer's
    block): leaving the configs alone earns nothing without them."""
    for config, per_token in ((OPT_125M, 36 * KiB), (LLAMA_3_8B, 128 * KiB), (GEMMA_7B, 448 * KiB)):
        before = copy.deepcopy(config)
        name = config["model_type"]
        expect_bytes(lab.kv_bytes_per_token(config), per_token, f"kv_bytes_per_token({name})")
        expect_bytes(lab.page_size_bytes(config, 16), 16 * per_token // config["num_hidden_layers"],
                     f"page_size_bytes({name}, 16)", "a block of one layer")
        expect_count(lab.num_gpu_blocks(GiB, config, 16), GiB // (16 * per_token), f"num_gpu_blocks(1 GiB, {name}, 16)")
        if config != before:
            changed = sorted(k for k in {*config, *before} if config.get(k, "absent") != before.get(k, "absent"))
            raise AssertionError(f"{config['model_type']}: the caller's config changed (keys {changed}): read it "
                                 f"into local variables, never write into it")


def test_a_model_of_one_layer_and_one_head(lab):
    """The smallest model the config accepts: one layer, one head of dimension 1 (hidden_size 1), no
    num_key_value_heads: 2 (K and V) * 1 * 1 * 1 * 4 bytes = 8 bytes a token.

    Catches: the config's positive-integer check refusing 1."""
    tiny = {"model_type": "tiny", "hidden_size": 1, "num_attention_heads": 1, "num_hidden_layers": 1,
            "torch_dtype": "float32"}
    expect_bytes(lab.kv_bytes_per_token(tiny), 8, "kv_bytes_per_token(1 layer, 1 head of dimension 1, float32)")


def _without(config, key):
    return {k: v for k, v in config.items() if k != key}


def _bad_calls(lab):
    """(words the ValueError must hold, the call in words, the call): every input the docstrings refuse."""
    return [
        ("config must be a dict", "kv_bytes_per_token(a list)", lambda: lab.kv_bytes_per_token([LLAMA_3_8B])),
        ("config must be a dict", "cache_dtype_bytes(a list, 'auto')", lambda: lab.cache_dtype_bytes([LLAMA_3_8B])),
        ("is missing", "kv_bytes_per_token(no num_hidden_layers)",
         lambda: lab.kv_bytes_per_token(_without(LLAMA_3_8B, "num_hidden_layers"))),
        ("is None", "kv_bytes_per_token(num_hidden_layers None)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_hidden_layers": None})),
        ("num_hidden_layers", "kv_bytes_per_token(num_hidden_layers 0)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_hidden_layers": 0})),
        ("num_hidden_layers", "kv_bytes_per_token(num_hidden_layers '32')",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_hidden_layers": "32"})),
        # Every key the shape is read from, not only the layers: each through _config_int, never
        # config[key] (a KeyError) or config.get(key) or default (a 0 or a negative count taken as given).
        ("num_attention_heads", "kv_bytes_per_token(no num_attention_heads)",
         lambda: lab.kv_bytes_per_token(_without(LLAMA_3_8B, "num_attention_heads"))),
        ("num_attention_heads", "kv_bytes_per_token(num_attention_heads 0)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_attention_heads": 0})),
        ("num_key_value_heads", "kv_bytes_per_token(num_key_value_heads 0)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_key_value_heads": 0})),
        ("num_key_value_heads", "kv_bytes_per_token(num_key_value_heads -8)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "num_key_value_heads": -8})),
        ("hidden_size", "kv_bytes_per_token(no hidden_size, no head_dim)",
         lambda: lab.kv_bytes_per_token(_without(LLAMA_3_8B, "hidden_size"))),
        ("hidden_size", "kv_bytes_per_token(hidden_size '4096', no head_dim)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "hidden_size": "4096"})),
        ("hidden_size", "kv_bytes_per_token(hidden_size 4100 for 32 heads, no head_dim)",
         lambda: lab.kv_bytes_per_token({**LLAMA_3_8B, "hidden_size": 4100})),
        ("head_dim", "kv_bytes_per_token(head_dim 0)", lambda: lab.kv_bytes_per_token({**GEMMA_7B, "head_dim": 0})),
        ("head_dim", "kv_bytes_per_token(head_dim '256')",
         lambda: lab.kv_bytes_per_token({**GEMMA_7B, "head_dim": "256"})),
        *[(name, f"available_kv_memory({name}={value!r})",
           lambda name=name, value=value: lab.available_kv_memory(
               **{"total_memory": 80 * GiB, "free_memory": 79 * GiB, "gpu_memory_utilization": 0.9,
                  "weights_memory": 16 * GiB, "peak_activation": GiB, "non_torch_memory": 0, name: value}))
          for name in ("total_memory", "free_memory", "weights_memory", "peak_activation", "non_torch_memory")
          for value in (-1, 2.0 * GiB, True)],
        ("gpu_memory_utilization must be in", "available_kv_memory(gpu_memory_utilization=1.5)",
         lambda: lab.available_kv_memory(80 * GiB, 79 * GiB, 1.5, 16 * GiB, GiB)),
        *[("gpu_memory_utilization", f"available_kv_memory(gpu_memory_utilization={value!r})",
           lambda value=value: lab.available_kv_memory(80 * GiB, 79 * GiB, value, 16 * GiB, GiB))
          for value in ("0.9", None, True)],  # a string or None fails in the comparison; True would be 1.0
        ("gpu_memory_utilization", "available_kv_memory(gpu_memory_utilization=nan)",
         lambda: lab.available_kv_memory(80 * GiB, 79 * GiB, float("nan"), 16 * GiB, GiB)),  # no comparison holds
        ("cannot exceed", "available_kv_memory(free_memory 81 GiB of a card of 80 GiB)",
         lambda: lab.available_kv_memory(80 * GiB, 81 * GiB, 0.9, 16 * GiB, GiB)),
        ("available_memory", "num_gpu_blocks(1.5 GiB as a float, ..)",
         lambda: lab.num_gpu_blocks(1.5 * GiB, LLAMA_3_8B, 16)),
        ("available_memory", "num_gpu_blocks(True, ..)", lambda: lab.num_gpu_blocks(True, LLAMA_3_8B, 16)),
        # A budget too small for a block is 0 blocks only for valid arguments: the checks come first.
        ("block_size", "num_gpu_blocks(-1 GiB, Llama-3-8B, 0)", lambda: lab.num_gpu_blocks(-GiB, LLAMA_3_8B, 0)),
        ("config must be a dict", "num_gpu_blocks(-1 GiB, a list, 16)",
         lambda: lab.num_gpu_blocks(-GiB, [LLAMA_3_8B], 16)),
        ("block_size", "max_concurrency(100, block_size=0, 100)", lambda: lab.max_concurrency(100, 0, 100)),
        ("num_blocks", "max_concurrency(num_blocks=-1, ..)", lambda: lab.max_concurrency(-1, 16, 100)),
        ("num_blocks", "max_concurrency(num_blocks=2.5, ..)", lambda: lab.max_concurrency(2.5, 16, 100)),
        ("num_blocks", "max_concurrency(num_blocks=True, ..)", lambda: lab.max_concurrency(True, 16, 100)),
        ("max_model_len", "max_concurrency(.., max_model_len=0)", lambda: lab.max_concurrency(100, 16, 0)),
        ("max_model_len", "max_concurrency(.., max_model_len=100.5)", lambda: lab.max_concurrency(100, 16, 100.5)),
        ("max_model_len", "max_concurrency(.., max_model_len=True)", lambda: lab.max_concurrency(100, 16, True)),
    ]


def test_every_bad_input_is_refused_by_name(lab):
    """Each input the docstrings refuse, one at a time, in every function that takes it: a config that
    is no dict (to ``cache_dtype_bytes`` too), a key missing or None (said which), a count of 0 or a
    string, of the layers, the query heads, the KV heads (-8 too) and hidden_size, a hidden_size the
    heads do not divide, an explicit head_dim of 0 or a string, byte counts of -1, a float or True, a
    utilization above 1, NaN or that is no number (a string, None, True), free memory above the card's
    total, an available_memory that is a float or True, a block size of 0 or a config that is no dict
    with a negative budget (0 blocks only for valid arguments), a block count of -1, 2.5 or True, a
    max_model_len of 0, 100.5 or True: a ValueError whose message names it (never a ZeroDivisionError,
    a TypeError or a silent number).

    Catches: any of the given checks dropped, joined with ``and`` or off by one; a head_dim taken as
    given or truncated (hidden_size // num_heads of a hidden_size they do not divide); keys read with
    ``config[key]`` (a KeyError) or ``config.get(key) or default`` (0 KV heads taken as "absent"); a
    utilization compared before it is known to be a number, or its range checked as ``u <= 0 or u > 1``
    (NaN fails both comparisons, and ``math.ceil`` then raises its own ValueError, which names nothing);
    a bool taken for a count (True is an int: 1); num_gpu_blocks returning 0 for a budget below a
    block before checking its other arguments."""
    for words, call, run in _bad_calls(lab):
        try:
            got = run()
        except ValueError as err:
            if words not in str(err):
                raise AssertionError(f"{call}: the ValueError must say {words!r}, got: {err}") from None
            continue
        except Exception as err:  # noqa: BLE001 (the test reports whatever was raised)
            raise AssertionError(f"{call}: expected a ValueError saying {words!r}, got {type(err).__name__}: "
                                 f"{err}") from None
        raise AssertionError(f"{call}: no ValueError (it returned {got!r}); expected one saying {words!r}")
