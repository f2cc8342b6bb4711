"""Manifests as `capture` would write them, for the fast tests of match (no venv, no nvidia-smi)."""

from __future__ import annotations

from gpufleet.migrate.manifest import Frameworks, Gpu, Manifest, Package, PythonEnv

GPUS = {
    "a100-40gb": Gpu(name="NVIDIA A100-SXM4-40GB", memory_mib=40960, model="A100", architecture="ampere"),
    "t4": Gpu(name="Tesla T4", memory_mib=15360, model="T4", architecture="turing"),
    "rtx3090": Gpu(name="NVIDIA GeForce RTX 3090", memory_mib=24576, model=None, architecture="ampere"),
}


def manifest(gpu: str | None, cuda: str | None = "12.1", count: int = 1) -> Manifest:
    torch = Package(name="torch", version="2.1.0", local=f"cu{cuda.replace('.', '')}" if cuda else None)
    return Manifest(created="2026-12-04T00:00:00Z",
                    python=PythonEnv(executable="/venv/bin/python", version="3.11.7", implementation="cpython",
                                     platform="linux", packages=(torch,)),
                    frameworks=Frameworks(torch="2.1.0", cuda=cuda, cuda_source=f"torch 2.1.0+{torch.local}"),
                    gpus=(GPUS[gpu],) * count if gpu else ())
