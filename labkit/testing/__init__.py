"""What a lab's tests, demos and benchmarks use.

- ``loader``: ``LAB_IMPL`` -> the module under test; an earlier lab's reference solution.
- ``reference``: float64 brute-force attention, the tests' truth.
- ``checks``: comparisons that say where arrays differ, and dtype checks.
- ``poison``: huge, NaN and inf poison for every cache slot that holds no valid token.
- ``cases``: random paged caches, block tables and the other inputs the tests build.
- ``triton_env``: Triton on a GPU, or through its interpreter on a CPU.
- ``bench``: GPU timing (per call and CUDA-graph replay), bandwidth ceilings and the results table
  of the benchmarks; ``stream_read``: the read-only kernel behind ``bench.read_bandwidth``.
"""
