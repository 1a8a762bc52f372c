"""q handed to the kernel as it is, which then indexes it as if it were contiguous.

The kernel finds query head ``h`` of sequence ``b`` at ``(b * num_heads + h) * head_dim``, which
holds only for a contiguous ``q``. An engine's ``q`` is often a view: the first ``num_heads`` heads
of the fused ``qkv`` projection, whose rows are ``num_heads + 2 * num_kv_heads`` heads apart.
Symptom: right for a contiguous q; with a slice of qkv every sequence after the first reads
another row's queries, or its keys and values.
"""

CAUGHT_BY = ["test_memory_layouts_engines_pass"]

EDITS = [
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          out, out, out, out,",
        "        _launch_partition(q, k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),\n"
        "                          out, out, out, out,",
    ),
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          q, m, denom, acc,",
        "        _launch_partition(q, k_cache, v_cache, block_tables.contiguous(), seq_lens.contiguous(),\n"
        "                          q, m, denom, acc,",
    ),
]
