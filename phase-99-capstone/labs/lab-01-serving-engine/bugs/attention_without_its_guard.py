"""The course's attention no longer checks that it runs inside the runner.

``model.generate`` on a model the engine took over then reaches ``meta.kv_caches`` with no
metadata. Symptom: AttributeError: 'NoneType' object has no attribute 'kv_caches', instead of a
RuntimeError saying to switch the model back to 'sdpa'.
"""

CAUGHT_BY = ["test_the_engines_model_refuses_a_generate_of_its_own"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "    if not isinstance(meta, AttentionMetadata):\n",
    "    if False:\n",
)
