"""Lab 02-05, given: a request as the KV-cache manager sees it (vLLM v0.22.1's ``vllm/v1/request.py``
has more). Written once, here; ``starter.py`` and ``solution.py`` both take it as ``Request``."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class Request:
    """What the manager needs to know about a request.

    ``num_computed_tokens`` belongs to the scheduler: it counts the tokens whose KV is in the cache
    (or is written by the step being scheduled); the manager reads it and never changes it.
    ``block_hashes`` holds the keys of the request's full blocks. Appending tokens does not update it:
    the manager does, through ``KVCacheManagerBase._update_block_hashes``.
    """

    request_id: str
    prompt_token_ids: list[int]
    output_token_ids: list[int] = field(default_factory=list)
    num_computed_tokens: int = 0
    block_hashes: list[bytes] = field(default_factory=list)

    @property
    def all_token_ids(self) -> list[int]:
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_token_ids) + len(self.output_token_ids)

    def append_output_token_ids(self, token_ids: list[int]) -> None:
        self.output_token_ids.extend(token_ids)
