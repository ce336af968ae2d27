"""The network between separate rentals of one provider (gpu_profiles/catalog/networks.yaml): what a data-parallel
job spread over several small instances (1-, 2- or 4-GPU) exchanges its gradients over.

A DGX-style node talks over NVLink at hundreds of GB/s; two 1-GPU cloud instances talk over the provider's network:
a few GB/s on the big clouds, often no private network at all on GPU marketplaces. The planner times such a job over
this figure (issue 18: a price for separate instances never goes with a one-node time), and leaves it out when the
provider gives no private network or no figure is known.

Each figure is cited; "up to" (burst) figures use the documented baseline when there is one. Units: Gbit/s in the
file, as providers publish them; GB/s (one direction) to the planner.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from planner.inputs import loader
from planner.inputs.check import Reader
from planner.inputs.price_catalog import CATALOG_DIR, NETWORKS_NAME

SCHEMA = "trainplan.networks/1"
NETWORKS_PATH = CATALOG_DIR / NETWORKS_NAME
NETWORKS_FILE = loader.FileKind("instance network table (YAML)", "yaml", 1 * loader.MIB)
GBIT_TO_GBYTE = 1 / 8
MAX_GBIT_PER_S = 10_000.0


@dataclass(frozen=True)
class InstanceNetwork:
    pattern: str             # instance-type pattern (shell pattern, case-insensitive)
    gbit_per_s: float        # what the planner uses: the baseline when the published figure is a burst
    source: str
    burst: bool = False      # the published figure is "up to" (a burst the instance cannot hold)


@dataclass(frozen=True)
class ProviderNetwork:
    private_network: bool | None          # None: not known
    default_gbit_per_s: float | None
    default_source: str
    why: str                              # why there is no private network (or what is unknown)
    instances: tuple[InstanceNetwork, ...]


@dataclass(frozen=True)
class Link:
    """The answer for one rental: GB/s between two of its instances, or None with why."""

    gb_per_s: float | None
    source: str


@dataclass(frozen=True)
class NetworkTable:
    providers: Mapping[str, ProviderNetwork]
    path: str

    def knows(self, provider: str) -> bool:
        return provider.lower() in self.providers

    def private_network(self, provider: str) -> bool | None:
        """False when the provider has no private network between rentals; None when not known."""
        p = self.providers.get(provider.lower())
        return p.private_network if p else None

    def link(self, provider: str, instance: str) -> Link:
        """The one-direction bandwidth between two `instance`s of `provider` in one region, GB/s."""
        p = self.providers.get(provider.lower())
        if p is None:
            return Link(None, f"no network figure for provider {provider} in {Path(self.path).name}")
        if p.private_network is False:
            return Link(None, f"{provider} has no private network between instances: {p.why}")
        for rule in p.instances:
            if fnmatch.fnmatchcase(instance.lower(), rule.pattern.lower()):
                return Link(rule.gbit_per_s * GBIT_TO_GBYTE,
                            f"{provider} {instance}: {rule.gbit_per_s:g} Gbit/s"
                            + (" (baseline of a burst figure)" if rule.burst else "") + f" ({rule.source})")
        if p.default_gbit_per_s is not None:
            return Link(p.default_gbit_per_s * GBIT_TO_GBYTE,
                        f"{provider}: {p.default_gbit_per_s:g} Gbit/s ({p.default_source})")
        return Link(None, f"no network figure for {provider} {instance}" + (f": {p.why}" if p.why else ""))


EMPTY = NetworkTable(providers={}, path=str(NETWORKS_PATH))


def load_networks(path: str | Path = NETWORKS_PATH) -> NetworkTable:
    """Read and check the table; InputError names the file and field of a bad value."""
    source = str(path)
    r = Reader(loader.load_file(path, NETWORKS_FILE), source)
    r.reject_unknown(("schema", "retrieved", "providers"))
    if r.raw("schema") != SCHEMA:
        raise r.fail("schema", r.raw("schema"), SCHEMA)
    providers: dict[str, ProviderNetwork] = {}
    sub = r.sub("providers")
    for name, entry in (sub.data.items() if sub is not None else ()):
        p = Reader(entry, source, f"providers.{name}")
        p.reject_unknown(("private_network", "default_gbit_per_s", "source", "why", "instances"))
        instances = []
        inst = p.sub("instances")
        for pattern, figures in (inst.data.items() if inst is not None else ()):
            q = Reader(figures, source, f"providers.{name}.instances.{pattern}")
            q.reject_unknown(("gbit_per_s", "burst", "baseline_gbit_per_s", "source"))
            burst = q.boolean("burst", False)
            figure = q.number("gbit_per_s", minimum=0, exclusive_min=True, maximum=MAX_GBIT_PER_S)
            baseline = q.number("baseline_gbit_per_s", None, minimum=0, exclusive_min=True, maximum=figure)
            if burst and baseline is None:
                raise q.fail("baseline_gbit_per_s", None, "the sustained figure of a burst ('up to') bandwidth "
                             "(a training run outlasts the burst)")
            instances.append(InstanceNetwork(pattern=str(pattern), gbit_per_s=baseline if baseline else figure,
                                             source=q.string("source"), burst=burst and baseline is not None))
        private = p.raw("private_network", None)
        if private is not None and not isinstance(private, bool):
            raise p.fail("private_network", private, "true, false, or null (not known)")
        if private is False and not p.has("why"):
            raise p.fail("why", None, "the provider's words saying it has no private network")
        providers[str(name).lower()] = ProviderNetwork(
            private_network=private,
            default_gbit_per_s=p.number("default_gbit_per_s", None, minimum=0, exclusive_min=True,
                                        maximum=MAX_GBIT_PER_S),
            default_source=p.string("source", ""), why=p.string("why", ""), instances=tuple(instances))
    return NetworkTable(providers=providers, path=source)
