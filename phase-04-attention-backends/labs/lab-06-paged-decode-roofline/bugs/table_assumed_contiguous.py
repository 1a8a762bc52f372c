"""block_tables handed to the kernel as it is, which then reads row ``b`` at ``b * max_blocks``.

That is row ``b`` only in a contiguous table. A table cut from a wider one (``wide[:, :max_blocks]``,
an engine's table sized for its longest allowed sequence) or taken every other row has a longer
row stride. Symptom: right for a contiguous table; with a view, every sequence after the first
reads its block ids out of another row, or out of the columns past the cut.
"""

CAUGHT_BY = ["test_memory_layouts_engines_pass"]

EDITS = [
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          out, out, out, out,",
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables, seq_lens.contiguous(),\n"
        "                          out, out, out, out,",
    ),
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          q, m, denom, acc,",
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables, seq_lens.contiguous(),\n"
        "                          q, m, denom, acc,",
    ),
]
