"""Entry point of the component package: `pulumi package add` runs this folder (see PulumiPlugin.yaml)."""

import sys

from gpufleet.provider import SCHEMA_FILE, main, schema_text

if __name__ == "__main__":
    if sys.argv[1:] == ["--write-schema"]:
        SCHEMA_FILE.write_text(schema_text())
    else:
        main()
