"""The end-to-end migration tests (real venvs, a real sshd on loopback) run only when asked (`-m migrate`, as
`.ci/run` does; tests/conftest.py skips them otherwise): they build several virtual environments and copy files over
ssh, seconds each on 2 cores."""
