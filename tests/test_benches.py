"""The labs' benchmarks, checked without a GPU: the kernels they time beside the lab's own (through
Triton's interpreter), and every code path of the model benchmarks (``--smoke``: a tiny model on the
CPU). Their timings need a GPU; whether they run and compute the right thing does not."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys

import numpy as np
import pytest

from labkit.course import registry
from labkit.testing import loader, triton_env


def _bench_module(lab_id: str):
    """A lab's ``bench.py``, imported as a module (its ``main`` is not run)."""
    if not triton_env.has_torch_and_triton():
        pytest.skip(f"needs torch and triton: {triton_env.INSTALL_HINT}")
    triton_env.select_backend()
    lab_dir = registry.get(lab_id).path
    return loader.exec_file(lab_dir, loader.module_name(lab_dir, "bench"), lab_dir / "bench.py")


def test_split_k_gemm_sums_its_splits_to_the_product():
    """99-03's split-K GEMM (the column beside cuBLAS in its matrix-product table): the float32 partial
    sums of 1, 2 and 4 splits of K add up to ``x @ w.T`` (float64 brute force), on a product whose
    halves differ (a kernel that read one split's K range for every split, or ``w`` untransposed, would
    not); ``time_split_k`` times only configurations that are right, and says None where none fits."""
    bench = _bench_module("99-03")
    import torch

    device = triton_env.device()
    rng = np.random.default_rng(0)
    m, k, n = 64, 256, 64
    x64, w64 = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    x64[:, k // 2 :] *= 100.0  # the second half of K dominates: a split that misses it is far off
    want = x64 @ w64.T
    x = torch.from_numpy(x64).to(device=device, dtype=torch.float32)
    w = torch.from_numpy(w64).to(device=device, dtype=torch.float32)
    for splits in (1, 2, 4):
        part = torch.full((splits, m, n), float("nan"), device=device)
        bench.split_k_gemm_kernel[(m // 32, n // 32, splits)](x, w, part, m, n, k, k // splits, 32, 32, 32)
        got = part.double().sum(0).cpu().numpy()
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error < 1e-3, f"{splits} splits: the partial sums are {error:.2e} off the product (relative)"
    best = bench.time_split_k(x, w, torch, reps=1)
    assert best is not None and best[1][0] in (1, 2, 4), f"no configuration of SPLIT_K_CONFIGS was right: {best}"
    assert bench.time_split_k(x[:48], w, torch, reps=1) is None, "48 rows fit no configuration's tiles"


MODEL_BENCHES = [lab for lab in registry.LABS if (lab.path / "bench.py").is_file()
                 and "model_options(" in (lab.path / "bench.py").read_text()]  # those with --smoke


@pytest.fixture(scope="module")
def smoke_runs(request):
    """``bench.py --smoke`` of each model benchmark this session checks, two at a time (CI's machine has
    two cores; each run uses one): {lab id: CompletedProcess}."""
    if not triton_env.has_torch_and_triton():
        pytest.skip(f"needs torch and triton: {triton_env.INSTALL_HINT}")
    pytest.importorskip("transformers", reason='needs transformers: pip install -e ".[model]"')
    labs = [item.callspec.params["lab"] for item in request.session.items
            if getattr(item, "originalname", "") == "test_a_model_benchmark_runs_every_path_on_the_cpu"]
    # Longest first: 99-03's smoke (every rung of its ladder, some 55 s) beside 99-01's and 99-02's one after
    # the other (some 50 and 20 s), rather than after 99-02's.
    order = sorted(labs, key=lambda lab: lab.id, reverse=True)
    env = {name: value for name, value in os.environ.items() if name != "LAB_IMPL"}  # the course's own engine

    def smoke(lab):
        return subprocess.run([sys.executable, str(lab.path / "bench.py"), "--smoke"], capture_output=True,
                              text=True, timeout=600, cwd=registry.ROOT, env=env)

    with concurrent.futures.ThreadPoolExecutor(2) as threads:
        return dict(zip((lab.id for lab in order), threads.map(smoke, order), strict=True))


@pytest.mark.maintainer
@pytest.mark.parametrize("lab", MODEL_BENCHES, ids=lambda lab: lab.id)
def test_a_model_benchmark_runs_every_path_on_the_cpu(smoke_runs, lab):
    """``bench.py --smoke``: every engine, trace and table of the benchmark on a tiny model, on the CPU
    (the timings mean nothing; that it runs to the end and prints its report is what is checked)."""
    run = smoke_runs[lab.id]
    assert run.returncode == 0, f"bench.py --smoke of {lab.id} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "total" in run.stdout.splitlines()[-1], run.stdout[-2000:]
