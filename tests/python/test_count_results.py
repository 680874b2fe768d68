"""scripts/count_results.py: the totals of the CI's last line count each
doctest case and each pytest test, and a test that died before its summary
as one failure; a failed test's last lines are repeated above them."""
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
    assert [name for name, _ in failures] == ["python", "python-crash", "python-died"]
    assert failures[2][1] == ["...Segmentation fault"]


def test_given_a_failure_at_exit_then_its_last_lines_come_before_the_totals(
        source_root, tmp_path, capsys):
    counter = load_counter(source_root)
    output = [f"line {i}" for i in range(100)] + [
        "[doctest] test cases:   9 |   9 passed | 0 failed | 0 skipped",
        "==1==LeakSanitizer has encountered a fatal error."]
    log = tmp_path / "testlog.json"
    log.write_text(json.dumps({"name": "gpu / exits", "result": "FAIL",
                               "stdout": "\n".join(output)}) + "\n")
    assert counter.main([str(log)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "9 passed, 1 failed"
    assert "LeakSanitizer has encountered a fatal error" in lines[-3]
    shown = lines[lines.index(next(l for l in lines if l.startswith("== failed: gpu / exits"))) + 1:-2]
    assert shown == output[-counter.TAIL_LINES:]
