"""The key hashes the tokens written as text, one after the other, with no separator.

"1" + "23" and "12" + "3" are the same string, so the blocks [1, 23] and [12, 3] get one key: a
request whose block holds the second finds the first's keys and values in the cache and attends
over another user's tokens. Symptom: two different token lists hash to the same key.
"""

CAUGHT_BY = ["test_hash_never_confuses_two_token_lists"]

EDIT = (
    '    data = parent + b"".join(t.to_bytes(8, "little") for t in tokens)\n',
    '    data = parent + "".join(str(t) for t in tokens).encode()  # the tokens as text, back to back\n',
)
