"""Writes corpus JARs with Python's zipfile, for the differential corpus test.

Usage: pyzip.py MODE OUT MANIFEST_FILE

MODE is one of:
  deflated-dirs  a deflated META-INF/ directory entry (compressed size 2),
                 the manifest, a deflated empty file, a class and a native
                 library name, all deflated.
  stored         the same entries stored.
  entries-65535  the manifest and 65,534 more entries: exactly 65,535, which
                 zipfile writes without ZIP64 records.
"""
import sys
import zipfile

CLASS = bytes([0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 55]) + b"streamfusion-core" * 16
NATIVE = b"\x7fELF" + b"streamfusion native stand-in" * 8


def main():
    mode, out, manifest_file = sys.argv[1:4]
    with open(manifest_file, "rb") as f:
        manifest = f.read()
    method = zipfile.ZIP_STORED if mode == "stored" else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(out, "w", compression=method) as z:
        if mode == "entries-65535":
            z.writestr("META-INF/MANIFEST.MF", manifest)
            z.writestr("tech/streamfusion/X.class", CLASS)
            for i in range(65535 - 2):
                z.writestr("tech/streamfusion/gen/E%05d.class" % i, b"")
            return
        # writestr of a ZipInfo named with a trailing slash and an explicit
        # compression type writes a deflated directory entry: uncompressed
        # size 0, compressed size 2 (an empty deflate stream).
        z.writestr(zipfile.ZipInfo("META-INF/"), b"", compress_type=method)
        z.writestr("META-INF/MANIFEST.MF", manifest)
        z.writestr("META-INF/streamfusion/empty.txt", b"", compress_type=method)
        z.writestr("tech/streamfusion/X.class", CLASS)
        z.writestr("META-INF/native/linux-x86_64/libstreamfusion_core.so", NATIVE)


if __name__ == "__main__":
    main()
