"""The gpufleet Ansible collection (`gpufleet.day2`), installed with the Python package as `gpufleet/ansible`.

This file only makes the folder a package, so the wheel carries the collection; Ansible never imports it.
`gpufleet inventory` puts this folder on Ansible's collection path (`collections/ansible_collections/gpufleet/day2`).
"""
