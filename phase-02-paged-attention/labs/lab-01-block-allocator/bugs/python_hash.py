"""The key is Python's built-in hash() of (parent, tokens), as the book writes it.

Python salts the hash of str and bytes with a per-process random seed (unless PYTHONHASHSEED is
set), and before Python 3.12 hash(None) is derived from an address. The keys are consistent inside
one process, so every single-process test passes, but another process (a restarted engine, a
second worker, KV-cache events sent to a router) computes other keys for the same tokens.
Symptom: a child process with another PYTHONHASHSEED disagrees on every key.
"""

CAUGHT_BY = ["test_hash_is_the_same_in_every_process"]

EDIT = (
    "    return hashlib.sha256(data).digest()\n",
    "    return hash((parent, tuple(tokens))).to_bytes(32, \"little\", signed=True)  # salted per process\n",
)
