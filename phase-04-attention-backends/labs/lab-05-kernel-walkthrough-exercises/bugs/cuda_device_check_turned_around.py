"""qk_scores_cuda's device check is turned around: it refuses GPU tensors and lets CPU ones through.

On a machine without a GPU a CPU tensor goes on to the CUDA build, which fails deep inside torch's
extension machinery. Symptom: an error from load_inline instead of "qk_scores_cuda needs CUDA
tensors".
"""

CAUGHT_BY = ["test_qk_cuda_checks_its_inputs_first"]

EDIT = (
    "    if q.device.type != \"cuda\":\n",
    "    if q.device.type == \"cuda\":\n",
)
