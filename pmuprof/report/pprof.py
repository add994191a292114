"""Write a Profile as gzipped pprof profile.proto, encoded by hand (no protobuf dependency)."""

from __future__ import annotations

import gzip
from typing import Iterable, Mapping

from ..model.labels import is_kernel
from ..model.profile import Profile

# Field numbers from github.com/google/pprof proto/profile.proto.
_P_SAMPLE_TYPE, _P_SAMPLE, _P_LOCATION, _P_FUNCTION, _P_STRINGS = 1, 2, 4, 5, 6
_P_DURATION, _P_PERIOD_TYPE, _P_PERIOD, _P_COMMENT, _P_DEFAULT_TYPE = 10, 11, 12, 13, 14
_VT_TYPE, _VT_UNIT = 1, 2
_S_LOCATION, _S_VALUE, _S_LABEL = 1, 2, 3
_L_KEY, _L_STR = 1, 2
_LOC_ID, _LOC_LINE = 1, 4
_LINE_FUNCTION = 1
_F_ID, _F_NAME, _F_SYSTEM_NAME, _F_FILENAME = 1, 2, 3, 4


def varint(value: int) -> bytes:
    """Base-128 varint; negative int64 values take ten bytes (two's complement), as protobuf does."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint((number << 3) | 2) + varint(len(payload)) + payload


def packed(number: int, values: Iterable[int]) -> bytes:
    return field_bytes(number, b"".join(varint(v) for v in values))


class _Strings:
    """The string table: index 0 is the empty string, each string stored once."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.items: list[str] = [""]

    def __call__(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.items)
            self.items.append(text)
        return self.index[text]


def _value_type(strings: _Strings, kind: str, unit: str) -> bytes:
    return field_varint(_VT_TYPE, strings(kind)) + field_varint(_VT_UNIT, strings(unit))


def encode_profile(profile: Profile, comments: Mapping[str, object] | None = None) -> bytes:
    """profile.proto bytes (not compressed): one location and function per frame name.

    Frames keep their folded names (the process root included, so per-process subtrees
    stay visible); each sample also carries a ``process`` label. Kernel frames
    (``_[k]``) get ``[kernel.kallsyms]`` as their file name.
    """
    strings = _Strings()
    func_ids: dict[str, int] = {}
    functions: list[bytes] = []
    samples: list[bytes] = []
    sample_type = _value_type(strings, "samples", "count")
    period_type = _value_type(strings, "samples", "count")
    comment_ids = [strings(f"{k}: {v}") for k, v in sorted((comments or {}).items())]
    process_key = strings("process")
    for stack, count in sorted(profile.stacks.items()):
        if not stack or count <= 0:
            continue
        ids = []
        for frame in reversed(stack):  # pprof wants the leaf first
            fid = func_ids.get(frame)
            if fid is None:
                fid = func_ids[frame] = len(func_ids) + 1
                name = strings(frame)
                filename = strings("[kernel.kallsyms]") if is_kernel(frame) else 0
                functions.append(field_varint(_F_ID, fid) + field_varint(_F_NAME, name)
                                 + field_varint(_F_SYSTEM_NAME, name) + field_varint(_F_FILENAME, filename))
            ids.append(fid)
        label = field_varint(_L_KEY, process_key) + field_varint(_L_STR, strings(stack[0]))
        samples.append(packed(_S_LOCATION, ids) + packed(_S_VALUE, [count]) + field_bytes(_S_LABEL, label))
    # Location ids equal function ids: one location per function, with one line.
    locations = [field_varint(_LOC_ID, fid) + field_bytes(_LOC_LINE, field_varint(_LINE_FUNCTION, fid))
                 for fid in range(1, len(func_ids) + 1)]
    out = [field_bytes(_P_SAMPLE_TYPE, sample_type)]
    out += [field_bytes(_P_SAMPLE, s) for s in samples]
    out += [field_bytes(_P_LOCATION, loc) for loc in locations]
    out += [field_bytes(_P_FUNCTION, f) for f in functions]
    out += [field_bytes(_P_STRINGS, s.encode("utf-8", "backslashreplace")) for s in strings.items]
    duration = profile.run.duration_s
    if isinstance(duration, (int, float)) and duration > 0:
        out.append(field_varint(_P_DURATION, int(duration * 1e9)))
    out.append(field_bytes(_P_PERIOD_TYPE, period_type))
    out.append(field_varint(_P_PERIOD, 1))
    out += [field_varint(_P_COMMENT, c) for c in comment_ids]
    out.append(field_varint(_P_DEFAULT_TYPE, strings.index["samples"]))
    return b"".join(out)


def pprof_bytes(profile: Profile, comments: Mapping[str, object] | None = None) -> bytes:
    """Gzipped profile.proto with a zero mtime, so the same profile gives the same bytes."""
    return gzip.compress(encode_profile(profile, comments), compresslevel=6, mtime=0)
