"""jitwarm's cache and JIT monitor counters for prometheus_client.

    from prometheus_client import REGISTRY
    import jitwarm.prometheus
    REGISTRY.register(jitwarm.prometheus.collector(rt))

The collector parses ``rt.metrics_text()`` at each scrape, so the text the
runtime renders (docs/operators.md, "Metrics") is the one definition of the
series; prometheus_client is imported here only, when a collector is made.
"""

from typing import Any, Iterator


def _parser() -> Any:
    try:
        from prometheus_client import parser
    except ImportError as e:
        raise ImportError(
            "jitwarm.prometheus needs prometheus_client (pip install "
            "prometheus-client, or the python3-prometheus-client package)") from e
    return parser


class JitwarmCollector:
    """A prometheus_client collector of one runtime's metrics."""

    def __init__(self, runtime: Any) -> None:
        if not callable(getattr(runtime, "metrics_text", None)):
            raise TypeError("collector() takes a jitwarm.Runtime, got "
                            f"{type(runtime).__name__}")
        self._runtime = runtime
        self._parser = _parser()

    def collect(self) -> Iterator[Any]:
        yield from self._parser.text_string_to_metric_families(self._runtime.metrics_text())


def collector(runtime: Any) -> JitwarmCollector:
    """A collector for ``prometheus_client.REGISTRY.register``; raises
    ImportError naming the package when prometheus_client is missing."""
    return JitwarmCollector(runtime)
