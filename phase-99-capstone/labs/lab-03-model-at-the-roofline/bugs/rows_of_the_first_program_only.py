"""Every program of the rotary kernel handles tokens ``0 .. ROWS - 1``: the program's offset forgotten.

In the interpreter one program takes up to 64 tokens, so a batch of 64 or fewer comes out right; a
longer one (a prefill chunk) leaves its later tokens' queries and cache rows unwritten. On a GPU
(one token per program) every program rewrites token 0.
"""

CAUGHT_BY = ["test_rotary_and_cache_contract"]

EDIT = (
    "    tokens = tl.program_id(0) * ROWS + tl.arange(0, ROWS)\n    token_ok = tokens < num_tokens\n",
    "    tokens = tl.arange(0, ROWS)\n    token_ok = tokens < num_tokens\n",
)
