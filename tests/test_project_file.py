"""Pulumi.yaml must load in the Pulumi CLI, which validates it against its project schema before running anything."""

from pathlib import Path

from tests.yaml_reader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
# The config types a project may declare (pulumi/pulumi sdk/go/common/workspace/project.json, simpleConfigType).
DECLARABLE_CONFIG_TYPES = {"string", "integer", "boolean", "array"}


def test_project_file_names_the_program_and_stack_folder():
    project = read_yaml((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "gpufleet"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": ".venv"}}
    assert project["stackConfigDir"] == "stacks" and (ROOT / "stacks").is_dir()


def test_project_config_declares_only_types_the_cli_accepts():
    config = read_yaml((ROOT / "Pulumi.yaml").read_text()).get("config") or {}
    for key, declaration in config.items():
        if isinstance(declaration, dict):
            assert declaration.get("type") in DECLARABLE_CONFIG_TYPES, f"{key}: the Pulumi CLI refuses this type"


def test_every_stack_file_sets_the_cluster_spec():
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        config = read_yaml(path.read_text())["config"]
        assert isinstance(config["gpufleet:cluster"], dict), path.name
