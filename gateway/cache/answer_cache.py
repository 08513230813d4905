"""The answer cache: finding a request's questions (one batched read) and keeping what was paid for.

``find`` looks every question up under each distinct deployment identity of the requested group
(before routing nobody knows which deployment will answer; a hit from any of them counts and
carries the deployment and model that answered it), together with each identity's newest answering
model version, all in one ``bytes_get_many``. An entry of another version than the newest seen is a
miss and is retired (the alias moved: ``jev-latest`` is now answered by a newer dated model).

``keep`` stores the answers a routed call paid for under the deployment that actually answered
(``ctx.tried``, one per chunk; a hedged or fallback answer under its winner), each with its share of
the call's cost and tokens; refusals and errors are never stored. The answering version becomes the
identity's newest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gateway.cache.keys import deployment_identity, entry_key, version_key
from gateway.cache.settings import CacheSettings, GroupCache, group_cache
from gateway.cache.store import DEPLOYMENT, VERSION, AnswerStore, answer_of, decode_entry, encode_entry, usage_share
from gateway.upstream.split import chunk_sizes
from providers.base import Deployment
from translators.ir import Answer, DecisionRequest, DecisionResult

MIN_VERSION_TTL_S = 7 * 86_400.0  # the newest version outlives every entry it judges


@dataclass(slots=True)
class Hit:
    answer: Answer  # already the asking question's (its id)
    entry: list  # the decoded entry (version, cost, usage...)
    deployment: Deployment  # the deployment of the group it is credited to


@dataclass(slots=True)
class Found:
    hits: dict[int, Hit] = field(default_factory=dict)  # question index -> hit
    misses: list[int] = field(default_factory=list)  # question indexes, in request order
    retired: list[str] = field(default_factory=list)  # keys of entries of an older version


Identities = tuple[tuple[str, tuple[Deployment, ...]], ...]  # (identity, its deployments), in group order


@dataclass(frozen=True, slots=True)
class Group:
    deployments: tuple[Deployment, ...]  # the registry's tuple this was built from (a reload makes another)
    identities: Identities
    policy: GroupCache


class AnswerCache:
    def __init__(self, settings: CacheSettings, store: AnswerStore):
        self.settings = settings
        self.store = store
        self.namespace = settings.namespace
        self._identities: dict[str, str] = {}  # deployment id -> identity
        self._groups: dict[str, Group] = {}  # configured groups (ad-hoc models are not kept)

    @classmethod
    def build(cls, settings: CacheSettings) -> AnswerCache:
        """The cache of a gateway, its store from the settings."""
        return cls(settings, AnswerStore.from_settings(settings))

    def identity(self, dep: Deployment) -> str:
        if not dep.id:
            return deployment_identity(dep)
        found = self._identities.get(dep.id)
        if found is None:
            found = self._identities[dep.id] = deployment_identity(dep)
        return found

    def group(self, name: str, registry) -> Group:
        """The group's distinct deployment identities and cache settings, as the registry has it now."""
        deps = registry.require_group(name)
        known = self._groups.get(name)
        if known is not None and known.deployments is deps:
            return known
        by_identity: dict[str, list[Deployment]] = {}
        for dep in deps:
            by_identity.setdefault(self.identity(dep), []).append(dep)
        built = Group(deps, tuple((identity, tuple(members)) for identity, members in by_identity.items()),
                      group_cache(deps))
        if name in registry.names:
            self._groups[name] = built
        return built

    # ---- lookup ---------------------------------------------------------------------------------

    async def find(self, req: DecisionRequest, input_sha: bytes, question_shas: Sequence[bytes],
                   identities: Identities) -> Found:
        namespace, n = self.namespace, len(question_shas)
        keys = [entry_key(namespace, identity, input_sha, sha) for identity, _ in identities for sha in question_shas]
        keys += [version_key(namespace, identity) for identity, _ in identities]
        values = await self.store.get_many(keys)
        newest = [raw.decode("utf-8", "replace") if raw is not None else None for raw in values[len(identities) * n:]]
        found = Found()
        for i, question in enumerate(req.questions):
            for j, (_, deps) in enumerate(identities):
                raw = values[j * n + i]
                if raw is None:
                    continue
                entry = decode_entry(raw)
                answer = answer_of(entry, question) if entry is not None else None
                if answer is None or (newest[j] is not None and entry[VERSION] != newest[j]):  # type: ignore[index]
                    found.retired.append(keys[j * n + i])
                    continue
                found.hits[i] = Hit(answer, entry, _credited(deps, entry))  # type: ignore[arg-type]
                break
            else:
                found.misses.append(i)
        return found

    # ---- store ----------------------------------------------------------------------------------

    async def keep(self, asked: DecisionRequest, result: DecisionResult, tried: Sequence[Deployment],
                   cost: float | None, input_sha: bytes, shas: dict[str, bytes], ttl_s: float,
                   retired: Sequence[str] = ()) -> int:
        """Store the paid answers of ``asked`` (the questions that went upstream), chunk by chunk
        under the deployment that answered each; return how many entries were written."""
        questions = asked.questions
        paid = len(questions)
        items: list[tuple[str, bytes, float]] = []
        if tried and paid:
            answering = self.identity(tried[0])
            version = result.model
            by_id = {answer.question_id: answer for answer in result.answers}
            cost_share = cost / paid if cost is not None else None
            for index, (question, dep) in enumerate(zip(questions, chunk_owners(paid, tried), strict=True)):
                answer = by_id.get(question.id)
                # The result names the first chunk's model only: a chunk answered by another
                # deployment (a retry elsewhere) has no known version and is not kept.
                if answer is None or answer.kind == "refusal" or self.identity(dep) != answering:
                    continue
                items.append((entry_key(self.namespace, answering, input_sha, shas[question.id]),
                              encode_entry(version, dep.id, answer, cost_share, usage_share(result.usage, paid, index)),
                              ttl_s))
            items.append((version_key(self.namespace, answering), version.encode(), max(MIN_VERSION_TTL_S, ttl_s,
                                                                                        self.settings.ttl_s)))
        written = len(items) - 1 if items else 0
        stored = {key for key, _, _ in items}
        items += [(key, b"", 0.0) for key in retired if key not in stored]
        await self.store.put_many(items)
        return written

    async def retire(self, keys: Sequence[str]) -> None:
        await self.store.put_many([(key, b"", 0.0) for key in keys])

    async def close(self) -> None:
        await self.store.close()


def _credited(deps: tuple[Deployment, ...], entry: list) -> Deployment:
    """The deployment an entry is credited to: the one that answered it, when it is in the group."""
    answered = entry[DEPLOYMENT]
    return next((dep for dep in deps if dep.id and dep.id == answered), deps[0])


def chunk_owners(questions: int, tried: Sequence[Deployment]) -> list[Deployment]:
    """The deployment that answered each question of a routed request: the router splits a request
    into ``len(tried)`` consecutive chunks (gateway/upstream/split.py ``chunk_sizes``), and ``tried`` has the
    answering deployment of each."""
    owners: list[Deployment] = []
    for dep, size in zip(tried, chunk_sizes(questions, len(tried)), strict=True):
        owners.extend([dep] * size)
    return owners
