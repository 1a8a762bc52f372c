"""_check_stream keeps the stream's own integer dtype instead of widening it to int64.

A uint8 stream sums prompt_len + output_len in uint8: 200 + 100 is 44, which passes the max_len
check. Symptom: no ValueError for a request of 300 tokens given as uint8.
"""

CAUGHT_BY = ["test_each_bad_argument_is_named"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    stream = stream.astype(np.int64)\n",
    "",
)
