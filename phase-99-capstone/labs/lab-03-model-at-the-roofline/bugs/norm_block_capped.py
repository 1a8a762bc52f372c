"""The RMSNorm's block of columns capped at SILU_BLOCK (1024), as the SiLU kernel's is.

The SiLU kernel tiles its columns over a second grid axis; the norm holds a whole row in one
program, so a capped block never reads, counts or writes the columns past 1024: wrong for every
hidden size past it (4096 for a 7B model), right for the small ones.
"""

CAUGHT_BY = ["test_kernels_at_the_api_limits"]

EDIT = (
    "    block = triton.next_power_of_2(hidden)\n    res = x if residual is None",
    "    block = min(SILU_BLOCK, triton.next_power_of_2(hidden))\n    res = x if residual is None",
)
