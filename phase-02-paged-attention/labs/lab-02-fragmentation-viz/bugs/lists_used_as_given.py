"""_check_stream uses the stream as given, without making it an array first.

A stream given as a list of (arrival, prompt_len, output_len) tuples has no ``.size`` nor
``[:, 1]``. Symptom: AttributeError for a list, right answers for arrays.
"""

CAUGHT_BY = ["test_takes_lists"]

SOURCE = "_stream.py"  # the given checks

EDIT = (
    "    stream = np.asarray(stream)\n",
    "",
)
