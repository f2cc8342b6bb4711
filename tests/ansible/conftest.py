"""ansible-lint (about half a minute on two cores) and the playbooks run over local stand-in nodes (about two
minutes) run only when asked (`-m ansible_slow`, as `.ci/run` does; tests/conftest.py skips them otherwise;
`.ci/lint` runs ansible-lint too)."""
