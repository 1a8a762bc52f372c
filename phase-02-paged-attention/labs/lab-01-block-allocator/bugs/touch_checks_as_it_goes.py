"""touch checks each block for the null block as it goes, so the blocks before it are touched.

The ValueError comes, but touch([free block, null block, held block]) has already taken the free
block out of the queue and counted a holder that will never free it. Symptom: after a refused
touch, a block that was free is out of the queue with ref_cnt 1.
"""

CAUGHT_BY = ["test_a_refusal_mid_list_changes_nothing"]

EDITS = [
    ('        if any(block.is_null for block in blocks):\n'
     '            raise ValueError("blocks: the null block (block 0) cannot be touched, it holds no tokens")\n'
     '        for block in blocks:\n',
     '        for block in blocks:\n'
     '            if block.is_null:  # checked as it goes: the blocks before it are touched already\n'
     '                raise ValueError("blocks: the null block (block 0) cannot be touched, it holds no tokens")\n'),
]
