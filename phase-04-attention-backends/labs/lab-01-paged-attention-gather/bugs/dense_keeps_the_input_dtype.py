"""dense_attention computes in the inputs' own dtype: float32 inputs give a float32 answer.

The conversion to float64 at the top is dropped, so float32 (or float16) q, k, v are multiplied,
exponentiated and summed in their own precision, and a list of floats has no ``@`` at all. The
docstring promises a float64 result whatever is given. Symptom: a float32 result, off from the
float64 truth by ~1e-7, or a TypeError on lists.
"""

CAUGHT_BY = ["test_dense_attention_returns_float64_for_any_input"]

EDIT = (
    "    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))\n",
    "    q, k, v = (np.asarray(x) for x in (q, k, v))  # the inputs' own dtype\n",
)
