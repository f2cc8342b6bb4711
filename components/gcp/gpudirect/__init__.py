"""GCP GPUDirect-TCPXO (A3 Mega) delivered with the least trust: where each piece comes from (`sources.py`), when the
node stack can start the transport and what the user must accept for it (`delivery.py`), and the node's part of it
(`node.py`, a `cloud_init.GpuDirectConfig`). GPUDirect-TCPX (A3 High) stays refused: `sources.TCPX_PIECES` says why.
"""
