"""Every row that computes one token takes its input from the device, as if it were a decode.

A one-token row is a decode only when its input lies past the tokens its row holds. A prompt's last
token, computed alone at the end of a chunked prefill (or under a budget of one token), is on the host:
gathered from the device instead, it is replaced by whatever the previous step sampled in that row.
"""

CAUGHT_BY = ["test_prepare_inputs_matches_brute_force", "test_sizes_at_the_api_limits"]

EDIT = (
    "    pending = np.flatnonzero(computed + num_scheduled > batch.num_tokens[:n])\n",
    "    pending = np.flatnonzero(num_scheduled == 1)  # every one-token row\n",
)
