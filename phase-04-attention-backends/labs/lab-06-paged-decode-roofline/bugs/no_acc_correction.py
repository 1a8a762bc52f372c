"""The accumulator is not rescaled when the running max grows: acc += p . v with p relative to
the new max, acc still relative to the old one (the denominator is rescaled).

Symptom: right while the first tile holds the largest score, wrong as soon as a later tile
raises the max.
"""

CAUGHT_BY = ["test_one_split_matches_reference", "test_gqa_grouping"]

EDITS = [
    (
        "            acc = acc * correction[:, None] + tl.dot(p, v, input_precision=\"ieee\")\n",
        "            acc = acc + tl.dot(p, v, input_precision=\"ieee\")  # no correction\n",
    ),
    (
        "            acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)\n",
        "            acc = acc + tl.dot(p.to(v.dtype), v)  # no correction\n",
    ),
]
