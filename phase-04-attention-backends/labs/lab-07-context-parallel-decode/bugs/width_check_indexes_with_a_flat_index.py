"""The given table-width check reads argmax's flat index as an index of the positions' own shape.

``np.argmax`` of an N-D array numbers its entries as if it were flat; used as ``local_blocks[i]``
on positions of shape [4, 5], it picks a row, or runs past the first axis. Symptom: positions of
more than one axis and a table too narrow for them give numpy's IndexError (or a TypeError), not
the ValueError that names the table and the local block a token needs.
"""

CAUGHT_BY = ["test_layout_rejects_bad_input"]

SOURCE = "_checks.py"

EDIT = (
    "        i = np.unravel_index(np.argmax(local_blocks), local_blocks.shape)  # positions may have any shape\n",
    "        i = int(np.argmax(local_blocks))\n",
)
