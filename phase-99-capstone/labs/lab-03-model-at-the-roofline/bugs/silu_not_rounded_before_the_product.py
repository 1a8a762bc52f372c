"""The SiLU of the gate multiplied by ``up`` in float32, not rounded to the input's dtype first.

transformers computes ``act_fn(gate) * up``: the activation is a tensor of the model's dtype before the
product. Right in float32; in float16 or bfloat16 about a quarter of the outputs land one step away
from the model's.
"""

CAUGHT_BY = ["test_float16_rounds_where_the_model_rounds"]

EDIT = (
    "    act = (g / (1.0 + tl.exp(-g))).to(gate.dtype).to(tl.float32)\n",
    "    act = g / (1.0 + tl.exp(-g))\n",
)
