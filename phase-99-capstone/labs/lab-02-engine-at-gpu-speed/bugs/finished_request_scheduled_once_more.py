"""A request whose last token is already on its way is scheduled once more.

Its final token is sampled by step N, read only after step N+1 is launched; scheduling it in N+1
computes a token that is thrown away when the output arrives, and takes a slot (sometimes a new block)
for it.
"""

CAUGHT_BY = ["test_prefix_cache_hits_as_predicted"]

EDIT = (
    "        if request.num_output_placeholders and \\\n"
    "                len(request.output_token_ids) + request.num_output_placeholders >= request.max_new_tokens:\n"
    "            return 0\n",
    "",
)
