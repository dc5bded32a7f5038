"""Reads a JUnit XML file with junitparser, as a CI's test reporter does, and prints what it
found as JSON: each suite (its name, counts, time, timestamp, properties) and each case (its
class name, name, result: pass, failure, skipped or error, the result's message and text, and
its system-out). Used by harness/tests/it/junit.rs; install.sh installs junitparser."""

import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped, TestSuite


def result_kind(results):
    """The case's result as one word: its first non-pass result, else pass."""
    for r in results:
        if isinstance(r, Failure):
            return "failure", r
        if isinstance(r, Error):
            return "error", r
        if isinstance(r, Skipped):
            return "skipped", r
    return "pass", None


def read_case(case):
    kind, r = result_kind(case.result)
    return {
        "classname": case.classname,
        "name": case.name,
        "result": kind,
        "message": r.message if r is not None else None,
        "text": r.text if r is not None else None,
        "system_out": case.system_out,
        "time": case.time,
    }


def read_suite(suite):
    return {
        "name": suite.name,
        "tests": suite.tests,
        "failures": suite.failures,
        "errors": suite.errors,
        "skipped": suite.skipped,
        "time": suite.time,
        "timestamp": suite.timestamp,
        "properties": {p.name: p.value for p in suite.properties()},
        "cases": [read_case(c) for c in suite],
    }


def main(path):
    xml = JUnitXml.fromfile(path)
    suites = [xml] if isinstance(xml, TestSuite) else list(xml)
    json.dump({"suites": [read_suite(s) for s in suites]}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
