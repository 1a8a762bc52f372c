"""Lab 99-03: the model's forward pass in fused kernels, checked kernel by kernel and token by token.

Truth, each computed before the code under test runs (or from inputs the test keeps a copy of):

- each kernel against a float64 brute force written here (transformers' own ``apply_rotary_pos_emb``
  for the rotary convention, ``labkit.paged_attention_f64`` for the attention), with strided inputs,
  sizes that divide no block, padding rows and columns poisoned with NaN and inf that must not leak,
  and every byte the call must not write compared with what it held before;
- the engine against transformers' ``generate`` (greedy, eager attention, its dense cache) on a twin of
  the model, float32, at every stage of the lab (``fused_steps`` 1 to 5): the same tokens, one for one,
  and logits within ``LOGIT_ATOL``;
- the launches the README promises, counted in the engine's own forward passes (``_launches.py``:
  every Triton launch and every torch operator that runs a kernel, with the matrix products' sizes).

On a CPU the kernels run in Triton's interpreter on a two-layer model; on a GPU (``pytest -m gpu``) the
engine also runs through real CUDA graphs, and the kernels are checked in bfloat16.
"""

from __future__ import annotations

import copy
import inspect
import math
import random
import types

import numpy as np
import pytest

import labkit
from labkit import triton_env
from labkit.testing import contract, model_truth

torch, triton = triton_env.require_torch_and_triton()
# transformers 5: the model's modules, generate and apply_rotary_pos_emb for the truth.
transformers = pytest.importorskip("transformers", minversion="5.0",
                                   reason='needs transformers >= 5: pip install -e ".[model]"')
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb  # noqa: E402

pytestmark = pytest.mark.triton

DEVICE = triton_env.device()
BS = 16  # tokens per block
# A Llama-shaped model: 2 layers, 8 query heads sharing 2 KV heads (4:1, as the benchmark's), head_dim 16, a
# hidden size (72), an MLP (88) and a vocabulary (500) that are no power of two, no special token. Weights
# drawn wider than the default 0.02 so that a wrong key, position or norm changes the next token.
CONFIG = dict(
    vocab_size=500, hidden_size=72, intermediate_size=88, num_hidden_layers=2, num_attention_heads=8,
    num_key_value_heads=2, head_dim=16, max_position_embeddings=256, initializer_range=0.1,
    bos_token_id=None, eos_token_id=None, pad_token_id=None, tie_word_embeddings=False,
)
H, KV, D = CONFIG["num_attention_heads"], CONFIG["num_key_value_heads"], CONFIG["head_dim"]
L, VOCAB, HIDDEN = CONFIG["num_hidden_layers"], CONFIG["vocab_size"], CONFIG["hidden_size"]
INTERMEDIATE = CONFIG["intermediate_size"]
PADDED_VOCAB = 512  # the runner pads the head to a multiple of 64 rows

# Logits: the engine and generate run the same float32 weights and add in other orders (fused norms
# summing a row in a tree, merged GEMMs, attention over a paged cache). Each logit ends ~10 float32
# reductions of at most 256 terms of size ~3: a few units of 256 * 2**-24 * 3 ~ 5e-5 at worst, ~2e-6
# measured. A wrong position, slot, norm or half of a head moves logits by 0.1 to 1.
LOGIT_ATOL = 1e-4
# The engine on a GPU (float32, no TF32) against generate on the CPU: cuBLAS and the kernels order their
# float32 sums differently again (lab 99-02's GPU tolerance).
ENGINE_ATOL = LOGIT_ATOL if DEVICE == "cpu" else 1e-3
# Kernels against float64: float32 (and the interpreter's float32) rounds each value once or twice on the
# way, 2**-24 relative each time; float16 stores the normalized row and the output, 2**-11 each; bfloat16
# (GPU only) 2**-8 each.
RTOL = {torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
DTYPES = [torch.float32, torch.float16]


@pytest.fixture(scope="module", autouse=True)
def one_cpu_thread():
    """One torch thread while this module runs (the model is tiny: a second thread only waits)."""
    with model_truth.one_torch_thread():
        yield


def make_model(device: str = "cpu"):
    """The model, built here (not by the lab): LlamaForCausalLM of ``CONFIG`` with weights from seed 0, its
    RMSNorm weights drawn in [0.5, 1.5] (transformers starts them at 1: a norm's weight left out, or the
    wrong layer's, would not show)."""
    model = model_truth.make_model(CONFIG, 0, torch.float32)
    gen = torch.Generator().manual_seed(1)
    norms = [model.model.norm] + [n for layer in model.model.layers
                                  for n in (layer.input_layernorm, layer.post_attention_layernorm)]
    with torch.no_grad():
        for norm in norms:
            norm.weight.copy_(torch.rand(norm.weight.shape, generator=gen) + 0.5)
    return model.to(device)


@pytest.fixture(scope="module")
def model():
    return make_model()


@pytest.fixture(scope="module")
def truth(model):
    """``truth(prompt, n)``: (tokens, logits [n, vocab]) of ``generate`` on a dense twin of ``model``."""
    return model_truth.greedy_truth(model, LOGIT_ATOL)


def f64(t) -> np.ndarray:
    return labkit.to_f64(t)


def tensor(values, dtype=torch.float32):
    return torch.as_tensor(np.asarray(values), dtype=dtype, device=DEVICE)


def unchanged(after, before, what: str) -> None:
    """``after`` holds exactly ``before``'s values, NaN where it held NaN."""
    a, b = f64(after), f64(before)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if not same.all():
        where = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"{what}: {int((~same).sum())} entries written that must not be; first at {where}: "
                             f"{a[where]}, was {b[where]}")


def poisoned_view(shape, extra_rows: int, extra_cols: int, dtype, fill=float("nan")):
    """A tensor of ``shape`` inside a larger one full of ``fill``: rows past ``shape[0]`` and columns past
    ``shape[-1]`` are poison a kernel must neither read into its results nor write. Returns (view, whole)."""
    whole = torch.full((shape[0] + extra_rows, *shape[1:-1], shape[-1] + extra_cols), fill, dtype=dtype,
                       device=DEVICE)
    index = (slice(0, shape[0]),) + tuple(slice(0, n) for n in shape[1:])
    return whole[index], whole


# --------------------------------------------------------------------------------------------
# Step 1: merged weights
# --------------------------------------------------------------------------------------------


def test_merged_weights_hold_the_layers_weights(lab, model):
    """``merge_layer_weights`` of each layer: ``qkv`` is q's rows, then k's, then v's, exactly; ``gate_up``
    gate's rows, then up's; ``o``, ``down`` and the two norm weights are the layer's, ``eps`` its norms'.

    Catches: the projections stacked in another order (k first, up first: every head reads another
    head's weights), the two norm weights swapped, a merge along the input dimension."""
    for i, layer in enumerate(model.model.layers):
        w = lab.merge_layer_weights(layer)
        attn, mlp = layer.self_attn, layer.mlp
        expected = {
            "qkv": torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight]),
            "gate_up": torch.cat([mlp.gate_proj.weight, mlp.up_proj.weight]),
            "o": attn.o_proj.weight, "down": mlp.down_proj.weight,
            "input_norm": layer.input_layernorm.weight, "post_norm": layer.post_attention_layernorm.weight,
        }
        for name, want in expected.items():
            got = getattr(w, name)
            assert tuple(got.shape) == tuple(want.shape), f"layer {i}: {name} is {tuple(got.shape)}, " \
                                                          f"expected {tuple(want.shape)}"
            labkit.assert_equal(f64(got), f64(want.detach()), what=f"layer {i}: {name}", axes=("row", "column"))
        assert w.eps == layer.input_layernorm.variance_epsilon, f"layer {i}: eps {w.eps}"


def test_split_qkv_gives_each_projection(lab, model):
    """One GEMM with the merged weight, split by ``split_qkv``: q, k and v are the layer's three
    projections (float64 brute force, one per weight), shaped by heads, read from a ``qkv`` whose rows
    are strided (poisoned columns past its width); and each is a view of ``qkv``, no copy: its memory is
    ``qkv``'s, from its first column on (0, ``H * D``, ``(H + KV) * D``), rows ``qkv``'s stride apart.

    Catches: k as wide as q (the query heads' width), v starting right after q, heads of the wrong size,
    a copy of any kind (``.to(copy=True)``, ``clone``, ``contiguous`` of the strided rows, ``reshape``
    where ``view`` fails): right values, but every layer's q, k and v copied again."""
    layer = model.model.layers[1]
    w = lab.merge_layer_weights(layer)
    x = torch.randn(5, HIDDEN, generator=torch.Generator().manual_seed(3))
    width = (H + 2 * KV) * D
    qkv, _ = poisoned_view((5, width), 0, 8, torch.float32)
    qkv.copy_(torch.nn.functional.linear(x, w.qkv.detach().cpu()).to(DEVICE))
    x64 = f64(x)
    want = {name: x64 @ f64(getattr(layer.self_attn, f"{name}_proj").weight).T for name in "qkv"}
    got = dict(zip("qkv", lab.split_qkv(qkv, H, KV, D), strict=True))
    heads = {"q": H, "k": KV, "v": KV}
    first_column = {"q": 0, "k": H * D, "v": (H + KV) * D}
    for name in "qkv":
        assert tuple(got[name].shape) == (5, heads[name], D), f"{name}: shape {tuple(got[name].shape)}, expected " \
                                                            f"{(5, heads[name], D)}"
        # One float32 GEMM of 72 terms of size ~1 against float64: ~1e-6.
        labkit.assert_close(got[name], want[name].reshape(5, heads[name], D), atol=2e-5, what=name,
                            axes=("token", "head", "dim"))
        view, at = got[name], qkv.data_ptr() + first_column[name] * qkv.element_size()
        shares = view.untyped_storage().data_ptr() == qkv.untyped_storage().data_ptr()
        assert shares and view.data_ptr() == at and view.stride() == (qkv.stride(0), D, 1), (
            f"{name}: not a view of qkv from its column {first_column[name]} (shares qkv's memory: {shares}; "
            f"starts {view.data_ptr() - qkv.data_ptr()} bytes after qkv's start, expected "
            f"{at - qkv.data_ptr()}; strides {view.stride()}, expected {(qkv.stride(0), D, 1)}): split_qkv "
            f"must copy nothing (no .to(copy=True), clone, contiguous or reshape of strided rows)")


# --------------------------------------------------------------------------------------------
# Step 2: RMSNorm, the fused residual add, SiLU-and-mul
# --------------------------------------------------------------------------------------------

EPS = 1e-6


def norm_rows(rows: int, hidden: int, seed: int) -> np.ndarray:
    """Rows of scales that matter to an RMSNorm: row 0 tiny (its mean square far below ``EPS``: the epsilon
    decides its scale), row 1 all zeros, row 2 large, the rest standard normal."""
    x = np.random.default_rng(seed).standard_normal((rows, hidden))
    x[0] *= 1e-4
    if rows > 1:
        x[1] = 0.0
    if rows > 2:
        x[2] *= 100.0
    return x


def rms_f64(x, weight, eps=EPS) -> np.ndarray:
    x = f64(x)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * f64(weight)


def close(got, want, dtype, what, axes=("row", "column")):
    """float64 ``want`` against ``got`` of ``dtype``: ``RTOL`` relative to each value, plus the same
    relative to the largest value in its row (rounding is relative to the row's scale)."""
    want = np.asarray(want)
    scale = np.abs(want).max(axis=-1, keepdims=True) if want.ndim else abs(want)
    a = f64(got)
    bound = RTOL[dtype] * (np.abs(want) + scale) + 1e-30
    bad = ~(np.abs(a - want) <= bound)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {a.size} values off by more than {RTOL[dtype]:g} of their "
                             f"row's scale; first at {dict(zip(axes, where, strict=False))}: got {a[where]:.6g}, "
                             f"expected {want[where]:.6g}")
    labkit.assert_dtype(got, dtype, what=what)


NORM_SHAPES = [(1, 72), (37, 72), (150, 128)]  # one row; a batch that fills no power of two; three programs of 64
# Rows past a norm's input and output: a whole interpreter program (64 rows), so that a kernel writing every row of
# its program writes into rows the test reads back, not past the buffer's end (a crash, not a failure). The input's
# spare rows hold finite values (PAST_END): their norm, written where it must not be, differs from the NaN there.
SPARE_ROWS = 64
PAST_END = 3.0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("rows", "hidden"), NORM_SHAPES)
def test_rms_norm_matches_float64(lab, rows, hidden, dtype):
    """``rms_norm`` of rows whose scales matter (one far below the epsilon, one of zeros, one large), read
    from strided rows with NaN past each row's end (finite rows past the last), written into a given ``out``
    inside a NaN buffer: float64 brute force; nothing outside ``out`` written, ``x`` unchanged.

    Catches: the epsilon outside the square root, the mean over the padded block (a hidden size that is
    no power of two) or over the rows, a column or row mask forgotten (NaN read, or rows past the end
    written), the weight left out."""
    x, x_whole = poisoned_view((rows, hidden), SPARE_ROWS, 5, dtype)
    x_whole[rows:, :hidden] = PAST_END
    x.copy_(tensor(norm_rows(rows, hidden, seed=rows), dtype))
    weight = tensor(np.random.default_rng(1).uniform(0.5, 1.5, hidden), dtype)
    x_before = x.clone()
    want = rms_f64(x, weight)
    out, out_whole = poisoned_view((rows, hidden), SPARE_ROWS, 4, dtype)
    out_before = out_whole.clone()
    got = lab.rms_norm(x, weight, EPS, out=out)
    close(got, want, dtype, f"rms_norm of {rows} rows of {hidden}")
    close(out, want, dtype, "out (the tensor passed in)")
    unchanged(out_whole[rows:], out_before[rows:], "the rows past out's end")
    unchanged(out_whole[:, hidden:], out_before[:, hidden:], "the columns past out's end")
    unchanged(x, x_before, "x")
    fresh = lab.rms_norm(x, weight, EPS)
    close(fresh, want, dtype, "rms_norm without out")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("rows", "hidden"), NORM_SHAPES)
def test_fused_add_rms_norm_returns_the_new_residual_and_its_norm(lab, rows, hidden, dtype):
    """``fused_add_rms_norm(x, residual)``: the residual, changed in place and returned, is ``x + residual``
    (its dtype's rounding of the sum); the output is the RMSNorm of that new residual. Both read from
    strided rows with NaN past their ends (finite rows past the last); the residual's poison stays where it
    is, and so does a given ``out``'s.

    Catches: the residual returned (or left) as it was before the add, the norm taken of ``x`` alone or
    of the old residual, the add written past the rows."""
    gen = np.random.default_rng(rows + hidden)
    x, x_whole = poisoned_view((rows, hidden), SPARE_ROWS, 3, dtype)
    x_whole[rows:, :hidden] = PAST_END
    x.copy_(tensor(norm_rows(rows, hidden, seed=rows + 7), dtype))
    residual, residual_whole = poisoned_view((rows, hidden), SPARE_ROWS, 6, dtype)
    residual_whole[rows:, :hidden] = PAST_END
    residual.copy_(tensor(gen.standard_normal((rows, hidden)), dtype))
    residual[0] *= 1e-4  # the sum's small row stays small: its norm depends on the epsilon too
    weight = tensor(gen.uniform(0.5, 1.5, hidden), dtype)
    new_residual = (x.to(torch.float64) + residual.to(torch.float64)).to(dtype)  # the model's rounding of the sum
    want_residual, want_out = f64(new_residual), rms_f64(new_residual, weight)
    whole_before = residual_whole.clone()
    given, given_whole = poisoned_view((rows, hidden), SPARE_ROWS, 2, dtype)
    out, returned = lab.fused_add_rms_norm(x, residual, weight, EPS, out=given)
    close(returned, want_residual, dtype, "the returned residual (x + residual)")
    close(residual, want_residual, dtype, "residual after the call (updated in place)")
    close(out, want_out, dtype, "out (the norm of the new residual)")
    close(given, want_out, dtype, "out (the tensor passed in)")
    unchanged(residual_whole[rows:], whole_before[rows:], "the rows past residual's end")
    unchanged(given_whole[rows:], torch.full_like(given_whole[rows:], float("nan")), "the rows past out's end")
    unchanged(residual_whole[:, hidden:], whole_before[:, hidden:], "the columns past residual's end")


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")  # exp(60000) is inf, and silu(-60000) is -0
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("rows", "width"), [(1, 96), (37, 1100), (70, 48)])
def test_silu_and_mul_matches_float64(lab, rows, width, dtype):
    """``silu_and_mul`` of ``[gate | up]`` (rows strided, NaN past their end), gates as large as +-30 and
    +-60000: ``silu(gate) * up`` in float64, in the input's dtype; a given ``out`` inside a NaN buffer
    written nowhere else. 1100 columns span two programs' blocks.

    Catches: SiLU of up instead of gate, the halves read at the wrong offset, the sigmoid without its
    factor, a column mask forgotten at a block's end."""
    gen = np.random.default_rng(width)
    gate_up, _ = poisoned_view((rows, 2 * width), 1, 3, dtype)
    values = gen.standard_normal((rows, 2 * width)) * 3
    values[0, :4] = [30.0, -30.0, 6e4, -6e4]
    values[0, width : width + 4] = 0.5  # their products stay within float16
    gate_up.copy_(tensor(values, dtype))
    g, u = f64(gate_up[:, :width]), f64(gate_up[:, width:])
    want = g / (1.0 + np.exp(-np.clip(g, -700, 700))) * u
    out, out_whole = poisoned_view((rows, width), 2, 3, dtype)
    before = out_whole.clone()
    got = lab.silu_and_mul(gate_up, out=out)
    close(got, want, dtype, "silu_and_mul")
    unchanged(out_whole[rows:], before[rows:], "the rows past out's end")
    unchanged(out_whole[:, width:], before[:, width:], "the columns past out's end")
    close(lab.silu_and_mul(gate_up), want, dtype, "silu_and_mul without out")


def ulps_off(got, want16: np.ndarray, what: str) -> None:
    """``got`` (float16) against ``want16``, float64 arithmetic rounded to float16 where the model rounds: no
    value more than one float16 step off, and at most 1% of them one step off. The kernels compute in
    float32 (a few 2**-24 relative) what the truth computes in float64, then round to float16 steps of
    2**-11: the two land on different sides of a rounding midpoint for about 0.05% of values. A rounding
    left out moves about a quarter of them by one step."""
    __tracebackhide__ = True
    labkit.assert_dtype(got, torch.float16, what=what)
    want = want16.astype(np.float64)
    steps = np.abs(f64(got) - want) / np.spacing(np.abs(want16)).astype(np.float64)
    off = float((steps > 0).mean())
    where = tuple(int(i) for i in np.argwhere(steps == steps.max())[0])
    labkit.require(steps.max() <= 1 and off <= 0.01,
                   f"{what}: {off:.1%} of the values differ from the model's float16 rounding (at most 1% by one "
                   f"step expected), the worst by {steps.max():.3g} steps at {where}: got {f64(got)[where]:.6g}, "
                   f"expected {want[where]:.6g}")


def test_float16_rounds_where_the_model_rounds(lab):
    """In float16, the norms and the activation round where transformers' modules round (their docstrings
    say so): ``rms_norm`` and ``fused_add_rms_norm`` round the normalized row to float16 before the weight
    multiplies it (``LlamaRMSNorm``: ``weight * hidden.to(input_dtype)``), ``silu_and_mul`` rounds the SiLU
    before the product (``act_fn(gate) * up``); the fused add rounds the new residual before its norm. Truth:
    float64 with the same roundings, to within one float16 step for at most 1% of the values (``ulps_off``).
    The other tests' tolerances (2e-3 of each row's scale) cannot see a rounding left out; a model in float16
    or bfloat16 whose kernels round elsewhere drifts from ``generate``'s tokens.

    Catches: the normalized row multiplied by the weight unrounded (``norm_not_rounded_before_the_weight``),
    the SiLU multiplied by ``up`` unrounded (``silu_not_rounded_before_the_product``)."""
    gen = np.random.default_rng(31)
    f16 = np.float16
    x = tensor(gen.standard_normal((40, HIDDEN)), torch.float16)
    residual = tensor(gen.standard_normal((40, HIDDEN)), torch.float16)
    weight = tensor(gen.uniform(0.5, 1.5, HIDDEN), torch.float16)
    w64 = f64(weight)

    def llama_rms_norm(rows64: np.ndarray) -> np.ndarray:
        normed = rows64 / np.sqrt((rows64 * rows64).mean(axis=1, keepdims=True) + EPS)
        return (normed.astype(f16).astype(np.float64) * w64).astype(f16)

    want_norm = llama_rms_norm(f64(x))
    new_residual = (f64(x) + f64(residual)).astype(f16)
    want_fused = llama_rms_norm(new_residual.astype(np.float64))
    gate_up = tensor(gen.standard_normal((40, 2 * INTERMEDIATE)) * 3, torch.float16)
    g, u = f64(gate_up[:, :INTERMEDIATE]), f64(gate_up[:, INTERMEDIATE:])
    want_act = ((g / (1.0 + np.exp(-g))).astype(f16).astype(np.float64) * u).astype(f16)

    ulps_off(lab.rms_norm(x, weight, EPS), want_norm, "rms_norm, float16")
    out, returned = lab.fused_add_rms_norm(x, residual, weight, EPS)
    labkit.assert_equal(f64(returned), new_residual.astype(np.float64), what="fused_add_rms_norm's new residual "
                        "(x + residual rounded once to float16)", axes=("row", "column"))
    ulps_off(out, want_fused, "fused_add_rms_norm, float16")
    ulps_off(lab.silu_and_mul(gate_up), want_act, "silu_and_mul, float16")


# --------------------------------------------------------------------------------------------
# Step 3: the rotary embedding and the KV-cache write
# --------------------------------------------------------------------------------------------


def rotary_table(max_position: int, head_dim: int, base: float = 10000.0) -> np.ndarray:
    """``[max_position, head_dim]`` float64: the cosines of each position's angles, then their sines
    (Llama's default rotary embedding: angle ``p * base ** (-2 i / head_dim)``)."""
    inv_freq = base ** (-np.arange(0, head_dim, 2) / head_dim)
    angles = np.arange(max_position)[:, None] * inv_freq[None, :]
    return np.concatenate([np.cos(angles), np.sin(angles)], axis=1)


def rotate_f64(x, positions, table) -> np.ndarray:
    """transformers' ``apply_rotary_pos_emb`` in float64: ``x [tokens, heads, dim]`` turned by each
    token's position (cos and sin repeated across the head's two halves)."""
    half = table.shape[1] // 2
    cos = np.concatenate([table[positions, :half]] * 2, axis=1)
    sin = np.concatenate([table[positions, half:]] * 2, axis=1)
    x = torch.from_numpy(np.ascontiguousarray(f64(x).transpose(1, 0, 2)))[None]  # [1, heads, tokens, dim]
    rotated, _ = apply_rotary_pos_emb(x, x, torch.from_numpy(cos)[None], torch.from_numpy(sin)[None])
    return rotated[0].numpy().transpose(1, 0, 2)


def check_slot_writes(k_cache, v_cache, slots, valid, want_k, want_v, num_blocks: int, dtype, where: str):
    """Each valid token's key and value at its slot of the caches (``[num_blocks, BS, ...]``);
    returns the mask of the slots no valid token wrote (on DEVICE), whose rows the caller checks
    unchanged."""
    __tracebackhide__ = True
    written = np.zeros((num_blocks, BS), dtype=bool)
    for t in valid:
        block, offset = divmod(int(slots[t]), BS)
        written[block, offset] = True
        close(k_cache[block, offset], want_k[t], dtype, f"k_cache at token {t}'s slot {slots[t]} ({where})",
              ("head", "dim"))
        close(v_cache[block, offset], want_v[t], dtype, f"v_cache at token {t}'s slot {slots[t]} ({where})",
              ("head", "dim"))
    return torch.from_numpy(~written).to(DEVICE)


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the padding rows' inf * cos - inf * sin
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rotary_and_cache_matches_float64(lab, dtype):
    """13 tokens at scattered positions (0 and 255 among them, none equal to its row), two of them padding
    (slot -1, their rows of ``qkv`` NaN and inf), ``qkv`` rows strided with NaN past their end, caches that
    are strided views full of a sentinel: the rotated queries in ``q_out``; in each valid token's cache row
    its keys rotated as transformers rotates them (float64 ``apply_rotary_pos_emb``) and its values as
    they are; every other cache entry, and ``q_out``'s rows past the tokens, exactly as before.

    Catches: the interleaved pairing (GPT-J's) instead of the two halves, the rotation turned the wrong
    way, keys written before their rotation, values rotated too, a padding token written into slot 0,
    the angle of the token's row instead of its position, key heads read at the query heads' offset,
    ``q_out`` written but not returned (``q_out_not_returned``: the docstring returns it)."""
    gen = np.random.default_rng(5)
    num_tokens, num_blocks, width = 13, 7, (H + 2 * KV) * D
    positions = gen.permutation(np.arange(1, 255))[:num_tokens]
    positions[4], positions[9] = 0, 255
    slots = 1 + gen.permutation(num_blocks * BS - 1)[:num_tokens]  # slot 0 is no valid token's: padding must spare it
    padding = [3, 12]
    slots[padding] = -1
    values = gen.standard_normal((num_tokens, width))
    qkv, _ = poisoned_view((num_tokens, width), 0, 5, dtype)
    qkv.copy_(tensor(values, dtype))
    qkv[3] = float("nan")
    qkv[12] = float("inf")
    table = rotary_table(CONFIG["max_position_embeddings"], D)
    cos_sin = tensor(table, torch.float32)
    table = f64(cos_sin)  # the kernel's float32 table, exactly
    sentinel = -77.0
    k_cache, k_whole = poisoned_view((num_blocks, BS, KV, D), 0, 3, dtype, fill=sentinel)
    v_cache, v_whole = poisoned_view((num_blocks, BS, KV, D), 0, 3, dtype, fill=sentinel)
    q_out, q_whole = poisoned_view((num_tokens, H, D), 2, 0, dtype)
    valid = [t for t in range(num_tokens) if t not in padding]
    qkv64 = f64(qkv)
    want_q = rotate_f64(qkv64[:, : H * D].reshape(num_tokens, H, D), positions, table)
    want_k = rotate_f64(qkv64[:, H * D : (H + KV) * D].reshape(num_tokens, KV, D), positions, table)
    want_v = qkv64[:, (H + KV) * D :].reshape(num_tokens, KV, D)
    k_before, v_before, q_before = k_whole.clone(), v_whole.clone(), q_whole.clone()
    returned = lab.rotary_and_cache(qkv, tensor(positions, torch.int64), cos_sin, k_cache, v_cache,
                                    tensor(slots, torch.int64), q_out, H, KV)

    assert returned is q_out, f"rotary_and_cache returned {type(returned).__name__}, not the q_out it was given"
    close(q_out[valid], want_q[valid], dtype, "q_out (rotated queries) of the valid tokens", ("token", "head", "dim"))
    unchanged(q_whole[num_tokens:], q_before[num_tokens:], "q_out's rows past the tokens")
    rest = check_slot_writes(k_cache, v_cache, slots, valid, want_k, want_v, num_blocks, dtype,
                             "its rotated keys and values")
    unchanged(k_whole[rest], k_before[rest], "k_cache rows of no valid token (slot 0 included: a padding token "
                                             "writes nothing)")
    unchanged(v_whole[rest], v_before[rest], "v_cache rows of no valid token")
    unchanged(k_whole[..., D:], k_before[..., D:], "k_cache's entries past head_dim")


# --------------------------------------------------------------------------------------------
# Step 4: greedy sampling on the GPU
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("rows", "vocab", "width"), [(5, 500, 512), (70, 5000, 5120)])
def test_argmax_rows_picks_the_first_largest_of_the_vocabulary(lab, rows, vocab, width, dtype):
    """``argmax_rows`` over the first ``vocab`` columns of ``logits`` (``width`` wide, rows strided): the
    padding columns hold +inf, NaN and a huge value and never win; ties go to the first column,
    whether both sit in one block of columns, at a block's boundary (4095 and 4096) or in different
    blocks; the largest value in the last column counts. int64 on the logits' device.

    Catches: the argmax over the padded vocabulary, the last of tied columns, the best of the last
    block of columns instead of the whole row, the last column dropped."""
    gen = np.random.default_rng(vocab)
    values = gen.standard_normal((rows, width))
    values[:, vocab:] = -5.0
    values[0, vocab:] = np.inf
    values[1, vocab:] = np.nan
    values[2 % rows, vocab:] = 3e4
    ties = [(0, 7, 8), (1, 10, vocab - 3), (3, 0, vocab - 1)]
    if vocab > 4096:
        ties += [(4, 4095, 4096), (5, 10, 10 + 4096)]
    for row, a, b in ties:
        values[row, [a, b]] = 9.0
    values[2, vocab - 1] = 10.0  # the largest in the very last column
    logits, _ = poisoned_view((rows, width), 0, 3, dtype)
    logits.copy_(tensor(values, dtype))
    want = f64(logits)[:, :vocab].argmax(axis=1)  # numpy: the first of tied maxima
    got = lab.argmax_rows(logits, vocab)
    labkit.assert_equal(got, want, what=f"argmax_rows over {vocab} of {width} columns", axes=("row",),
                        dtype=torch.int64)
    assert got.device.type == DEVICE, f"the tokens are on {got.device}, the logits on {DEVICE}"
    out = torch.full((rows,), -1, dtype=torch.int64, device=DEVICE)
    lab.argmax_rows(logits, vocab, out=out)
    labkit.assert_equal(out, want, what="argmax_rows into a given out", axes=("row",))


def test_sample_greedy_samples_the_rows_asked_for(lab):
    """``sample_greedy`` for rows 10, 3 and 7 of 11 (the others NaN in both inputs): the final residual
    add, the final RMSNorm and the head of those rows, in float64; the argmax over the 500 real rows of
    a head padded to 512 whose padding rows would win every argmax; the float32 logits when asked;
    ``residual`` unchanged.

    Catches: rows sampled in the wrong order or at the wrong index, the final norm of the stream
    without its last add, the argmax over the padded vocabulary, the residual stream changed in place."""
    gen = np.random.default_rng(11)
    tokens, hidden, picks = 11, HIDDEN, [10, 3, 7]
    h = gen.standard_normal((tokens, hidden))
    r = gen.standard_normal((tokens, hidden))
    others = [t for t in range(tokens) if t not in picks]
    h[others] = np.nan
    r[others] = np.nan
    head = gen.standard_normal((PADDED_VOCAB, hidden)) * 0.3
    head[VOCAB:] = 1e3  # padding rows: each would win its row's argmax
    norm_weight = gen.uniform(0.5, 1.5, hidden)
    s = h[picks] + r[picks]
    normed = s / np.sqrt((s * s).mean(axis=1, keepdims=True) + EPS) * norm_weight
    want_logits = normed @ head[:VOCAB].T
    want = want_logits.argmax(axis=1)
    top2 = np.sort(want_logits, axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0] > 1e-3).all(), "a near-tie in the test's own data"
    residual = tensor(r)
    residual_before = residual.clone()
    sampled = torch.full((3,), -1, dtype=torch.int64, device=DEVICE)
    logits = torch.full((3, VOCAB), float("nan"), device=DEVICE)
    lab.sample_greedy(tensor(h), residual, tensor(picks, torch.int64), tensor(norm_weight), EPS, tensor(head), VOCAB,
                      sampled, logits)
    labkit.assert_equal(sampled, want, what="sampled (rows 10, 3, 7)", axes=("row",), dtype=torch.int64)
    # A float32 norm and a 72-term float32 GEMM against float64: ~1e-5 on logits of size ~3.
    labkit.assert_close(logits, want_logits, atol=1e-4, what="logits of the sampled rows", axes=("row", "token"),
                        dtype=torch.float32)
    unchanged(residual, residual_before, "residual (sample_greedy must leave the stream alone)")


# --------------------------------------------------------------------------------------------
# Step 5: the decode attention, tuned
# --------------------------------------------------------------------------------------------


def config_rule(num_seqs, num_kv_heads, head_dim, itemsize, capacity, sms, lab):
    """The README's rule, written again here: a tile of TILE_BYTES of keys (a power of two in [16, 256]
    tokens); splits for WAVES programs per SM (a power of two), none shorter than two tiles, at least one."""
    tile = 16
    while tile * 2 <= min(256, lab.TILE_BYTES // (head_dim * itemsize)):
        tile *= 2
    wanted = max(1, lab.WAVES * sms // (num_seqs * num_kv_heads))
    splits = 1
    while splits * 2 <= wanted:
        splits *= 2
    return min(splits, max(1, capacity // (2 * tile))), tile


def test_choose_decode_config_follows_the_rule(lab):
    """``choose_decode_config`` for the benchmark's shapes (256 or 8 sequences of 8 KV heads of 64 bf16
    values, tables of 2048 tokens, 132 SMs), a 128-wide head, a long table, this test's model, an
    80-wide head (``TILE_BYTES`` of it is 102 tokens, no power of two) and a 512-wide float32 head (8
    tokens, under ``MIN_TILE_TOKENS``): the tile holds ``TILE_BYTES`` of keys; the splits give ``WAVES``
    programs per SM, no split under two tiles; warps and stages are the tuned constants.

    Catches: a tile fixed in tokens (half the bytes per load at head size 64), a tile rounded up to a
    power of two instead of down (``tile_rounded_up``), a tile not raised to ``MIN_TILE_TOKENS``
    (``tile_not_clamped_below``), splits for a full batch (a reduce launched for nothing), splits shorter
    than their fixed costs, a split count that is no power of two."""
    shapes = [(256, 8, 64, 2, 2048, 132), (8, 8, 64, 2, 2048, 132), (64, 8, 128, 2, 2048, 132),
              (1, 8, 64, 2, 32768, 132), (3, KV, D, 4, 256, 132), (5, KV, D, 4, 96, 132), (2, 2, 16, 2, 32, 16),
              (4, 8, 80, 2, 2048, 132), (4, 1, 512, 4, 4096, 132)]
    for shape in shapes:
        config = lab.choose_decode_config(*shape)
        splits, tile = config_rule(*shape, lab)
        got = (config.num_splits, config.tile_tokens, config.num_warps, config.num_stages)
        want = (splits, tile, lab.DECODE_NUM_WARPS, lab.DECODE_NUM_STAGES)
        assert got == want, f"choose_decode_config{shape}: (splits, tile, warps, stages) = {got}, expected {want}"


DECODE_LENS = [0, 1, 17, 40, 77]  # an empty row (a graph's padding), a single token, lengths no tile divides


# (splits, tile, poison): one split in tiles smaller than a block, one split in one tile per sequence, three
# splits with a reduce; each with another poison in the unused slots.
DECODE_CONFIGS = [pytest.param(1, 16, "nan", id="one-split"), pytest.param(1, 64, "inf", id="one-tile"),
                  pytest.param(3, 16, "huge", id="splits")]


@pytest.mark.parametrize(("splits", "tile", "poison"), DECODE_CONFIGS)
def test_decode_attention_matches_float64(lab, splits, tile, poison):
    """``decode_attention`` with a given configuration: 8 query heads on 2 KV heads, the lengths above,
    tables with two spare columns, every cache slot no sequence holds poisoned: each head's attention over
    its sequence in float64, zeros for the empty one, written into ``out`` and returned.

    Catches: the reduce skipped with several splits, splits that do not cover the table, the output
    left in a scratch buffer, a launch that ignores the configuration's tile."""
    case = labkit.cases.decode_case(DECODE_LENS, num_heads=H, num_kv_heads=KV, head_dim=D, block_size=BS,
                                    dtype=torch.float32, device=DEVICE, seed=splits + tile, spare_blocks=2,
                                    pad_columns=2)
    for cache in (case.k_cache, case.v_cache):
        labkit.poison_unused_slots(cache, f64(case.block_tables).astype(np.int64), DECODE_LENS, kind=poison)
    want = np.stack([labkit.paged_attention_f64(case.q[b], case.k_cache, case.v_cache,
                                                f64(case.block_tables[b]).astype(np.int64), n)
                     for b, n in enumerate(DECODE_LENS)])
    out = torch.full_like(case.q, float("nan"))
    config = lab.DecodeConfig(num_splits=splits, tile_tokens=tile, num_warps=4, num_stages=2)
    got = lab.decode_attention(case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, out, config)
    # float32 dot products of 16 terms and an online softmax over at most 77 keys: ~1e-6.
    labkit.assert_close(out, want, atol=1e-5, what=f"out ({splits} splits, tiles of {tile})",
                        axes=("sequence", "head", "dim"), dtype=torch.float32)
    labkit.assert_close(got, want, atol=1e-5, what="the returned tensor", axes=("sequence", "head", "dim"))


# --------------------------------------------------------------------------------------------
# The contract: every layout, size, dtype and score the docstrings accept (labkit.testing.contract)
# --------------------------------------------------------------------------------------------

# The benchmark's attention shape (Llama 3 8B's heads of 64, 4 query heads per KV head), scaled down in heads.
CH, CKV, CD = 8, 2, 64


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the padding rows' inf * cos - inf * sin
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("cache_layout", contract.CACHE_LAYOUTS)
def test_rotary_and_cache_contract(lab, cache_layout, index_dtype):
    """``rotary_and_cache`` on what its docstring accepts beyond the first test: caches as the views an
    engine passes (``kv[:, 0]``, ``kv[:, 1]`` of one fused pool; a pool stored heads outside the slots),
    ``positions`` and ``slot_mapping`` in int64 or int32, ``q_out`` a view whose heads and tokens are both
    strided (each head inside a wider row of NaN, each token's heads followed by a spare NaN head),
    ``cos_sin`` a view of a wider table (NaN columns past each row), heads of 64 with 4 query heads per
    KV head, and 70 tokens: more than one program's rows in the interpreter (64), a count no block of
    rows divides. Slots at both edges of a block and the pool's very last slot; padding (-1) as the
    first token, the last and one between.

    Catches: a cache row computed as ``slot * stride_slot`` (blocks as if contiguous:
    ``cache_row_from_the_flat_slot``), ``q_out``'s heads placed at ``head * head_dim`` instead of its head
    stride (``q_out_heads_assumed_contiguous``), its tokens at ``num_heads`` head strides instead of its
    token stride (``q_out_tokens_assumed_packed``), the table's rows read ``head_dim`` apart
    (``cos_sin_rows_assumed_contiguous``), rows of one program only (``rows_of_the_first_program_only``)."""
    gen = np.random.default_rng(17)
    num_tokens, num_blocks, width, dtype = 70, 6, (CH + 2 * CKV) * CD, torch.float32
    max_position = 300
    positions = gen.integers(0, max_position, num_tokens)
    positions[[1, 2]] = 0, max_position - 1
    edges = [BS - 1, BS, 2 * BS - 1, num_blocks * BS - 1]  # both sides of a block's end, the pool's last slot
    others = gen.permutation([s for s in range(1, num_blocks * BS) if s not in edges])  # slot 0: no token's
    slots = np.concatenate([others[:1], edges, others[1 : num_tokens - len(edges)]])  # distinct
    padding = [0, 33, num_tokens - 1]
    slots[padding] = -1
    qkv, _ = poisoned_view((num_tokens, width), 0, 4, dtype)
    qkv.copy_(tensor(gen.standard_normal((num_tokens, width)), dtype))
    qkv[padding] = float("nan")
    cos_sin, _ = poisoned_view((max_position, CD), 0, 6, torch.float32)  # its rows CD + 6 apart
    cos_sin.copy_(tensor(rotary_table(max_position, CD), torch.float32))
    sentinel = -77.0
    k_cache = torch.full((num_blocks, BS, CKV, CD), sentinel, dtype=dtype, device=DEVICE)
    k_cache, v_cache = contract.CACHE_LAYOUTS[cache_layout].apply(k_cache, k_cache.clone())
    # q_out inside [tokens + 1, CH + 1, CD + 5] of NaN: a spare row, a spare head after each token's heads,
    # spare columns after each head (its token stride is not CH head strides).
    q_whole = torch.full((num_tokens + 1, CH + 1, CD + 5), float("nan"), dtype=dtype, device=DEVICE)
    q_out = q_whole[:num_tokens, :CH, :CD]
    valid = [t for t in range(num_tokens) if t not in padding]
    qkv64, table = f64(qkv), f64(cos_sin)
    want_q = rotate_f64(qkv64[:, : CH * CD].reshape(num_tokens, CH, CD), positions, table)
    want_k = rotate_f64(qkv64[:, CH * CD : (CH + CKV) * CD].reshape(num_tokens, CKV, CD), positions, table)
    want_v = qkv64[:, (CH + CKV) * CD :].reshape(num_tokens, CKV, CD)
    k_before, v_before, q_before = k_cache.clone(), v_cache.clone(), q_whole.clone()
    where = f"{contract.CACHE_LAYOUTS[cache_layout].describe}, {index_dtype} indices, q_out's heads and tokens " \
            "strided, cos_sin's rows strided"
    lab.rotary_and_cache(qkv, tensor(positions, index_dtype), cos_sin, k_cache, v_cache, tensor(slots, index_dtype),
                         q_out, CH, CKV)
    close(q_out[valid], want_q[valid], dtype, f"q_out of the valid tokens ({where})", ("token", "head", "dim"))
    unchanged(q_whole[:, :, CD:], q_before[:, :, CD:], f"q_out's memory between its heads ({where})")
    unchanged(q_whole[:, CH:], q_before[:, CH:], f"q_out's spare head after each token's heads ({where})")
    unchanged(q_whole[num_tokens:], q_before[num_tokens:], f"q_out's rows past the tokens ({where})")
    rest = check_slot_writes(k_cache, v_cache, slots, valid, want_k, want_v, num_blocks, dtype, where)
    # The two views cover their whole pool: a write anywhere else in it lands in a row checked here.
    unchanged(k_cache[rest], k_before[rest], f"k_cache rows of no valid token ({where})")
    unchanged(v_cache[rest], v_before[rest], f"v_cache rows of no valid token ({where})")


# (query heads, KV heads, head_dim, dtype): heads whose tiles are no power of two. 6 heads of 24 at 3:1 (tiles of
# 72, 24 and 48 columns), all 5 query heads of 80 on one KV head (200, 40 and 80).
HEAD_SHAPES = [pytest.param(6, 2, 24, torch.float32, id="6x24-on-2-float32"),
               pytest.param(5, 1, 80, torch.float16, id="5x80-on-1-float16")]


@pytest.mark.parametrize(("num_heads", "num_kv_heads", "head_dim", "dtype"), HEAD_SHAPES)
def test_rotary_and_cache_any_head_shape(lab, num_heads, num_kv_heads, head_dim, dtype):
    """``rotary_and_cache`` for head shapes the checks accept whose widths are no power of two (any even
    ``head_dim``, any group size: models with heads of 80 or 96, or 28 query heads, have them): 7 tokens,
    one of them padding, against float64 ``apply_rotary_pos_emb``; every cache entry no valid token owns
    unchanged.

    Catches: a tile as wide as the heads' columns, not rounded up to a power of two
    (``q_tile_not_a_power_of_two``: Triton refuses to compile it for these heads), a column's angle taken
    with a bit mask that is its remainder only for a power of two (``angle_by_a_bit_mask``)."""
    gen = np.random.default_rng(head_dim)
    num_tokens, num_blocks, width = 7, 2, (num_heads + 2 * num_kv_heads) * head_dim
    positions = gen.integers(0, 40, num_tokens)
    slots = 1 + gen.permutation(num_blocks * BS - 1)[:num_tokens]
    padding = [4]
    slots[padding] = -1
    qkv = tensor(gen.standard_normal((num_tokens, width)), dtype)
    cos_sin = tensor(rotary_table(40, head_dim), torch.float32)
    k_cache = torch.full((num_blocks, BS, num_kv_heads, head_dim), -77.0, dtype=dtype, device=DEVICE)
    v_cache, k_before = k_cache.clone(), k_cache.clone()
    q_out = torch.full((num_tokens, num_heads, head_dim), float("nan"), dtype=dtype, device=DEVICE)
    valid = [t for t in range(num_tokens) if t not in padding]
    qkv64, table, q_width = f64(qkv), f64(cos_sin), num_heads * head_dim
    kv_width = num_kv_heads * head_dim
    want_q = rotate_f64(qkv64[:, :q_width].reshape(num_tokens, num_heads, head_dim), positions, table)
    want_k = rotate_f64(qkv64[:, q_width : q_width + kv_width].reshape(num_tokens, num_kv_heads, head_dim), positions,
                        table)
    want_v = qkv64[:, q_width + kv_width :].reshape(num_tokens, num_kv_heads, head_dim)
    where = f"{num_heads} query heads on {num_kv_heads} KV heads of {head_dim}, {dtype}"
    lab.rotary_and_cache(qkv, tensor(positions, torch.int64), cos_sin, k_cache, v_cache, tensor(slots, torch.int64),
                         q_out, num_heads, num_kv_heads)
    close(q_out[valid], want_q[valid], dtype, f"q_out of the valid tokens ({where})", ("token", "head", "dim"))
    rest = check_slot_writes(k_cache, v_cache, slots, valid, want_k, want_v, num_blocks, dtype, where)
    unchanged(k_cache[rest], k_before[rest], f"k_cache rows of no valid token ({where})")
    unchanged(v_cache[rest], k_before[rest], f"v_cache rows of no valid token ({where})")


# Scores of each row of logits placed against the argmax's chunks of ARGMAX_BLOCK columns.
ARGMAX_PATTERNS = ["flat near -1000", "flat near +1000", "one peak in the first segment",
                   "one peak in the last segment", "neighbours far apart"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("pattern", ARGMAX_PATTERNS)
def test_argmax_rows_contract_scores(lab, pattern, dtype):
    """``argmax_rows`` over 4100 of 4104 columns (a chunk of 4096 and 4 more), the logits at the levels of
    a score pattern (``labkit.testing.contract.score_levels``, the segment being a chunk of 4096 columns)
    plus noise: every logit near -1000 (or near +1000), the largest in the first chunk or in the short last
    one, rows alternately near +1000 and -1000. The padding columns hold a value that would win.

    Catches: a running best that starts at 0 instead of -inf (``best_starts_at_zero``: every logit
    negative, and column 0 comes back)."""
    rows, vocab, width = 4, 4100, 4104
    gen = np.random.default_rng(len(pattern))
    values = np.stack([contract.score_levels(pattern, vocab, 4096, r) for r in range(rows)])
    values = np.concatenate([values + gen.uniform(-3, 3, values.shape), np.full((rows, width - vocab), 2e3)], axis=1)
    logits = tensor(values, dtype)
    want = f64(logits)[:, :vocab].argmax(axis=1)
    got = lab.argmax_rows(logits, vocab)
    labkit.assert_equal(got, want, what=f"argmax_rows, logits {pattern} ({contract.SCORE_PATTERNS[pattern]})",
                        axes=("row",), dtype=torch.int64)


def test_kernels_at_the_api_limits(lab):
    """Sizes at the edges of what the checks accept: ``rms_norm`` and ``fused_add_rms_norm`` of rows of
    ``MAX_HIDDEN`` (32768) values and of a single value, and of no rows at all; ``silu_and_mul`` of an
    intermediate size of 1, of 0 and of no rows; ``argmax_rows`` over a vocabulary of one column, over a
    row with no padding column, over 4097 columns whose largest is the last (alone in the second
    block of 4096), over float32 logits near the dtype's lowest finite value, and of no rows (an empty
    int64 tensor returned). float64 brute force each.

    Catches: a norm's block of columns capped (``norm_block_capped``: the columns past it never
    counted), a launch over an empty grid, the loop over the vocabulary stopping one column short
    (``last_column_alone_skipped``: a block holding only the last column never read), a running best
    that starts at a finite floor instead of -inf (``best_starts_at_a_finite_floor``), nothing
    returned for a batch of no rows."""
    gen = np.random.default_rng(23)
    for rows, hidden in [(2, 32768), (3, 1), (0, 72)]:
        x = tensor(gen.standard_normal((rows, hidden)))
        weight = tensor(gen.uniform(0.5, 1.5, hidden))
        want = rms_f64(x, weight)
        close(lab.rms_norm(x, weight, EPS), want, torch.float32, f"rms_norm of {rows} rows of {hidden}")
        residual = tensor(gen.standard_normal((rows, hidden)))
        new_residual = f64(residual) + f64(x)
        out, returned = lab.fused_add_rms_norm(x, residual, weight, EPS)
        close(returned, new_residual, torch.float32, f"fused_add_rms_norm's residual, {rows} rows of {hidden}")
        close(out, rms_f64(new_residual, weight), torch.float32, f"fused_add_rms_norm, {rows} rows of {hidden}")
    for rows, width in [(3, 1), (0, 8)]:
        gate_up = tensor(gen.standard_normal((rows, 2 * width)))
        g, u = f64(gate_up[:, :width]), f64(gate_up[:, width:])
        close(lab.silu_and_mul(gate_up), g / (1 + np.exp(-g)) * u, torch.float32,
              f"silu_and_mul, {rows} rows of {width}")
    none = lab.silu_and_mul(tensor(np.zeros((3, 0))))  # an intermediate of no column: a grid of none
    assert none.shape == (3, 0) and none.dtype == torch.float32, f"silu_and_mul of [3, 0]: {none!r}"
    for vocab, width in [(1, 3), (600, 600), (4097, 4100)]:
        values = gen.standard_normal((3, width))
        if vocab > 4096:
            values[:, vocab - 1] = 10.0  # the row's largest in its last real column, alone in its block
        logits = tensor(values)
        labkit.assert_equal(lab.argmax_rows(logits, vocab), f64(logits)[:, :vocab].argmax(axis=1),
                            what=f"argmax_rows over {vocab} of {width} columns", axes=("row",), dtype=torch.int64)
    # Finite float32 logits at the bottom of the dtype's range: each row's largest lies below any finite
    # value a running best could start from, in a middle column and in the last.
    lowest = float(np.finfo(np.float32).min)
    values = np.full((2, 600), lowest)
    values[0, 123] = values[1, 599] = 0.9 * lowest
    logits = tensor(values)
    labkit.assert_equal(lab.argmax_rows(logits, 600), f64(logits).argmax(axis=1), axes=("row",), dtype=torch.int64,
                        what="argmax_rows of float32 logits near the dtype's lowest value")
    empty = lab.argmax_rows(tensor(np.zeros((0, 8))), 8)
    assert isinstance(empty, torch.Tensor) and empty.shape == (0,) and empty.dtype == torch.int64, \
        f"argmax_rows of no rows returned {empty!r}, not an empty int64 tensor"


# (cache layout, splits, tile, dtype, score pattern): three splits that do not divide the table, one split in
# tiles of 16 (each layout once: the kernels are lab 04-06's, tested there in every layout; here the launch
# around them); and float16 scores near +1000, where the splits' summaries must keep float32's precision.
PEAK = "one peak in the last segment"
CONTRACT_DECODE = [pytest.param("kv_pool_views", 3, 16, torch.float32, PEAK, id="kv_pool_views-three_splits"),
                   pytest.param("heads_outside_slots", 1, 16, torch.float32, PEAK, id="heads_outside_slots-one_split"),
                   pytest.param("contiguous", 3, 32, torch.float32, PEAK, id="contiguous-three_splits"),
                   pytest.param("contiguous", 3, 16, torch.float16, "flat near +1000",
                                id="contiguous-three_splits-float16-near_1000")]


@pytest.mark.parametrize(("cache_layout", "splits", "tile", "dtype", "pattern"), CONTRACT_DECODE)
def test_decode_attention_contract(lab, cache_layout, splits, tile, dtype, pattern):
    """``decode_attention`` at the benchmark's head size (64) and group (4 query heads per KV head), the
    caches as an engine lays them out (``labkit.testing.contract.CACHE_LAYOUTS``), a batch whose lengths
    sit at every edge (``boundary_lengths``: 0, 1, each side of a block and of a split's partition, a
    length that is a whole number of neither, and the full table of 5 blocks, which 3 splits do not
    divide), the largest score in each sequence's last split, unused slots NaN; and in float16, every score
    near +1000 (each split's running max far from 0, the reduce rescaling the splits against each other).

    Catches: splits counted by flooring the table over the partition (``last_split_dropped``: the full
    table's last tokens belong to no split), a launch that ignores the configuration, the splits' summaries
    kept in the model's dtype (``summaries_in_the_model_dtype``: near 1000 a float16 running max moves in
    steps of 0.5, and the reduce weighs each split by up to exp(0.25), a quarter, too much or too little)."""
    capacity = 5 * BS
    segment = lab.partition_size(capacity, splits, BS) if splits > 1 else tile
    named = contract.boundary_lengths(BS, segment=segment, capacity=capacity)
    lens = list(named.values())
    case = labkit.cases.decode_case(lens, num_heads=CH, num_kv_heads=CKV, head_dim=CD, block_size=BS,
                                    dtype=torch.float32, device="cpu", seed=splits, spare_blocks=1)
    q, k_cache, v_cache, tables = case.q, case.k_cache, case.v_cache, case.block_tables  # the longest: a full table
    levels = [contract.score_levels(pattern, n, segment, b) for b, n in enumerate(lens)]
    contract.steer_scores(q, k_cache, tables, lens, levels, seed=splits)
    q, k_cache, v_cache = (t.to(dtype) for t in (q, k_cache, v_cache))
    for cache in (k_cache, v_cache):
        labkit.poison_unused_slots(cache, f64(tables).astype(np.int64), lens, kind="nan")
    q, k_cache, v_cache, tables = (t.to(DEVICE) for t in (q, k_cache, v_cache, tables))
    k_cache, v_cache = contract.CACHE_LAYOUTS[cache_layout].apply(k_cache, v_cache)
    want = np.stack([labkit.paged_attention_f64(q[b], k_cache, v_cache, f64(tables[b]).astype(np.int64), n)
                     for b, n in enumerate(lens)])
    out = torch.full_like(q, float("nan"))
    config = lab.DecodeConfig(num_splits=splits, tile_tokens=tile, num_warps=4, num_stages=2)
    lab.decode_attention(q, k_cache, v_cache, tables, case.seq_lens.to(DEVICE), out, config)
    described = ", ".join(f"[{b}] {n} ({name})" for b, (name, n) in enumerate(named.items()))
    # float32 dot products of 64 terms on scores steered near 100: ~1e-5 of the values' scale. float16: the
    # probabilities and the output rounded to 11 bits, summed in float32: ~1e-3 (a float16 summary: ~0.1).
    labkit.assert_close(out, want, atol=1e-4 if dtype == torch.float32 else 1e-2, axes=("sequence", "head", "dim"),
                        dtype=dtype, what=f"decode_attention, {dtype}, scores {pattern} ({splits} splits of "
                                          f"{segment} tokens, tiles of {tile}), "
                                          f"{contract.CACHE_LAYOUTS[cache_layout].describe}, sequences {described}")


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


def test_bad_input_names_the_argument(lab, model):
    """Each function refuses what its kernel cannot run with a ValueError naming the argument, before any
    kernel runs. Catches: a bad shape or dtype that runs anyway and writes out of bounds, and the final
    norm's arguments of ``sample_greedy`` left unchecked (a 1-D hidden state: ``sample_norm_unchecked``)."""
    x, w = torch.randn(4, 8, device=DEVICE), torch.ones(8, device=DEVICE)
    qkv = torch.randn(3, (H + 2 * KV) * D, device=DEVICE)
    cache = torch.zeros(4, BS, KV, D, device=DEVICE)
    cos_sin = torch.zeros(256, D, device=DEVICE)
    pos, slots = torch.zeros(3, dtype=torch.int64, device=DEVICE), torch.zeros(3, dtype=torch.int64, device=DEVICE)
    q_out = torch.empty(3, H, D, device=DEVICE)
    case = labkit.cases.decode_case([5, 9], num_heads=H, num_kv_heads=KV, head_dim=D, block_size=BS,
                                    dtype=torch.float32, device=DEVICE)
    config = lab.DecodeConfig(1, 16, 4, 2)
    calls = [
        ("weight", lambda: lab.rms_norm(x, torch.ones(7, device=DEVICE), EPS)),
        ("x", lambda: lab.rms_norm(x[0], w, EPS)),
        ("eps", lambda: lab.rms_norm(x, w, 0.0)),
        ("out", lambda: lab.rms_norm(x, w, EPS, out=torch.empty(4, 9, device=DEVICE))),
        ("residual", lambda: lab.fused_add_rms_norm(x, torch.zeros(3, 8, device=DEVICE), w, EPS)),
        ("gate_up", lambda: lab.silu_and_mul(torch.zeros(4, 7, device=DEVICE))),
        ("qkv", lambda: lab.split_qkv(qkv, H, KV + 1, D)),
        ("qkv", lambda: lab.rotary_and_cache(qkv[:, :-2], pos, cos_sin, cache, cache.clone(), slots, q_out, H, KV)),
        ("positions", lambda: lab.rotary_and_cache(qkv, pos[:2], cos_sin, cache, cache.clone(), slots, q_out, H, KV)),
        ("q_out", lambda: lab.rotary_and_cache(qkv, pos, cos_sin, cache, cache.clone(), slots, q_out[:, :2], H, KV)),
        ("num_kv_heads", lambda: lab.rotary_and_cache(qkv, pos, cos_sin, cache, cache.clone(), slots, q_out, H, 3)),
        ("vocab_size", lambda: lab.argmax_rows(x, 9)),
        ("out", lambda: lab.argmax_rows(x, 8, out=torch.empty(4, dtype=torch.int32, device=DEVICE))),
        ("lm_head_weight", lambda: lab.sample_greedy(x, x.clone(), pos[:2], w, EPS, torch.zeros(16, 7, device=DEVICE),
                                                     16, torch.empty(2, dtype=torch.int64, device=DEVICE))),
        ("sample_greedy: x must have 2 dimensions", lambda: lab.sample_greedy(
            x[0], x.clone(), pos[:2], w, EPS, torch.zeros(16, 8, device=DEVICE), 16,
            torch.empty(2, dtype=torch.int64, device=DEVICE))),
        ("out", lambda: lab.decode_attention(case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens,
                                             case.q[:1].clone(), config)),
        ("config", lambda: lab.decode_attention(case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens,
                                                torch.empty_like(case.q), lab.DecodeConfig(1, 24, 4, 2))),
    ]
    if DEVICE == "cpu":  # values are checked in CPU tensors only (on a GPU it would make the host wait)
        calls += [
            ("slot_mapping", lambda: lab.rotary_and_cache(qkv, pos, cos_sin, cache, cache.clone(),
                                                          torch.tensor([0, -2, 1]), q_out, H, KV)),
            ("logits_indices", lambda: lab.sample_greedy(x, x.clone(), torch.tensor([0, 4]), w, EPS,
                                                         torch.zeros(16, 8), 16, torch.empty(2, dtype=torch.int64))),
        ]
    for word, call in calls:
        with pytest.raises(ValueError, match=word):
            call()
    biased = copy.deepcopy(model.model.layers[0])  # a layer of its own: the model's stays as it is
    biased.self_attn.q_proj = torch.nn.Linear(HIDDEN, H * D, bias=True)
    with pytest.raises(ValueError, match="bias"):
        lab.merge_layer_weights(biased)


def test_each_check_alone_names_the_argument(lab, model):
    """Each condition of the input checks on its own, the rest of the call valid: a ValueError naming the
    argument (a last dimension that is not contiguous, a cache that is no tensor, a cache of the wrong
    head count or of an odd head size, a rotary table of the wrong width or with strided columns, a
    position at the table's end or below 0, a vocabulary of 0, a sampled tensor of the wrong length or
    strided, logits of the wrong width, a logits index of -1, warps no GPU runs, q or the tables not
    contiguous, a norm weight that is no tensor; a tensor on another device, the meta device standing in
    for a GPU); ``sample_greedy``'s in its own name, before its norm runs (``argmax_rows`` would refuse
    some of them later, in its name). And the values at the edges that are valid: a vocabulary of 1, 1
    and 8 warps, one row's ``out`` as a one-element view with a stride of 2 (contiguous, as torch
    counts it), against float64.

    Catches: a check joined with ``and`` where each condition alone must refuse, a bound off by one,
    an argument left out of the device check: each would run a kernel on what it cannot read."""
    meta = "meta"  # a device no kernel here can read: another device, on any machine
    x, w = torch.randn(4, 8, device=DEVICE), torch.ones(8, device=DEVICE)
    strided = torch.zeros(4, 16, device=DEVICE)[:, ::2]  # [4, 8], its last dimension of stride 2
    qkv = torch.randn(3, (H + 2 * KV) * D, device=DEVICE)
    cache = torch.zeros(4, BS, KV, D, device=DEVICE)
    cos_sin = torch.zeros(256, D, device=DEVICE)
    pos, slots = torch.zeros(3, dtype=torch.int64, device=DEVICE), torch.zeros(3, dtype=torch.int64, device=DEVICE)
    q_out = torch.empty(3, H, D, device=DEVICE)
    head = torch.zeros(16, 8, device=DEVICE)
    rows = torch.tensor([0, 3], device=DEVICE)

    def rotary(**change):
        args = dict(qkv=qkv, positions=pos, cos_sin=cos_sin, k_cache=cache, v_cache=cache.clone(),
                    slot_mapping=slots, q_out=q_out, num_heads=H, num_kv_heads=KV)
        return lambda: lab.rotary_and_cache(**{**args, **change})

    def sample(**change):
        args = dict(hidden=x, residual=x.clone(), logits_indices=rows, norm_weight=w, eps=EPS, lm_head_weight=head,
                    vocab_size=16, sampled=torch.empty(2, dtype=torch.int64, device=DEVICE))
        return lambda: lab.sample_greedy(**{**args, **change})

    case = labkit.cases.decode_case([5, 9], num_heads=H, num_kv_heads=KV, head_dim=D, block_size=BS,
                                    dtype=torch.float32, device=DEVICE)
    wide_q = torch.zeros(2, H + 1, D, device=DEVICE)[:, :H]  # q's heads in a wider buffer: not contiguous
    wide_q.copy_(case.q)
    wide_tables = torch.cat([case.block_tables, case.block_tables], dim=1)[:, : case.block_tables.shape[1]]

    def decode(q=case.q, tables=case.block_tables, out=None, warps=4):
        out = torch.empty_like(case.q) if out is None else out
        config = lab.DecodeConfig(1, 16, warps, 2)
        return lambda: lab.decode_attention(q, case.k_cache, case.v_cache, tables, case.seq_lens, out, config)

    weightless = copy.deepcopy(model.model.layers[0])  # a layer of its own: the model's stays as it is
    weightless.input_layernorm.weight = None
    calls = [
        ("residual", lambda: lab.fused_add_rms_norm(x, strided, w, EPS)),
        ("gate_up", lambda: lab.silu_and_mul(strided)),
        ("k_cache", rotary(k_cache=None)),
        ("k_cache", rotary(k_cache=torch.zeros(4, BS, KV + 1, D), v_cache=torch.zeros(4, BS, KV + 1, D))),
        ("k_cache", rotary(k_cache=torch.zeros(4, BS, KV, D - 1), v_cache=torch.zeros(4, BS, KV, D - 1))),
        ("cos_sin", rotary(cos_sin=torch.zeros(256, D + 2, device=DEVICE))),
        ("cos_sin", rotary(cos_sin=torch.zeros(256, 2 * D, device=DEVICE)[:, ::2])),
        ("q_out", rotary(q_out=torch.empty(3, H, 2 * D, device=DEVICE)[..., ::2])),
        # sample_greedy's own check, before its norm runs (argmax_rows would refuse later, in its own name)
        ("sample_greedy: vocab_size", sample(vocab_size=0)),
        ("sample_greedy: vocab_size", sample(vocab_size=17)),
        ("sample_greedy: sampled", sample(sampled=torch.empty(3, dtype=torch.int64, device=DEVICE))),
        ("sample_greedy: sampled", sample(sampled=torch.empty(4, dtype=torch.int64, device=DEVICE)[::2])),
        ("sample_greedy: logits", sample(logits=torch.empty(2, 17, device=DEVICE))),
        ("num_warps", decode(warps=3)),
        ("contiguous", decode(q=wide_q)),
        ("contiguous", decode(tables=wide_tables)),
        ("input_layernorm.weight", lambda: lab.merge_layer_weights(weightless)),
        ("one device", lambda: lab.rms_norm(x, w, EPS, out=torch.empty(4, 8, device=meta))),
        ("one device", lambda: lab.fused_add_rms_norm(x, torch.zeros(4, 8, device=meta), w, EPS)),
        ("one device", lambda: lab.fused_add_rms_norm(x, x.clone(), w, EPS, out=torch.empty(4, 8, device=meta))),
        ("one device", lambda: lab.silu_and_mul(x, out=torch.empty(4, 4, device=meta))),
        ("sample_greedy: all tensors must be on one device",
         sample(sampled=torch.empty(2, dtype=torch.int64, device=meta))),
        ("one device", decode(out=torch.empty(case.q.shape, device=meta))),
    ]
    if DEVICE == "cpu":  # values are checked in CPU tensors only
        calls += [
            ("positions", rotary(positions=torch.tensor([0, 256, 1]))),
            ("positions", rotary(positions=torch.tensor([0, -1, 1]))),
            ("sample_greedy: logits_indices", sample(logits_indices=torch.tensor([-1, 0]))),
        ]
    for word, call in calls:
        with pytest.raises(ValueError, match=word):
            call()

    # The valid edges: each runs, and gives the float64 answer.
    gen = np.random.default_rng(29)
    h, r, norm_weight = gen.standard_normal((4, 8)), gen.standard_normal((4, 8)), gen.uniform(0.5, 1.5, 8)
    sampled = torch.full((2,), -1, dtype=torch.int64, device=DEVICE)
    lab.sample_greedy(tensor(h), tensor(r), rows, tensor(norm_weight), EPS, tensor(gen.standard_normal((16, 8))), 1,
                      sampled)
    labkit.assert_equal(sampled, [0, 0], what="sample_greedy over a vocabulary of 1", axes=("row",),
                        dtype=torch.int64)
    logits = tensor(gen.standard_normal((1, 40)))
    buffer = torch.full((2,), -1, dtype=torch.int64, device=DEVICE)
    lab.argmax_rows(logits, 40, out=buffer[::2])
    labkit.assert_equal(buffer, [int(f64(logits)[0].argmax()), -1], what="argmax_rows of one row into a view of "
                        "stride 2 (its second element not written)", axes=("element",), dtype=torch.int64)
    want = np.stack([labkit.paged_attention_f64(case.q[b], case.k_cache, case.v_cache,
                                                f64(case.block_tables[b]).astype(np.int64), n)
                     for b, n in enumerate([5, 9])])
    for warps in (1, 8):
        out = torch.full_like(case.q, float("nan"))
        decode(out=out, warps=warps)()
        labkit.assert_close(out, want, atol=1e-5, axes=("sequence", "head", "dim"), dtype=torch.float32,
                            what=f"decode_attention with {warps} warps")


# --------------------------------------------------------------------------------------------
# The engine: generate's tokens at every stage, and the launches each step removes
# --------------------------------------------------------------------------------------------

SYSTEM, ALPHA, BETA, GAMMA = model_truth.random_prompts(1, (33, 7, 9, 5), VOCAB)
# "a" is longer than the budget (two chunks); "b" arrives while "a" runs (a step with a chunk and a
# decode); "c" shares a's first two blocks (a prefix hit: its chunk starts at position 32). Two decode
# steps run three requests: padded to a graph of 4 rows on a CPU.
WORKLOAD = {0: {"a": (SYSTEM + ALPHA, 5)}, 1: {"b": (BETA, 4)}, 3: {"c": (SYSTEM + GAMMA, 4)}}
ALL = {rid: work for wave in WORKLOAD.values() for rid, work in wave.items()}


def serve(lab, model, fused_steps: int, backend: str, cpu_timing: str = "lazy", graphs: bool = False):
    """``WORKLOAD`` through an engine at ``fused_steps``, its caches NaN before the first step, every launch
    of every forward pass counted. On a CPU, decode steps replay graphs of 1, 2 or 4 rows (a CPU graph
    runs its function again, so it is counted too) and the others run eagerly; on a GPU every step runs
    eagerly, to be counted, unless ``graphs``: then decode steps replay CUDA graphs there too, and
    nothing is counted. ``cpu_timing``: the CPU stream's (lab 99-02's ``lazy`` or ``eager``). Returns the
    engine once every request is finished."""
    mode = "full_decode_only" if DEVICE == "cpu" or graphs else "none"
    engine = lab.Engine(model, num_gpu_blocks=24, block_size=BS, max_num_seqs=4, max_num_batched_tokens=24,
                        backend=backend, keep_logits=True, cudagraph_mode=mode, cudagraph_capture_sizes=[1, 2, 4],
                        fused_steps=fused_steps, count_launches=DEVICE == "cpu" or not graphs, cpu_timing=cpu_timing)
    engine.runner.fill_kv_caches(float("nan"))
    pending, calls = dict(WORKLOAD), 0
    while engine.has_unfinished_requests() or pending:
        for rid, (prompt, n) in pending.pop(calls, {}).items():
            engine.add_request(rid, prompt, n)
        engine.step()
        calls += 1
        assert calls < 60, "the workload did not finish in 60 steps"
    return engine


@pytest.fixture(scope="module")
def engine_model():
    """The model the engines run: the test's model, on the device the kernels run on."""
    return make_model(DEVICE)


@pytest.fixture(scope="module")
def served(lab, engine_model):
    """``served(fused_steps, backend, cpu_timing, graphs)``: the engine that served ``WORKLOAD`` (once per
    arguments)."""
    runs = {}

    def get(fused_steps: int, backend: str = "reference", cpu_timing: str = "lazy", graphs: bool = False):
        key = (fused_steps, backend, cpu_timing, graphs or DEVICE == "cpu")
        if key not in runs:
            runs[key] = serve(lab, engine_model, fused_steps, backend, cpu_timing, graphs)
        return runs[key]

    return get


def check_tokens_and_logits(engine, truth, atol: float) -> None:
    for rid, (prompt, n) in ALL.items():
        tokens, logits = truth(prompt, n)
        request = engine.requests[rid]
        assert list(request.output_token_ids) == tokens, f"request {rid!r}: the engine generated " \
                                                         f"{list(request.output_token_ids)}, generate {tokens}"
        got = torch.stack([row.cpu() for row in request.logits])
        labkit.assert_close(got, logits, atol=atol, what=f"request {rid!r}: the logits behind each token",
                            axes=("token", "vocab"))


STAGES = [pytest.param(k, id=f"steps-1-to-{k}") for k in range(1, 6)]


@pytest.mark.parametrize("fused_steps", STAGES)
def test_tokens_and_logits_match_generate(lab, served, truth, fused_steps):
    """Three requests (a chunked prompt, a late arrival in a step with a decode, a prefix hit whose chunk
    starts at position 32) through lab 99-02's engine with steps 1 to ``fused_steps`` of this lab: the
    tokens of transformers' ``generate``, one for one, and the logits behind each within ``LOGIT_ATOL``
    (``ENGINE_ATOL`` on a GPU).

    Catches: everything that changes what the model computes: a merged weight in the wrong order, a
    norm, a residual, an activation, a rotation, a cache row or a sampled row wrong anywhere in a real
    run (positions that are not row indices, chunks that start mid-prompt, padded decode graphs)."""
    check_tokens_and_logits(served(fused_steps), truth, ENGINE_ATOL)


def test_tokens_and_logits_under_the_eager_timing(lab, served, truth):
    """The run of the test above with every step fused (steps 1 to 5), under the CPU stream's other timing
    (lab 99-02's ``eager``: device work runs at its launch, so a read of a live device buffer sees what
    later steps wrote there): ``generate``'s tokens and logits. The test above runs the ``lazy`` timing
    (device work runs when the host waits for it).

    Pins that the fused steps' results do not depend on when the device runs its work. The host's reads
    and waits are lab 99-02's runner's (tested there under both timings, with the mistakes that differ
    between them); no mistake in this lab's functions is known to pass one timing and fail the other,
    and this run keeps it so."""
    check_tokens_and_logits(served(5, cpu_timing="eager"), truth, ENGINE_ATOL)


def test_padding_tokens_write_nothing(lab, served):
    """With step 3, a decode graph of 4 rows replayed for 3 requests runs a padding token whose slot is -1
    (on a GPU too: this engine replays CUDA graphs there): it writes nothing, so the null block (block 0,
    which no request holds) still holds the NaN every cache started with, in every layer.

    Catches: padding written into slot 0 (lab 99-02's convention, kept by a kernel that clamps -1 to 0)."""
    engine = served(5, graphs=True)
    assert engine.runner.num_runs["full"] > 0, f"no decode graph ran: {engine.runner.num_runs}"
    for layer, (k_cache, v_cache) in enumerate(engine.runner.kv_caches):
        for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
            block = cache[0].cpu()
            assert torch.isnan(block).all(), f"layer {layer}: {name}'s null block was written at slots " \
                                             f"{sorted({int(i) for i in torch.nonzero(~torch.isnan(block))[:, 0]})}"


def launches(engine, decode_only: bool) -> list[dict]:
    log = [entry for entry in engine.runner.launch_log if (entry["num_decodes"] == entry["num_reqs"]) == decode_only]
    assert log, f"no {'decode-only' if decode_only else 'mixed'} forward pass was counted"
    return log


@pytest.mark.parametrize("fused_steps", STAGES)
def test_each_step_removes_the_launches_it_promises(lab, served, fused_steps):
    """The launches of every forward pass in the run at ``fused_steps`` (its attention apart), as each step
    of the README promises them, cumulatively:

    1. four matrix products per layer (q, k, v in one of ``(H + 2 KV) * D`` columns; gate and up in one)
       and one for the head; ``split_qkv`` copies nothing;
    2. one ``_rms_norm_kernel`` per norm (two per layer, one before the first), one ``_silu_and_mul_kernel``
       per layer, no torch operator of an RMSNorm or a SiLU but the final norm's;
    3. one ``_rotary_and_cache_kernel`` per layer and no torch operator of a rotation or of the KV
       write;
    4. one ``_argmax_kernel``; the final norm in Triton; the head's product only over the rows that
       sample (1 row for a step of 24 tokens);
    5. at every stage the forward passes, and at 5 exactly: torch's three gathers (the embedding, the
       sampled rows of the two streams) and the matrix products, plus the copy of the kept logits.

    Catches: three GEMMs where one was promised, a norm or an activation left in torch, a second launch
    for the residual add, the head run over every token, an argmax over float32 logits copied out."""
    engine = served(fused_steps)
    for entry in launches(engine, decode_only=True) + launches(engine, decode_only=False):
        t, r = entry["num_tokens"], entry["num_reqs"]
        where = f"steps 1-{fused_steps}, a forward pass of {t} tokens in {r} rows"
        triton_counts, torch_counts = entry["triton"], entry["torch"]
        # The products of the model's weights (before step 3, the rotary embedding's outer product of
        # positions and frequencies, k = 1, is one more).
        gemms = [g for g in entry["gemms"] if g[1] > 1]
        # (m, k, n) of each: per layer q, k and v in one, the output projection, gate and up in one, down;
        # then the head over the rows that sample (one per request), padded or not before step 4.
        layer = [(t, HIDDEN, (H + 2 * KV) * D), (t, H * D, HIDDEN), (t, HIDDEN, 2 * INTERMEDIATE),
                 (t, INTERMEDIATE, HIDDEN)]
        want = layer * L + [(r, HIDDEN, PADDED_VOCAB if fused_steps >= 4 else VOCAB)]
        assert gemms == want, f"{where}: matrix products (m, k, n) {gemms}, expected {want}"
        assert torch_counts.get("clone", 0) == 0, f"{where}: copies {torch_counts}"
        if fused_steps >= 2:
            norms = 2 * L + (1 if fused_steps >= 4 else 0)
            assert triton_counts.get("_rms_norm_kernel", 0) == norms, f"{where}: Triton launches {triton_counts}, " \
                                                                      f"expected {norms} _rms_norm_kernel"
            assert triton_counts.get("_silu_and_mul_kernel", 0) == L, f"{where}: Triton launches {triton_counts}"
            final_norm = 0 if fused_steps >= 4 else 1
            for op in ("pow", "rsqrt", "mean", "silu"):
                want = final_norm if op != "silu" else 0
                assert torch_counts.get(op, 0) == want, f"{where}: torch {op} launched {torch_counts.get(op, 0)} " \
                                                        f"times, expected {want}: {torch_counts}"
        if fused_steps >= 3:
            assert triton_counts.get("_rotary_and_cache_kernel", 0) == L, f"{where}: Triton launches {triton_counts}"
            for op in ("neg", "cat", "index_put", "index_put_", "mul", "add", "add_"):
                if fused_steps >= 4 or op not in ("mul", "add", "add_"):  # before step 4 the final norm adds
                    assert torch_counts.get(op, 0) == 0, f"{where}: torch {op} launched: {torch_counts}"
        if fused_steps >= 4:
            assert triton_counts.get("_argmax_kernel", 0) == 1, f"{where}: Triton launches {triton_counts}"
            assert "argmax" not in torch_counts and "index" not in torch_counts, f"{where}: torch {torch_counts}"
        if fused_steps == 5:
            want_torch = {"index_select": 3, "mm": 4 * L + 1, "copy_": 1}
            assert torch_counts == want_torch, f"{where}: torch launched {torch_counts}, expected {want_torch}"
            want_triton = {"_rms_norm_kernel": 2 * L + 1, "_silu_and_mul_kernel": L, "_rotary_and_cache_kernel": L,
                           "_argmax_kernel": 1}
            assert triton_counts == want_triton, f"{where}: Triton launched {triton_counts}, expected {want_triton}"
    mixed = [e for e in launches(engine, decode_only=False) if e["num_tokens"] > e["num_reqs"]]
    assert mixed, "no step with a chunk of several tokens was counted"


def test_triton_attention_in_the_engine(lab, served, truth):
    """Every step through the Triton kernels (step 5's tuned decode launch, lab 04-03's prefill): the
    tokens and logits of ``generate``; each decode-only step's attention is one partition launch per layer
    (two with a reduce), and no torch operator at all: the output is written in place, not copied.

    Catches: a decode batch the tuned launch reads differently (the padding rows of a graph, lengths no
    tile divides), the attention's output copied after the kernel."""
    engine = served(5, "triton")
    check_tokens_and_logits(engine, truth, ENGINE_ATOL)
    for entry in launches(engine, decode_only=True):
        config = engine.runner.decode_config(entry["num_reqs"])
        attention = entry["attention"]
        want = {"_partition_kernel": L, **({"_reduce_kernel": L} if config.num_splits > 1 else {})}
        assert attention["triton"] == want and attention["torch"] == {}, \
            f"a decode step of {entry['num_reqs']} rows ({config}): attention launched {attention}, expected " \
            f"{want} and no torch operator"


def test_triton_attention_before_step_5(lab, engine_model, truth):
    """Steps 1 to 4 through the Triton kernels, one request (a 9-token prompt, then two decode steps), no
    graphs: the decode steps' attention is lab 99-02's (lab 04-06's ``paged_decode`` with its defaults,
    into a new tensor, copied into the layer's output), the prefill lab 04-03's: ``generate``'s tokens
    and logits.

    Pins the given runner's attention before step 5 replaces it: the decode row's output copied, the
    decode kernel of lab 04-06 found."""
    engine = lab.Engine(engine_model, num_gpu_blocks=8, block_size=BS, max_num_seqs=2, max_num_batched_tokens=16,
                        backend="triton", keep_logits=True, cudagraph_mode="none", fused_steps=4)
    engine.runner.fill_kv_caches(float("nan"))
    engine.add_request("b", BETA, 3)
    while engine.has_unfinished_requests():
        engine.step()
    tokens, logits = truth(BETA, 3)
    request = engine.requests["b"]
    assert list(request.output_token_ids) == tokens, f"the engine generated {list(request.output_token_ids)}, " \
                                                     f"generate {tokens}"
    labkit.assert_close(torch.stack([row.cpu() for row in request.logits]), logits, atol=ENGINE_ATOL,
                        what="the logits behind each token", axes=("token", "vocab"))


@pytest.mark.ungraded  # it checks the given runner's checks and the given engine's settings
def test_the_given_runner_refuses_what_it_cannot_run(lab, model):
    """The given code's own checks, each condition alone: ``fused_steps`` outside 1..5 (0 and 6, the
    edges), a bool or a float; a model whose rotary embedding does not repeat its cosines, or its sines,
    across the head (each alone: not transformers' ``rotate_half`` convention); a model without a
    rotary embedding. Each a ValueError that says what is wrong, before any kernel. And the engine's
    settings default to lab 99-02's (``FusedEngine``'s docstring), ``fused_steps`` to every step.

    Catches: a check joined with ``and`` (it refuses only when every condition holds), a default that
    is not lab 99-02's."""
    def engine(m=model, **settings):
        return lambda: lab.Engine(m, num_gpu_blocks=8, block_size=BS, max_num_seqs=2, max_num_batched_tokens=16,
                                  cudagraph_mode="none", **settings)

    engine(fused_steps=1)()  # a check that refuses everything is no check: the smallest valid setting is built
    calls = [("fused_steps", engine(fused_steps=steps)) for steps in (0, 6, True, 2.0)]

    def twisted(which: str):
        """A stand-in model whose rotary embedding gives its cosines or its sines two different halves."""
        def rotary_emb(x, positions):
            cos, sin = model.model.rotary_emb(x, positions)
            half = cos.shape[-1] // 2
            twist = torch.cat([torch.zeros_like(cos[..., :half]), torch.ones_like(cos[..., half:])], dim=-1)
            return (cos + twist, sin) if which == "cos" else (cos, sin + twist)

        return types.SimpleNamespace(model=types.SimpleNamespace(rotary_emb=rotary_emb), config=model.config,
                                     parameters=model.parameters)

    calls += [("rotate_half", lambda which=which: lab.rotary_cos_sin(twisted(which))) for which in ("cos", "sin")]
    no_rotary = copy.deepcopy(model)  # a model of its own: the fixture's stays as it is
    del no_rotary.model.rotary_emb
    calls.append(("Llama-shaped", engine(no_rotary)))
    for word, call in calls:
        with pytest.raises(ValueError, match=word):
            call()
    # float32 angles of up to 255 radians, each within 255 * 2**-24 ~ 1.5e-5 of the float64 one.
    labkit.assert_close(lab.rotary_cos_sin(model), rotary_table(CONFIG["max_position_embeddings"], D), atol=3e-5,
                        what="rotary_cos_sin of the test's model", axes=("position", "column"))

    ours = inspect.signature(lab.Engine.__init__).parameters
    theirs = inspect.signature(labkit.load_reference("99-02").Engine.__init__).parameters
    for name, parameter in theirs.items():
        assert ours[name].default == parameter.default, \
            f"Engine's {name} defaults to {ours[name].default!r}, lab 99-02's engine to {parameter.default!r}"
    assert ours["fused_steps"].default == lab.FUSED_STEPS and ours["count_launches"].default is False


@pytest.mark.ungraded  # it checks the given launch counter, which patches Triton in the test's own process
def test_counting_leaves_triton_as_it_was(lab):
    """A ``LaunchCounter`` (what ``count_launches`` runs each forward pass under) counts a kernel's launch
    once, and on leaving puts Triton's own launch back: a second counter counts the same, and a launch
    after both is counted by neither.

    Pins the given counter that the launch tests read: a counter that left its wrapper in place would
    count every later launch of the session into counters that have finished."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    before = (JITFunction.run, InterpretedFunction.run)
    counter_class = lab.FusedModelRunnerBase._forward.__globals__["LaunchCounter"]  # the runner's own
    x, w = tensor(np.ones((2, 8))), tensor(np.ones(8))
    counters = []
    for _ in range(2):
        with counter_class() as counter:
            lab.rms_norm(x, w, EPS)
        counters.append(counter)
        assert (JITFunction.run, InterpretedFunction.run) == before, "a LaunchCounter left Triton's launch patched"
    lab.rms_norm(x, w, EPS)
    for counter in counters:
        assert dict(counter.triton) == {"_rms_norm_kernel": 1}, f"one rms_norm counted as {dict(counter.triton)}"


# --------------------------------------------------------------------------------------------
# On a GPU: real graphs and streams, bfloat16 kernels, no wait
# --------------------------------------------------------------------------------------------

BUSY = {f"g{i}": (p, n) for i, (p, n) in enumerate(zip(model_truth.random_prompts(4, (30, 41, 17, 56, 9, 33), VOCAB),
                                                        (12, 9, 16, 6, 14, 10), strict=True))}


@pytest.mark.gpu
@pytest.mark.parametrize("async_scheduling", [True, False], ids=["async", "sync"])
def test_gpu_engine_matches_generate(lab, truth, async_scheduling):
    """On a GPU, float32: six requests through every kernel and real CUDA graphs (full graphs for decode
    steps, piecewise graphs around attention for the others, none eager), with and without the host one
    step ahead: ``generate``'s tokens (computed on the CPU), logits within 1e-3 (cuBLAS and the kernels
    order their sums differently again; no TF32); the null block never written.

    Catches: a kernel that reads a graph's padding, a launch that is not capturable, a stream race."""
    gpu_model = make_model("cuda")
    engine = lab.Engine(gpu_model, num_gpu_blocks=64, block_size=BS, max_num_seqs=8, max_num_batched_tokens=64,
                        keep_logits=True, async_scheduling=async_scheduling,
                        cudagraph_capture_sizes=[1, 2, 4, 8, 16, 32, 64])
    engine.runner.fill_kv_caches(float("nan"))
    engine.generate({rid: p for rid, (p, _) in BUSY.items()}, {rid: n for rid, (_, n) in BUSY.items()})
    for rid, (prompt, n) in BUSY.items():
        tokens, logits = truth(prompt, n)
        assert engine.requests[rid].output_token_ids == tokens, rid
        diff = (torch.stack(list(engine.requests[rid].logits)).cpu() - logits).abs().max().item()
        assert diff <= 1e-3, f"request {rid!r}: logits differ by {diff:.3g}"
    runs = dict(engine.runner.num_runs)
    assert runs["eager"] == 0 and runs["full"] > 0 and runs["piecewise"] > 0, f"steps run: {runs}"
    for k_cache, v_cache in engine.runner.kv_caches:
        assert torch.isnan(k_cache[0]).all() and torch.isnan(v_cache[0]).all(), "the null block was written"


@pytest.mark.gpu
def test_gpu_steps_never_wait_for_the_device(lab, truth):
    """On a GPU with the host one step ahead: once the kernels are compiled, no step makes the host wait
    for the device except where the engine asks (torch's sync debug mode, set to raise, sees no
    synchronizing operation in a whole run): the tokens stay on the device, no logits row is read.

    Catches: a ``.item()``, a ``.tolist()`` or an input check that reads device values in the step."""
    gpu_model = make_model("cuda")
    settings = dict(num_gpu_blocks=64, block_size=BS, max_num_seqs=8, max_num_batched_tokens=64,
                    cudagraph_capture_sizes=[1, 2, 4, 8, 16, 32, 64])
    lab.Engine(gpu_model, **settings).generate({rid: p for rid, (p, _) in BUSY.items()}, 4)  # compiles the kernels
    engine = lab.Engine(gpu_model, **settings)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        out = engine.generate({rid: p for rid, (p, _) in BUSY.items()}, {rid: n for rid, (_, n) in BUSY.items()})
    finally:
        torch.cuda.set_sync_debug_mode("default")
    for rid, (prompt, n) in BUSY.items():
        assert out[rid] == truth(prompt, n)[0], rid


@pytest.mark.gpu
def test_gpu_kernels_in_bfloat16(lab):
    """The kernels in bfloat16 (the benchmark's dtype; the interpreter cannot run it) against float64, at
    the benchmark's sizes: a 2048-wide RMSNorm and its fused add, SiLU-and-mul of 8192, the rotary
    write of 32 query and 8 KV heads of 64, an argmax over 32000 of 32064 columns, the decode with the
    tuned configuration of a 256-row batch.

    Catches: a kernel right in float32 and wrong in bfloat16 (a value rounded at the wrong point, an
    accumulation in bfloat16)."""
    dtype, gen = torch.bfloat16, torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape):
        return torch.randn(shape, generator=gen, device="cuda").to(dtype)

    x, residual, weight = randn(256, 2048), randn(256, 2048), randn(2048)
    close(lab.rms_norm(x, weight, EPS), rms_f64(x, weight), dtype, "rms_norm, bfloat16")
    new_residual = (x.double() + residual.double()).to(dtype)
    out, _ = lab.fused_add_rms_norm(x, residual, weight, EPS)
    close(residual, f64(new_residual), dtype, "fused_add_rms_norm's residual, bfloat16")
    close(out, rms_f64(new_residual, weight), dtype, "fused_add_rms_norm, bfloat16")
    gate_up = randn(256, 2 * 8192)
    g, u = f64(gate_up[:, :8192]), f64(gate_up[:, 8192:])
    close(lab.silu_and_mul(gate_up), g / (1 + np.exp(-g)) * u, dtype, "silu_and_mul, bfloat16")
    heads, kv_heads, dim, tokens = 32, 8, 64, 64
    qkv = randn(tokens, (heads + 2 * kv_heads) * dim)
    positions = torch.randperm(2048, device="cuda")[:tokens]
    slots = torch.randperm(64 * BS, device="cuda")[:tokens]
    table = rotary_table(2048, dim)
    cos_sin = torch.tensor(table, dtype=torch.float32, device="cuda")
    k_cache = torch.zeros(64, BS, kv_heads, dim, dtype=dtype, device="cuda")
    v_cache, q_out = torch.zeros_like(k_cache), torch.empty(tokens, heads, dim, dtype=dtype, device="cuda")
    lab.rotary_and_cache(qkv, positions, cos_sin, k_cache, v_cache, slots, q_out, heads, kv_heads)
    qkv64, pos = f64(qkv), f64(positions).astype(np.int64)
    close(q_out, rotate_f64(qkv64[:, : heads * dim].reshape(tokens, heads, dim), pos, f64(cos_sin)), dtype,
          "rotary_and_cache's queries, bfloat16", ("token", "head", "dim"))
    want_k = rotate_f64(qkv64[:, heads * dim : (heads + kv_heads) * dim].reshape(tokens, kv_heads, dim), pos,
                        f64(cos_sin))
    got_k = k_cache.view(-1, kv_heads, dim)[slots]
    close(got_k, want_k, dtype, "rotary_and_cache's keys, bfloat16", ("token", "head", "dim"))
    logits = randn(256, 32064)
    want = f64(logits)[:, :32000].argmax(axis=1)
    labkit.assert_equal(lab.argmax_rows(logits, 32000), want, what="argmax_rows, bfloat16", axes=("row",))
    lens = [random.Random(b).randint(0, 700) for b in range(256)]
    case = labkit.cases.decode_case(lens, num_heads=heads, num_kv_heads=kv_heads, head_dim=dim, block_size=BS,
                                    dtype=dtype, device="cuda")
    config = lab.choose_decode_config(256, kv_heads, dim, 2, case.block_tables.shape[1] * BS,
                                      torch.cuda.get_device_properties(0).multi_processor_count)
    out = torch.empty_like(case.q)
    lab.decode_attention(case.q, case.k_cache, case.v_cache, case.block_tables, case.seq_lens, out, config)
    for b in range(0, 256, 17):
        want = labkit.paged_attention_f64(case.q[b], case.k_cache, case.v_cache, f64(case.block_tables[b]).astype(
            np.int64), lens[b])
        # bfloat16 probabilities times bfloat16 values, summed in float32: ~1e-2 of the values' scale.
        labkit.assert_close(out[b], want, atol=3e-2, what=f"decode_attention, bfloat16, sequence {b}",
                            axes=("head", "dim"))
    assert math.isfinite(float(out.float().abs().max()))
