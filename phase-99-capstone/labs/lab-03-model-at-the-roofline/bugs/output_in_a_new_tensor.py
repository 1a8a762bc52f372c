"""One split writes a fresh tensor and returns it, instead of writing ``out``.

Right for a caller that uses the return value; the runner hands ``out`` (its attention buffer) and
reads that, as a CUDA graph's replay must: its attention reads stale values.
"""

CAUGHT_BY = ["test_decode_attention_matches_float64", "test_triton_attention_in_the_engine"]

EDIT = (
    "        launch_partition(q, k_cache, v_cache, block_tables, seq_lens, out, out, out, out, capacity, 1, True, "
    "config)\n"
    "        return out\n",
    "        fresh = torch.empty_like(q)\n"
    "        launch_partition(q, k_cache, v_cache, block_tables, seq_lens, fresh, fresh, fresh, fresh, capacity, 1,"
    " True,\n"
    "                         config)\n"
    "        return fresh\n",
)
