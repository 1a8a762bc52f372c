"""The key is computed from the block's tokens sorted, so it forgets their order.

A block holds a sequence, not a set: "dog bites man" and "man bites dog" have different keys and
values. Symptom: two blocks whose tokens are the same but in another order share a key.
"""

CAUGHT_BY = ["test_hash_covers_the_tokens_and_the_parent"]

EDIT = (
    '    data = parent + b"".join(t.to_bytes(8, "little") for t in tokens)\n',
    '    data = parent + b"".join(t.to_bytes(8, "little") for t in sorted(tokens))  # order lost\n',
)
