"""token_owner counts the rounds before a token as ``t // (stripe * world_size)``.

Equal on paper to ``(t // stripe) // world_size``, but it multiplies the stripe by the number of
ranks first, and token_owner's arguments need not keep that product in int64 (only
local_seq_lens, which divides by a round, checks it). Symptom: with a stripe of 2**62 on 2 ranks,
numpy's OverflowError for Python integers, and for numpy integers a product that wraps around to a
negative number, so every local position past the first stripe is wrong.
"""

CAUGHT_BY = ["test_layout_takes_counts_up_to_the_largest_int64"]

EDIT = (
    "    local_positions = (stripe_index // world_size) * stripe + positions % stripe\n",
    "    local_positions = positions // (stripe * world_size) * stripe + positions % stripe\n",
)
