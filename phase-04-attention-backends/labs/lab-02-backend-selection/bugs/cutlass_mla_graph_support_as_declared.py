"""CUTLASS MLA's CUDA-graph support taken from the attribute its builder sets,
``attn_cudagraph_support``, a name the runner never reads.

GPUModelRunner reads ``cudagraph_support``, which CutlassMLAMetadataBuilder inherits as NEVER.
Symptom: full CUDA graphs promised for CUTLASS MLA, where v0.10.1 raises at start-up.
"""

CAUGHT_BY = [
    "test_cudagraph_support_table",
    "test_no_full_graph_for_never",
]

EDIT = (
    '        "CUTLASS_MLA": "NEVER",\n',
    '        "CUTLASS_MLA": "UNIFORM_SINGLE_TOKEN_DECODE",  # BUG: the unread attribute\n',
)
