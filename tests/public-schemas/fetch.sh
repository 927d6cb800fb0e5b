#!/usr/bin/env bash
# Fetches public JSON Schemas that nobody here wrote, pinned and checked by sha256, into DIR
# (never into the repository), for tests/it/public_schemas.rs. Usage: fetch.sh DIR [--large]
#
# Afterwards:
#   DIR/schemas/NAME.json          each schema, byte for byte as its package ships it
#   DIR/instances/NAME/FILE.json   real documents that package's own tests check against
#                                  NAME (YAML turned into JSON; a file that is not plain
#                                  JSON or YAML, or holds what JSON cannot, is left out)
#
# Sources (SOURCES.sha256 beside this script holds each archive's digest):
#   - PyPI check-jsonschema 0.39.0 (sdist, Apache-2.0): the 26 SchemaStore schemas it vendors
#     under src/check_jsonschema/builtin_schemas/vendor/, and its example documents under
#     tests/example-files/hooks/{positive,negative}/NAME/;
#   - npm turbo 2.11.11 (MIT): schema.json; npm @tauri-apps/cli 2.12.6 (Apache-2.0 OR MIT):
#     config.schema.json;
#   - with --large only, npm @biomejs/biome 2.6.9 (MIT OR Apache-2.0): configuration_schema.json,
#     1 MB, whose generated module alone takes minutes and gigabytes to build.
# Needs python3 with pip (pyyaml is installed, pinned, when missing) and npm.
set -euo pipefail
if [ $# -lt 1 ] || [ -z "$1" ] || { [ $# -eq 2 ] && [ "$2" != "--large" ]; } || [ $# -gt 2 ]; then
  echo "usage: fetch.sh DIR [--large]" >&2
  exit 2
fi
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mkdir -p "$1" && cd "$1" && pwd)"
large="${2:-}"
downloads="$dir/downloads"
mkdir -p "$downloads"
rm -rf "$dir/schemas" "$dir/instances"
mkdir -p "$dir/schemas" "$dir/instances"

python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$downloads" check-jsonschema==0.39.0
(cd "$downloads" && npm pack --silent turbo@2.11.11 @tauri-apps/cli@2.12.6 >/dev/null)
if [ "$large" = "--large" ]; then
  (cd "$downloads" && npm pack --silent @biomejs/biome@2.6.9 >/dev/null)
fi
# Every archive present must be the pinned one.
(cd "$downloads" && for archive in *; do
  grep -F "  $archive" "$here/SOURCES.sha256" | sha256sum --check --quiet --strict - \
    || { echo "fetch.sh: $archive is not the pinned archive (SOURCES.sha256)" >&2; exit 1; }
done)

unpack="$dir/unpacked"
rm -rf "$unpack" && mkdir -p "$unpack"
tar -xzf "$downloads/check_jsonschema-0.39.0.tar.gz" -C "$unpack"
cj="$unpack/check_jsonschema-0.39.0"
cp "$cj"/src/check_jsonschema/builtin_schemas/vendor/*.json "$dir/schemas/"
for pkg in turbo-2.11.11 tauri-apps-cli-2.12.6; do
  mkdir -p "$unpack/$pkg" && tar -xzf "$downloads/$pkg.tgz" -C "$unpack/$pkg"
done
cp "$unpack/turbo-2.11.11/package/schema.json" "$dir/schemas/turbo.json"
cp "$unpack/tauri-apps-cli-2.12.6/package/config.schema.json" "$dir/schemas/tauri.json"
if [ "$large" = "--large" ]; then
  mkdir -p "$unpack/biome" && tar -xzf "$downloads/biomejs-biome-2.6.9.tgz" -C "$unpack/biome"
  cp "$unpack/biome/package/configuration_schema.json" "$dir/schemas/biome.json"
fi

python3 -c 'import yaml' 2>/dev/null || python3 -m pip install --quiet pyyaml==6.0.3
python3 "$here/instances.py" "$cj/tests/example-files/hooks" "$dir/schemas" "$dir/instances"
rm -rf "$unpack"
echo "fetch.sh: $(ls "$dir/schemas" | wc -l) schemas, $(find "$dir/instances" -type f | wc -l) documents in $dir"
