"""Turns check-jsonschema's example documents into JSON instances for tests/it/public_schemas.rs.

Usage: instances.py HOOKS_DIR SCHEMAS_DIR OUT_DIR

HOOKS_DIR/{positive,negative}/NAME/FILE holds documents that check-jsonschema's own tests
check against its vendored schema NAME. Only NAMEs with a schema in SCHEMAS_DIR are kept.
Whether a document is valid is not taken from its folder: the test asks the oracle, since
check-jsonschema also asserts formats, which the compiler reads as annotations.
"""

import json
import pathlib
import sys

import yaml


def load(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml", ".cff"):
        # YAML 1.1 timestamps would be dates, which JSON has no value for: read them as
        # the strings they are written as, as check-jsonschema's own loader does.
        class Loader(yaml.SafeLoader):
            pass

        Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
        return yaml.load(text, Loader=Loader)
    raise ValueError(f"not JSON or YAML: {path.suffix}")


def main(hooks, schemas, out):
    hooks, schemas, out = pathlib.Path(hooks), pathlib.Path(schemas), pathlib.Path(out)
    kept = skipped = 0
    for path in sorted(hooks.glob("*/*/*")):
        polarity, name = path.parent.parent.name, path.parent.name
        if not (schemas / f"{name}.json").is_file():
            continue
        try:
            document = load(path)
            text = json.dumps(document, ensure_ascii=False, allow_nan=False)
        except (ValueError, yaml.YAMLError, TypeError) as error:
            print(f"instances.py: left out {path.relative_to(hooks)}: {error}", file=sys.stderr)
            skipped += 1
            continue
        target = out / name / f"{polarity}-{path.stem}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n", encoding="utf-8")
        kept += 1
    print(f"instances.py: {kept} documents kept, {skipped} left out")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: instances.py HOOKS_DIR SCHEMAS_DIR OUT_DIR")
    main(*sys.argv[1:])
