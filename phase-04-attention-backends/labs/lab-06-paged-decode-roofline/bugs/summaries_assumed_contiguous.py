"""The summaries handed to the reduce as they are, which then reads them as if contiguous.

The reduce finds split ``s`` of (sequence ``b``, head ``h``) at ``(b * num_heads + h) * max_splits
+ s``, which holds only for contiguous summaries. ``split_summaries`` returns contiguous ones, but
a caller may merge views: the first ``max_splits`` splits of scratch buffers sized for the most
splits a step can have. Symptom: right for contiguous summaries; with such views every (sequence,
head) after the first merges another row's splits, or the scratch past the cut.
"""

CAUGHT_BY = ["test_merge_splits_summaries_as_views"]

EDIT = (
    "            m.contiguous(), denom.contiguous(), acc.contiguous(), seq_lens.contiguous(), out,\n",
    "            m, denom, acc, seq_lens.contiguous(), out,\n",
)
