"""Reads a JUnit XML file with junitparser and prints what it found as one JSON object.

Usage: python3 read_junit.py REPORT.xml

Printed: {"suites": [{"name", "tests", "failures", "skipped", "properties": {name: value},
"cases": [{"name", "classname", "time", "result", "message", "type", "text"}]}]}, where
result is "passed", "failure", "error" or "skipped", as junitparser classifies each case.
"""

import json
import sys

from junitparser import Error, Failure, JUnitXml, Skipped


def result_of(case):
    for item in case.result:
        if isinstance(item, Failure):
            return "failure", item
        if isinstance(item, Error):
            return "error", item
        if isinstance(item, Skipped):
            return "skipped", item
    return "passed", None


def main(path):
    document = JUnitXml.fromfile(path)
    suites = []
    for suite in document:
        cases = []
        for case in suite:
            result, item = result_of(case)
            cases.append({
                "name": case.name,
                "classname": case.classname,
                "time": case.time,
                "result": result,
                "message": item.message if item is not None else None,
                "type": item.type if item is not None else None,
                "text": item.text if item is not None else None,
            })
        suites.append({
            "name": suite.name,
            "tests": suite.tests,
            "failures": suite.failures,
            "skipped": suite.skipped,
            "properties": {p.name: p.value for p in suite.properties()},
            "cases": cases,
        })
    json.dump({"suites": suites}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
