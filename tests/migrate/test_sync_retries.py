"""Which rsync failures `migrate sync` tries again: a failed connection (ssh's 255, or 12 when rsync reads the
closed pipe before it reaps ssh), never a failure of the copy itself."""

from __future__ import annotations

import pytest

from gpufleet.migrate import sync


@pytest.mark.parametrize("status, tries", [(255, 3), (12, 3), (23, 1), (11, 1), (0, 1)])
def test_only_a_failed_connection_is_tried_again(status, tries, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sync, "RETRY_PAUSE_S", 0)
    calls = tmp_path / "calls"
    done = sync._rsync_with_retries(["sh", "-c", f"echo x >> {calls}; exit {status}"], "i-0abc", retries=2)
    assert done.returncode == status
    assert len(calls.read_text().split()) == tries
    retried = capsys.readouterr().out.splitlines()
    assert len(retried) == tries - 1
    assert all(line.startswith("sync: ssh to i-0abc failed (") and f"rsync exited {status})" in line
               for line in retried)
