"""The region nearest to here: median TCP-connect time to each region's public endpoint.

Endpoints, one per region, served from inside that region:
- AWS: the regional EC2 API, ec2.<region>.amazonaws.com:443;
- GCP: the regional Artifact Registry host, <region>-docker.pkg.dev:443 (the host Ultralytics' GCPRegions pings);
- Azure: the regional Azure ML API, <region>.api.azureml.ms:443 (UNVERIFIED that every region serves it; a region
  that does not answer is reported as unreachable, never chosen).
A TCP connect is one round trip and needs no credentials; several are taken and the median kept, so that one slow
handshake does not decide. The prober is a parameter: tests pass their own and never leave the machine.
"""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

ENDPOINTS = {"aws": "ec2.{region}.amazonaws.com", "gcp": "{region}-docker.pkg.dev",
             "azure": "{region}.api.azureml.ms"}
PORT = 443
ATTEMPTS = 5
TIMEOUT_S = 2.0
WORKERS = 16

# (host, port, timeout) -> seconds for one TCP connect, or None when it failed.
Prober = Callable[[str, int, float], "float | None"]


def tcp_connect_time(host: str, port: int, timeout: float) -> float | None:
    start = time.perf_counter()
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return time.perf_counter() - start
    except OSError:
        return None


@dataclass(frozen=True)
class Latency:
    region: str
    endpoint: str
    median_ms: float | None  # None: no connect succeeded


def measure(cloud: str, regions: list[str], prober: Prober = tcp_connect_time,
            attempts: int = ATTEMPTS) -> list[Latency]:
    """Each region's median connect time, fastest first; unreachable regions last. Regions are measured at once
    (a blackholed network would otherwise cost every region's timeout in turn), and a region whose first connect
    fails is not tried again."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = list(pool.map(lambda region: _measure_one(cloud, region, prober, attempts), regions))
    return sorted(results, key=lambda r: (r.median_ms is None, r.median_ms or 0.0, r.region))


def _measure_one(cloud: str, region: str, prober: Prober, attempts: int) -> Latency:
    host = ENDPOINTS[cloud].format(region=region)
    times: list[float] = []
    for _ in range(attempts):
        seconds = prober(host, PORT, TIMEOUT_S)
        if seconds is None and not times:
            break
        if seconds is not None:
            times.append(seconds)
    return Latency(region, f"{host}:{PORT}", statistics.median(times) * 1000 if times else None)
