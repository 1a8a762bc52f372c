"""Reads whole blocks and masks only the tail's scores: the tail's values still get multiplied.

The scores past seq_len get -inf (weight 0), the way a GPU kernel that loads full tiles might
mask them.

The weights are right, but the tail's values still enter the weighted sum, multiplied by 0. A
huge finite poison times 0 is 0, so the 1e6 poison cannot see this; NaN or inf in the tail
make 0 * NaN = NaN. Real memory past the end usually holds finite garbage, which is why this bug
ships: it turns into NaN only when a stale slot happens to hold NaN or inf. (vLLM's CUDA kernel
reads whole blocks too, and replaces the tail's values by zeros before weighting them, for this
very reason.)
"""

CAUGHT_BY = ["test_partial_tail_block_is_masked", "test_chunked_prefill_write_path"]

EDITS = [
    (
        "    t = np.arange(seq_len)\n",
        "    t = np.arange(-(-seq_len // block_size) * block_size)  # whole blocks, tail included\n",
    ),
    (
        "        weights = np.exp(scores - scores.max())  # max first: exp never overflows\n",
        "        scores = np.where(t < seq_len, scores, -np.inf)  # masks the tail's scores, not its values\n"
        "        weights = np.exp(scores - scores.max())\n",
    ),
]
