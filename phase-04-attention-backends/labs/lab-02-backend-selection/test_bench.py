"""Maintainer checks of lab 04-02's bench.py on the CPU (``pytest -m maintainer``).

The benchmark runs on a GPU only, in a tight time budget: a wrong answer there costs a run. So
what can run on a CPU runs here first, on small shapes in float32, against float64 truths
computed in this file: the reference the benchmark checks every backend against, the dense SDPA
paths (decode with the query heads of a group packed as rows, prefill with and without
``enable_gqa``), gather + SDPA, flex_attention with the block mask built from the block table
(eager: the interpreter of flex), lab 04-06's kernel through Triton's interpreter, and the
matrix / table / plot written from results. These are not learner tests: they need no ``lab``.

Tolerance: float32 inputs, float32 accumulation over at most 256 keys: relative errors near
1e-7; 1e-5 leaves two orders of margin, and any masking or head-mapping mistake moves the output
by more than 1e-2.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import labkit

pytestmark = [
    pytest.mark.maintainer,
    pytest.mark.triton,
    pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile"),
]
torch, triton = labkit.triton_env.require_torch_and_triton()

HERE = Path(__file__).resolve().parent
TOL = 1e-5
HEADS = (4, 2, 16)  # query heads, KV heads, head_dim: a group of 2


def load_bench():
    name = "lab0402_bench_under_test"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "bench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


B = load_bench()
SHAPES = [B.Shape("decode", 2, 120), B.Shape("decode", 1, 128), B.Shape("prefill", 1, 256)]


def case_for(shape, poison: float | None = None):
    case = B.make_case(torch, shape, torch.float32, "cpu", heads=HEADS)
    if poison is not None:  # slots past seq_len in each sequence's last block
        for b in range(shape.batch):
            last = int(case.block_tables[b, -1])
            used = shape.seq_len - (case.block_tables.shape[1] - 1) * B.BLOCK_SIZE
            case.k_cache[last, used:] = poison
            case.v_cache[last, used:] = poison
    return case


def truth_f64(case):
    """Float64 attention of every query row, independent of bench.py: labkit's paged reference
    for decode, a causal loop over the gathered prompt for prefill."""
    q = case.q.double().numpy()
    k_cache, v_cache = case.k_cache.double().numpy(), case.v_cache.double().numpy()
    tables = case.block_tables.numpy()
    if case.shape.phase == "decode":
        return np.stack([labkit.paged_attention_f64(q[b], k_cache, v_cache, tables[b], case.shape.seq_len)
                         for b in range(case.shape.batch)])
    k = labkit.gather_f64(k_cache, tables[0], case.shape.seq_len)
    v = labkit.gather_f64(v_cache, tables[0], case.shape.seq_len)
    return np.stack([labkit.attention_f64(q[i], k[: i + 1], v[: i + 1]) for i in range(len(q))])


def rel(out, truth) -> float:
    out = np.asarray(out.detach().double())
    return float(np.linalg.norm(out - truth) / np.linalg.norm(truth))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_reference_rows_match_float64(shape):
    """The float32 reference every GPU backend is checked against equals the float64 truth on the
    rows it checks (a wrong reference would discard right backends, or pass wrong ones)."""
    case = case_for(shape)
    rows, ref = B.reference_rows(torch, case)
    truth = truth_f64(case)[rows.numpy()]
    assert rel(ref, truth) < TOL


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_sdpa_and_gather_paths_match_float64(shape):
    """Dense SDPA (decode: the group's query heads packed as query rows; prefill: enable_gqa and
    repeated K/V) and gather + SDPA compute the right attention, with NaN in the unused slots that
    the dense copy must cut off."""
    case = case_for(shape, poison=float("nan"))
    truth = truth_f64(case)
    if shape.phase == "decode":
        calls = [B._sdpa_decode(torch, case, case.k_dense, case.v_dense)]
    else:
        calls = [B._sdpa_prefill(torch, case, case.k_dense, case.v_dense, gqa=True),
                 B._sdpa_prefill(torch, case, case.k_dense, case.v_dense, gqa=False)]
    calls.append(B.make_gather_sdpa(torch, case)[0])
    for call in calls:
        out = call()
        assert out.shape == case.q.shape
        assert rel(out, truth) < TOL


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s.name)
def test_flex_block_mask_over_the_paged_cache(shape):
    """flex_attention (eager) with the block mask built from the block table equals the float64
    truth: the mask keeps each query to its own sequence's blocks, in logical order, up to its
    position. Unused slots hold a huge finite value (times a zero weight it stays zero; NaN would
    reach the output through 0 * NaN in any kernel, so real caches never hold it either)."""
    case = case_for(shape, poison=3e4)
    call, _ = B.make_flex(torch, case, compiled=False)
    out = call()
    assert out.shape == case.q.shape
    assert rel(out, truth_f64(case)) < TOL


def test_flex_block_mask_counts():
    """The block mask of a decode batch lists, for its one query block, every 128-slot block that
    holds a page of the batch (partial, since other sequences' queries share the block); a batch of
    one full sequence has every block full."""
    case = case_for(B.Shape("decode", 2, 120))
    bm = B.paged_block_mask(torch, case, B.paged_mask_mod(torch, case, B.BLOCK_SIZE), B.BLOCK_SIZE)
    slots = case.k_cache.shape[0] * B.BLOCK_SIZE
    assert int(bm.kv_num_blocks.sum()) + int(bm.full_kv_num_blocks.sum()) == slots // B.FLEX_BLOCK
    one = case_for(B.Shape("decode", 1, 256))
    bm = B.paged_block_mask(torch, one, B.paged_mask_mod(torch, one, B.BLOCK_SIZE), B.BLOCK_SIZE)
    assert int(bm.kv_num_blocks.sum()) == 0 and int(bm.full_kv_num_blocks.sum()) == 2


def test_triton_decode_through_the_interpreter():
    """Lab 04-06's paged_decode, as the benchmark calls it, gives the float64 answer (Triton's
    interpreter on a CPU), and is skipped for prefill."""
    case = case_for(B.Shape("decode", 2, 120), poison=3e4)
    lab06 = labkit.load_reference("04-06")
    call, _ = B.make_triton_decode(torch, case, lab06)
    assert rel(call(), truth_f64(case)) < TOL
    with pytest.raises(B.Skip):
        B.make_triton_decode(torch, case_for(B.Shape("prefill", 1, 256)), lab06)


def test_prefill_kernel_arguments_are_filled_by_name():
    """A lab 04-03 kernel gets its arguments by parameter name; one it cannot fill is reported."""
    case = case_for(B.Shape("prefill", 1, 256))
    seen = {}

    def paged_prefill(q, k_cache, v_cache, block_table, query_start_loc, seq_lens, scale=None):
        seen.update(q=q, block_table=block_table, qsl=query_start_loc, scale=scale)
        return q

    call, _ = B.make_triton_prefill(torch, case, paged_prefill)
    call()
    assert seen["q"] is case.q and seen["qsl"].tolist() == [0, 256]
    assert torch.equal(seen["block_table"], case.block_tables[0]) and seen["scale"] == 1 / math.sqrt(16)

    def odd(q, k_cache, v_cache, mystery):
        return q

    with pytest.raises(B.Skip, match="mystery"):
        B.make_triton_prefill(torch, case, odd)
    kernel, message = B.find_prefill_kernel()
    if not (Path(__file__).resolve().parents[1] / "lab-03-causal-prefill-attention").is_dir():
        assert kernel is None and "not in this repository" in message


def fake_results():
    rows = []
    for dtype in ("float16", "bfloat16"):
        for shape, times in [
            (B.Shape("decode", 16, 4096), {"sdpa_flash": 104.0, "triton_paged_decode": 100.0, "flex_paged": 250.0}),
            (B.Shape("prefill", 1, 4096), {"sdpa_flash": 300.0, "sdpa_cudnn": 300.0, "gather_sdpa": 330.0}),
        ]:
            backends = {n: {"us": times.get(n), "note": "" if n in times else "failed: RuntimeError: x",
                            "rel_err": None, "first_call_s": 12.5 if n == "flex_paged" else None}
                        for n in B.BACKENDS}
            rows.append({"dtype": dtype, "shape": shape, "backends": backends})
    return rows


def test_matrix_table_and_plot(tmp_path):
    """What the run writes: a matrix.json that lab 04-02's choose_measured reads (and that agrees with
    the table's fastest column, ties to the first listed backend), the Markdown table, the plot."""
    results = fake_results()
    matrix = json.loads(json.dumps(B.build_matrix(results, "test device")))
    lab = labkit.load_impl(HERE, "solution")
    for r in results:
        shape = {"phase": r["shape"].phase, "dtype": r["dtype"], "batch": r["shape"].batch,
                 "seq_len": r["shape"].seq_len}
        choice = lab.choose_measured(shape, matrix)
        best, best_us, second, margin = B.fastest({n: b["us"] for n, b in r["backends"].items()})
        assert (choice.backend, choice.time_us, choice.runner_up) == (best, best_us, second)
        assert math.isclose(choice.margin, margin)
    assert B.fastest({"sdpa_cudnn": 300.0, "sdpa_flash": 300.0})[0] == "sdpa_flash"
    table = B.results_table(results)
    assert "triton_paged_decode" in table and "1.04x" in table
    assert "failed" in B.notes_table(results) and "12.5" in B.compile_table(results)
    (tmp_path / "results.md").write_text(f"# Lab 04-02 results\n\ntest device.\n\n{table}\n")
    B.plot(tmp_path / "results.md", tmp_path / "results.svg")  # the plot is drawn from the table
    assert (tmp_path / "results.svg").stat().st_size > 10_000 and (tmp_path / "results.dark.svg").is_file()


def test_bench_refuses_to_run_without_cuda(tmp_path, capsys):
    """Without CUDA the benchmark says it needs a GPU and exits with status 2, writing nothing."""
    if B.BACKEND == "cuda":
        pytest.skip("this machine has a GPU")
    assert B.main(["--out", str(tmp_path / "out")]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()
