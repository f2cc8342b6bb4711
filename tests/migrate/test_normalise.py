"""Package normalisation, the CUDA tables and nvidia-smi parsing (fast, no subprocess)."""

from __future__ import annotations

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.migrate.compat import cuda_from_local_label, cuda_problem, tensorflow_build
from gpufleet.migrate.gpus import parse_gpu_csv
from gpufleet.migrate.packages import applies, normalise
from tests.migrate.fixtures import SMI_OUTPUTS

LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}


def test_local_versions_are_stripped_and_sent_to_pytorchs_index():
    (torch, vision) = normalise([{"name": "torch", "version": "1.12.1+cu113", "direct_url": None},
                                 {"name": "torchvision", "version": "0.13.1+cpu", "direct_url": None}])
    assert (torch.version, torch.index_url, torch.requirement) == (
        "1.12.1", "https://download.pytorch.org/whl/cu113", "torch==1.12.1")
    assert vision.index_url == "https://download.pytorch.org/whl/cpu"


def test_other_local_labels_are_stripped_without_an_index():
    (package,) = normalise([{"name": "Foo_Bar", "version": "1.0+ubuntu1", "direct_url": None}])
    assert (package.name, package.version, package.local, package.index_url) == ("foo-bar", "1.0", "ubuntu1", None)


def test_editable_and_file_entries(tmp_path):
    archive = tmp_path / "lib-1.0-py3-none-any.whl"
    archive.write_bytes(b"")
    editable, lib, gone = normalise([
        {"name": "app", "version": "0.1", "direct_url": {"url": f"file://{tmp_path}/app", "dir_info": {"editable": True}}},
        {"name": "lib", "version": "1.0", "direct_url": {"url": f"file://{archive}", "archive_info": {}}},
        {"name": "mkl", "version": "2023.1", "direct_url": {"url": "file:///croot/mkl_1681/work", "dir_info": {}}},
    ])
    assert (editable.source, editable.requirement) == ("editable", "-e ./src/app")  # the folder's name
    assert (lib.source, lib.requirement) == ("file", f"./src/{archive.name}")
    assert (gone.source, gone.requirement) == ("index", "mkl==2023.1")
    assert "no longer exists" in gone.note


def test_vcs_and_remote_archive_installs_keep_their_url():
    vcs, remote = normalise([
        {"name": "peft", "version": "0.8.0.dev0", "direct_url": {
            "url": "https://github.com/huggingface/peft", "vcs_info": {"vcs": "git", "commit_id": "0a1b2c3"}}},
        {"name": "tiny", "version": "1.0", "direct_url": {"url": "https://example.org/tiny-1.0.tar.gz",
                                                          "archive_info": {}}},
    ])
    assert vcs.requirement == "peft @ git+https://github.com/huggingface/peft@0a1b2c3"
    assert remote.requirement == "tiny @ https://example.org/tiny-1.0.tar.gz"


def test_platform_only_packages_get_a_marker_and_do_not_apply_on_linux():
    numpy, pywin = normalise([{"name": "pywin32", "version": "306", "direct_url": None},
                              {"name": "numpy", "version": "1.26.4", "direct_url": None}])
    assert pywin.requirement == 'pywin32==306 ; sys_platform == "win32"'
    assert not applies(pywin, LINUX) and applies(numpy, LINUX)


def test_installer_tooling_is_left_out():
    assert normalise([{"name": "pip", "version": "24.0", "direct_url": None},
                      {"name": "setuptools", "version": "69.0", "direct_url": None}]) == ()


@pytest.mark.parametrize(("label", "cuda"), [("cu113", "11.3"), ("cu121", "12.1"), ("cu128", "12.8"), ("cu92", None),
                                             ("cpu", None), ("rocm5.6", None), (None, None)])
def test_cuda_from_local_label(label, cuda):
    assert cuda_from_local_label(label) == cuda


@pytest.mark.parametrize(("cuda", "model", "architecture", "refused"), [
    ("11.3", "H100", "hopper", "H100 (hopper) needs CUDA 11.8 or later"),
    ("11.8", "H100", "hopper", None),
    ("11.0", "A10G", "ampere", "A10G (ampere) needs CUDA 11.1 or later"),
    ("11.0", "A100", "ampere", None),
    ("12.4", "B200", "blackwell", "B200 (blackwell) needs CUDA 12.8 or later"),
    ("13.0", "V100", "volta", "V100 (volta) is not supported by CUDA 13, only up to 12.x"),
    ("10.2", "T4", "turing", None),
])
def test_cuda_against_the_gpu(cuda, model, architecture, refused):
    assert cuda_problem(cuda, model, architecture) == refused


def test_tensorflow_build_configurations():
    assert tensorflow_build("2.8.4") == ("11.2", "8.1")
    assert tensorflow_build("2.15.0") == ("12.2", "8.9")
    assert tensorflow_build("1.15.0") is None


@pytest.mark.parametrize(("output", "expected"), [
    ("a100-40gb", [("NVIDIA A100-SXM4-40GB", 40960, "A100", "ampere")]),
    ("t4", [("Tesla T4", 15360, "T4", "turing")]),
    ("rtx3090", [("NVIDIA GeForce RTX 3090", 24576, None, "ampere")]),
    ("a100-40gb-x2", [("NVIDIA A100-SXM4-40GB", 40960, "A100", "ampere")] * 2),
])
def test_nvidia_smi_names_become_catalog_models(output, expected):
    gpus = parse_gpu_csv(SMI_OUTPUTS[output], load_catalog())
    assert [(g.name, g.memory_mib, g.model, g.architecture) for g in gpus] == expected


def test_nvidia_smi_names_without_a_catalog_alias_go_by_family_and_memory():
    text = "name, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB\nNVIDIA A100 80GB PCIe, 81920 MiB\n"
    assert [g.model for g in parse_gpu_csv(text, load_catalog())] == ["H100", "A100-80GB"]
