"""seq_lens handed to the kernels as it is, which then read sequence ``b``'s length at ``b``.

That is entry ``b`` only in a contiguous ``seq_lens``. An engine's lengths may be a view: this
step's sequences taken every other entry of a persistent batch's buffer, or a column of a wider
table of per-sequence counters. Symptom: right for contiguous lengths; with a view, every
sequence after the first attends to another sequence's length (or to whatever lies between the
entries), reading poison past its own tokens or stopping short of them.
"""

CAUGHT_BY = ["test_seq_lens_and_q_as_other_views"]

EDITS = [
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          out, out, out, out,",
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens,\n"
        "                          out, out, out, out,",
    ),
    (
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), "
        "seq_lens.contiguous(),\n"
        "                          q, m, denom, acc,",
        "        _launch_partition(q.contiguous(), k_cache, v_cache, block_tables.contiguous(), seq_lens,\n"
        "                          q, m, denom, acc,",
    ),
    (
        "            m.contiguous(), denom.contiguous(), acc.contiguous(), seq_lens.contiguous(), out,\n",
        "            m.contiguous(), denom.contiguous(), acc.contiguous(), seq_lens, out,\n",
    ),
]
