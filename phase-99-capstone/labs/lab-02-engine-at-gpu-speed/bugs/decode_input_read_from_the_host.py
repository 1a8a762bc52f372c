"""No decode input is gathered on the device: every input id comes from the host's token table.

The token a decode must read was sampled by the previous step and never written on the host side of the
row: the model is fed whatever the row's token table held at that position.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_tokens_match_generate",
             "test_step_inputs_match_brute_force"]

EDIT = (
    "    pending = np.flatnonzero(computed + num_scheduled > batch.num_tokens[:n])\n",
    "    pending = np.flatnonzero(np.zeros(n, dtype=bool))  # nothing taken from the device\n",
)
