"""What `import jitwarm` hands to the core: the running Python's nvidia
packages' library directories, appended to JITWARM_VENDOR_LIBRARY_PATH, the
last place the CUDA plugin looks for NVRTC and nvJitLink (the search order
itself: tests/gpu/test_vendor_library.py)."""
import os

from jitwarm import _vendor_libraries


def make_site(root, *subdirectories):
    for sub in subdirectories:
        os.makedirs(os.path.join(root, sub))
    return str(root)


def test_given_nvidia_packages_in_site_directories_then_their_lib_directories_are_found_in_order(tmp_path):
    first = make_site(tmp_path / "a", "nvidia/nvjitlink/lib", "nvidia/cu13/lib")
    second = make_site(tmp_path / "b", "nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib")
    empty = make_site(tmp_path / "c")
    found = _vendor_libraries.nvidia_library_directories(
        [first, "", empty, second, first, str(tmp_path / "missing")])
    assert found == [os.path.join(first, "nvidia/cu13/lib"),
                     os.path.join(first, "nvidia/nvjitlink/lib"),
                     os.path.join(second, "nvidia/cu13/lib"),
                     os.path.join(second, "nvidia/cuda_nvrtc/lib")]


def test_given_a_variable_set_by_the_user_then_the_packages_come_after_its_entries(tmp_path, monkeypatch):
    site = make_site(tmp_path / "site", "nvidia/cu13/lib")
    monkeypatch.setenv("JITWARM_VENDOR_LIBRARY_PATH", "/opt/mine:" + os.path.join(site, "nvidia/cu13/lib"))
    entries = _vendor_libraries.hand_to_core([site])
    assert entries == ["/opt/mine", os.path.join(site, "nvidia/cu13/lib")]
    assert os.environ["JITWARM_VENDOR_LIBRARY_PATH"] == os.pathsep.join(entries)


def test_given_no_packages_and_no_variable_then_nothing_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv("JITWARM_VENDOR_LIBRARY_PATH", raising=False)
    assert _vendor_libraries.hand_to_core([str(tmp_path)]) == []
    assert "JITWARM_VENDOR_LIBRARY_PATH" not in os.environ


def test_given_the_package_imported_then_its_location_is_inside_it():
    import jitwarm
    location = jitwarm.install_location()
    assert set(location) == {"library", "found_beside_library", "plugin_directory",
                             "kernel_directory", "data_directory", "program"}
    assert location["library"].endswith("libjitwarm.so") or ".so." in location["library"]
    assert location["kernel_directory"] == os.path.join(location["data_directory"], "kernels")
