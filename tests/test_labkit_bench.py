"""labkit's benchmark helpers that can be checked without a GPU (the streaming read kernel runs
through Triton's interpreter), and on a GPU the CUDA-graph timer."""

from __future__ import annotations

import numpy as np
import pytest

from labkit.testing import triton_env


def test_stream_read_xors_every_word_of_each_block():
    """The read-bandwidth kernel reads every word: one xor per block, the last block short."""
    if not triton_env.has_torch_and_triton():
        pytest.skip(f"needs torch and triton: {triton_env.INSTALL_HINT}")
    triton_env.select_backend()
    import torch

    from labkit.testing import stream_read

    rng = np.random.default_rng(0)
    words = rng.integers(-(2**31), 2**31, size=3 * 64 + 5, dtype=np.int64).astype(np.int32)
    data = torch.from_numpy(words).to(triton_env.device())
    got = stream_read.xor_blocks(data, block=64).cpu().numpy()
    padded = np.concatenate([words, np.zeros(64 - 5, dtype=np.int32)]).reshape(4, 64)
    np.testing.assert_array_equal(got, np.bitwise_xor.reduce(padded, axis=1))
    with pytest.raises(ValueError, match="xor_blocks"):
        stream_read.xor_blocks(data.long())


@pytest.mark.gpu
def test_graph_time_us_times_a_replay():
    """A graph replay of a 256 MiB copy takes about as long as the copy issued directly."""
    import torch

    from labkit.testing import bench

    src = torch.ones(256 << 20, dtype=torch.int8, device="cuda")
    dst = torch.empty_like(src)
    graphed, direct = bench.graph_time_us(lambda: dst.copy_(src)), bench.time_us(lambda: dst.copy_(src))
    assert 0.5 * direct < graphed < 1.5 * direct


def test_matmul_tflops_times_its_chain_after_the_warm_up():
    """The matrix rate is the products' FLOPs over their time (here on the CPU, in float32): each
    chain's products counted, the warm-up run for as long as asked before any is timed, and bad
    arguments named."""
    if not triton_env.has_torch_and_triton():
        pytest.skip(f"needs torch and triton: {triton_env.INSTALL_HINT}")
    import time

    import torch

    from labkit.testing import bench

    calls = []
    real_matmul = torch.matmul

    def counted(*args, **kwargs):
        calls.append(time.perf_counter())
        return real_matmul(*args, **kwargs)

    torch.matmul = counted
    try:
        start = time.perf_counter()
        rate = bench.matmul_tflops(48, torch.float32, chain=3, reps=4, warmup_s=0.05, device="cpu")
    finally:
        torch.matmul = real_matmul
    assert rate > 0 and rate == rate and rate != float("inf")
    # One chain to start, chains of warm-up for 0.05 s, then the four timed chains: whole chains only.
    assert len(calls) % 3 == 0 and len(calls) >= 3 * (1 + 1 + 4), len(calls)
    assert calls[-12] - start >= 0.05, "a timed product ran before the warm-up's time was up"
    for bad in (dict(dtype=torch.int32), dict(n=0), dict(chain=True), dict(reps=0), dict(warmup_s=-1.0)):
        arguments = dict(n=8, dtype=torch.float32, warmup_s=0.0, device="cpu") | bad
        with pytest.raises(ValueError, match="matmul_tflops"):
            bench.matmul_tflops(**arguments)


@pytest.mark.gpu
def test_matmul_tflops_in_each_dtype():
    """On a GPU the rate of float16 and bfloat16 products is finite and far above a CPU's."""
    import torch

    from labkit.testing import bench

    for dtype in (torch.float16, torch.bfloat16):
        rate = bench.matmul_tflops(4096, dtype, warmup_s=0.2)
        assert 10 < rate < 10_000, (dtype, rate)


def test_a_benchmarks_command_line_and_results_are_written_one_way(tmp_path, capsys):
    """``bench.arguments``: the docstring's first paragraph, ``--out`` and ``--plot-from``; ``write_results``
    prints the table and, given a folder, writes results.md and its plot (the table alone without matplotlib)."""
    from labkit.testing import bench

    args = bench.arguments("Lab 00-00 benchmark.\n\nMore.").parse_args(["--out", str(tmp_path / "a")])
    assert args.out == tmp_path / "a" and args.plot_from is None

    def plot(md, svg):
        svg.write_text(md.read_text())

    bench.write_results(args.out, "| a |\n", plot)
    assert (args.out / "results.svg").read_text() == "| a |\n" and "wrote" in capsys.readouterr().out

    def no_matplotlib(md, svg):
        raise SystemExit("needs matplotlib")

    bench.write_results(tmp_path / "b", "| b |\n", no_matplotlib)
    assert (tmp_path / "b" / "results.md").read_text() == "| b |\n"
    assert "no plot: needs matplotlib" in capsys.readouterr().out
    bench.write_results(None, "| c |\n", no_matplotlib)
    assert capsys.readouterr().out == "| c |\n\n"
