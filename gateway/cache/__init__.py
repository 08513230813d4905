"""The per-question answer cache, shared by both wires (issue 11).

- ``settings.py``: ``CacheSettings`` from ``litellm_settings.cache`` / ``cache_params``, ``model_info.cache``
  / ``cache_ttl`` per group, ``metadata.cache`` per key or team.
- ``keys.py``: canonical keys (deployment identity, input with images by content hash, the question in IR form).
- ``store.py``: ``AnswerStore`` (bytes in a ``SharedState``: a bounded LRU in memory, or Redis) and the entry layout.
- ``answer_cache.py``: ``AnswerCache.find`` (one batched lookup over the group's deployments, the
  alias rule) and ``keep`` (the paid answers under the deployment that answered).
- ``steps.py``: the pipeline steps ``cache_lookup`` and ``cache_merge``, the request's controls, the headers.
"""

from gateway.cache.answer_cache import AnswerCache
from gateway.cache.settings import CacheSettings, cache_settings, cache_settings_of
from gateway.cache.steps import CacheOutcome, cache_lookup, cache_merge

__all__ = ["AnswerCache", "CacheOutcome", "CacheSettings", "cache_lookup", "cache_merge", "cache_settings",
           "cache_settings_of"]
