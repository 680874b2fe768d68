"""scripts/count_results.py: the totals of the CI's last line count each
doctest case and each pytest test, and a test that died before its summary
as one failure."""
import importlib.util
import json
import os


def load_counter(source_root):
    path = os.path.join(source_root, "scripts", "count_results.py")
    spec = importlib.util.spec_from_file_location("count_results", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_given_doctest_pytest_and_plain_tests_then_each_case_counts(source_root, tmp_path):
    counter = load_counter(source_root)
    entries = [
        {"name": "unit", "result": "OK",
         "stdout": "[doctest] test cases: 12 | 12 passed | 0 failed | 0 skipped"},
        {"name": "python", "result": "FAIL",
         "stdout": "....F\n=== 1 failed, 85 passed, 2 skipped in 3.21s ==="},
        {"name": "python-crash", "result": "FAIL", "stdout": "....\n12 passed in 0.5s\n"},
        {"name": "python-died", "result": "FAIL", "stdout": "...Segmentation fault"},
        {"name": "cli", "result": "OK", "stdout": "ok   everything"},
        {"name": "skipped", "result": "SKIP", "stdout": ""},
    ]
    log = tmp_path / "testlog.json"
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    passed, failed, failures = counter.count(str(log))
    assert passed == 12 + 85 + 12 + 1 + 1
    assert failed == 1 + 1 + 1
    assert failures == ["python", "python-crash", "python-died"]
