"""Write a kcore copy into a perf build-id cache (HOME/.debug/[kernel.kcore]/BUILDID/DIR) for the running
kernel: this kallsyms, no modules, and an ELF core whose PT_LOAD headers lay out the kernel like
/proc/kcore (text, vmalloc, modules, RAM). perf then reads kernel symbols the kcore way.
With SYMBOL, the text segment is cut 4 bytes into that function and resumes 16 bytes later, so kcore's
clipping of symbols and its per-segment offsets show in perf's output.
usage: fake_kcore.py HOME [SYMBOL]"""

import struct
import sys
from pathlib import Path

PAGE_OFFSET = 0xFFFF888000000000


def running_build_id() -> str:
    notes = Path("/sys/kernel/notes").read_bytes()
    at = 0
    while at + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, at)
        name = notes[at + 12 : at + 12 + namesz]
        desc_at = at + 12 + ((namesz + 3) & ~3)
        if kind == 3 and name == b"GNU\0":
            return notes[desc_at : desc_at + descsz].hex()
        at = desc_at + ((descsz + 3) & ~3)
    raise SystemExit("no build-id in /sys/kernel/notes")


def kcore(segments: list[tuple[int, int]]) -> bytes:
    phoff, phentsize = 64, 56
    head = struct.pack(
        "<4sBBBBB7xHHIQQQIHHHHHH",
        b"\x7fELF",
        2,
        1,
        1,
        0,
        0,
        4,
        62,
        1,
        0,
        phoff,
        0,
        0,
        64,
        phentsize,
        len(segments),
        0,
        0,
        0,
    )
    phdrs = b"".join(
        struct.pack("<IIQQQQQQ", 1, 7, (vaddr - PAGE_OFFSET + 0x1000) % (1 << 64), vaddr, 0, size, size, 4096)
        for vaddr, size in segments
    )
    return head + phdrs


def main() -> None:
    kallsyms = Path("/proc/kallsyms").read_bytes()

    def addr(name: bytes) -> int:
        return next(int(line.split()[0], 16) for line in kallsyms.splitlines() if line.split()[2:3] == [name])

    text = addr(b"_text")
    texts = [(text, 0x4000000)]
    if len(sys.argv) > 2:
        cut = addr(sys.argv[2].encode()) + 4
        texts = [(text, cut - text), (cut + 16, text + 0x4000000 - cut - 16)]
    out = Path(sys.argv[1]) / ".debug" / "[kernel.kcore]" / running_build_id() / "2025010100000000000"
    out.mkdir(parents=True, exist_ok=True)
    (out / "kallsyms").write_bytes(kallsyms)
    (out / "modules").write_bytes(b"")
    (out / "kcore").write_bytes(
        kcore(texts + [(0xFFFFC90000000000, 1 << 45), (0xFFFFFFFFC0000000, 0x3F000000), (PAGE_OFFSET, 1 << 34)])
    )
    print(out)


if __name__ == "__main__":
    main()
