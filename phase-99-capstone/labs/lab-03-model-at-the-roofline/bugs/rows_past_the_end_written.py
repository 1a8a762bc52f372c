"""The norm's row mask forgotten: a program of ``ROWS`` rows reads and writes all of them.

On a GPU (one row per program) the grid covers the rows exactly and nothing shows; in the
interpreter a program of 64 rows for 37 writes 27 rows past the end of ``out`` (and of the residual).
"""

# On a GPU rows_per_program gives 1: every program's one row is a real row.
SHOWS_ON = ["cpu"]

CAUGHT_BY = ["test_rms_norm_matches_float64"]

EDIT = (
    "    cols = tl.arange(0, BLOCK)\n    row_ok = rows < num_rows\n",
    "    cols = tl.arange(0, BLOCK)\n    row_ok = rows >= 0  # every row of the program\n",
)
