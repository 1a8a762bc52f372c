"""The lengths check joins "1-D" and "integers" with ``and``: lengths that fail only one pass.

Float lengths such as [4.0, 2.0] then flow into integer arithmetic and come out as float counts.
Symptom: local_seq_lens of float lengths answers instead of raising a ValueError naming seq_lens.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    '    if array.ndim != 1 or array.dtype.kind not in "iu":\n',
    '    if array.ndim != 1 and array.dtype.kind not in "iu":\n',
)
