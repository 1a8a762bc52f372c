"""The runner refuses the reference backend only for a model that is both off the CPU and not float32.

A float64 model on the CPU passes; its numpy views then hold float64 while the references assume
float32. Symptom: no ValueError for a float64 model on backend='reference'.
"""

CAUGHT_BY = ["test_engine_settings_their_defaults_and_bad_values"]

SOURCE = "_runner.py"  # the given model runner

EDIT = (
    "        if self.backend == \"reference\" and (self.device.type != \"cpu\" or self.dtype != torch.float32):\n",
    "        if self.backend == \"reference\" and (self.device.type != \"cpu\" and self.dtype != torch.float32):\n",
)
