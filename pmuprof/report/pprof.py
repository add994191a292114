"""Write a Profile as gzipped pprof profile.proto, encoded by hand (no protobuf dependency)."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from datetime import datetime
from collections.abc import Iterable, Mapping

from ..model.labels import dso_base, is_kernel, is_kernel_dso, parse_function
from ..model.profile import Profile
from ..model.run import FileMap

# Field numbers from github.com/google/pprof proto/profile.proto.
_P_SAMPLE_TYPE, _P_SAMPLE, _P_MAPPING, _P_LOCATION, _P_FUNCTION, _P_STRINGS = 1, 2, 3, 4, 5, 6
_P_TIME, _P_DURATION, _P_PERIOD_TYPE, _P_PERIOD, _P_COMMENT, _P_DEFAULT_TYPE = 9, 10, 11, 12, 13, 14
_VT_TYPE, _VT_UNIT = 1, 2
_S_LOCATION, _S_VALUE, _S_LABEL = 1, 2, 3
_L_KEY, _L_STR = 1, 2
_M_ID, _M_START, _M_LIMIT, _M_OFFSET, _M_FILENAME, _M_BUILD_ID, _M_HAS_FUNCTIONS = 1, 2, 3, 4, 5, 6, 7
_LOC_ID, _LOC_MAPPING, _LOC_ADDRESS, _LOC_LINE = 1, 2, 3, 4
KERNEL = "[kernel.kallsyms]"
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


def _sample_types(profile: Profile, strings: _Strings) -> tuple[list[bytes], int]:
    """samples/count always; cpu/nanoseconds too when the sampling frequency is known (period 1e9/F ns)."""
    frequency = profile.run.record.frequency
    types = [_value_type(strings, "samples", "count")]
    if isinstance(frequency, (int, float)) and frequency > 0:
        types.append(_value_type(strings, "cpu", "nanoseconds"))
        return types, int(round(1e9 / frequency))
    return types, 0


@dataclass(frozen=True)
class _Mapping:
    id: int
    start: int
    limit: int
    offset: int
    filename: str
    build_id: str


def _mappings(profile: Profile) -> dict[str, _Mapping]:
    """One mapping per binary the analysis found (by file name), with its executable segment's
    address range from the target's /proc maps and its build-id; the kernel last."""
    maps: dict[str, FileMap] = {}
    for target in profile.run.targets:
        for fm in target.maps:
            if fm.path not in maps or fm.start < maps[fm.path].start:
                maps[fm.path] = fm
    paths = [b.path for b in profile.analysis.binaries] + [t.exe for t in profile.run.targets if t.exe] + sorted(maps)
    build_ids = {t.exe: t.build_id or "" for t in profile.run.targets if t.exe}
    build_ids.update({b.path: b.build_id or b.file_build_id or "" for b in profile.analysis.binaries})
    out: dict[str, _Mapping] = {}
    for path in dict.fromkeys(paths):
        base = dso_base(path)
        if base in out or is_kernel_dso(path):
            continue
        mapped = maps.get(path)
        out[base] = _Mapping(
            len(out) + 1,
            mapped.start if mapped else 0,
            mapped.end if mapped else 0,
            mapped.pgoff if mapped else 0,
            path,
            build_ids.get(path, ""),
        )
    out[KERNEL] = _Mapping(len(out) + 1, 0, 0, 0, KERNEL, "")
    return out


def _frame_dsos(profile: Profile) -> dict[str, str]:
    """Named frames whose binary the analysis knows: leaf symbols, skid-corrected and unnamed functions."""
    out = {leaf.symbol: dso_base(leaf.dso) for leaf in profile.leaves if leaf.symbol}
    out.update({f.symbol: dso_base(f.binary) for f in profile.analysis.skid_functions})
    out.update({u.label: dso_base(u.binary) for u in profile.analysis.unnamed})
    return out


def _location(
    frame: str, mappings: dict[str, _Mapping], dsos: dict[str, str], biases: Mapping[str, int]
) -> tuple[int, int]:
    """(mapping id, address) of a frame: unnamed functions get their runtime start address when the
    load bias of their binary is known; named frames keep address 0 (the input has names, not IPs)."""
    if is_kernel(frame):
        return mappings[KERNEL].id, 0
    parsed = parse_function(frame)
    base = (
        parsed[0]
        if parsed
        else dsos.get(frame) or (frame[1:-1] if frame.startswith("[") and frame.endswith("]") else "")
    )
    mapping = mappings.get(base)
    if mapping is None:
        return 0, 0
    address = 0
    if parsed and mapping.filename in biases:
        address = parsed[1] + biases[mapping.filename]
    return mapping.id, address


def _mapping_bytes(m: _Mapping, strings: _Strings) -> bytes:
    out = field_varint(_M_ID, m.id) + field_varint(_M_START, m.start) + field_varint(_M_LIMIT, m.limit)
    out += field_varint(_M_OFFSET, m.offset) + field_varint(_M_FILENAME, strings(m.filename))
    out += field_varint(_M_BUILD_ID, strings(m.build_id)) + field_varint(_M_HAS_FUNCTIONS, 1)
    return out


class _Frames:
    """One function and one location per frame name, numbered from 1 in order of first use."""

    def __init__(
        self, strings: _Strings, mappings: dict[str, _Mapping], dsos: dict[str, str], biases: Mapping[str, int]
    ) -> None:
        self.strings, self.mappings, self.dsos, self.biases = strings, mappings, dsos, biases
        self.ids: dict[str, int] = {}
        self.functions: list[bytes] = []
        self.locations: list[bytes] = []

    def id(self, frame: str) -> int:
        fid = self.ids.get(frame)
        if fid is not None:
            return fid
        fid = self.ids[frame] = len(self.ids) + 1
        name = self.strings(frame)
        filename = self.strings(KERNEL) if is_kernel(frame) else 0
        self.functions.append(
            field_varint(_F_ID, fid)
            + field_varint(_F_NAME, name)
            + field_varint(_F_SYSTEM_NAME, name)
            + field_varint(_F_FILENAME, filename)
        )
        mapping_id, address = _location(frame, self.mappings, self.dsos, self.biases)
        self.locations.append(
            field_varint(_LOC_ID, fid)
            + field_varint(_LOC_MAPPING, mapping_id)
            + field_varint(_LOC_ADDRESS, address)
            + field_bytes(_LOC_LINE, field_varint(_LINE_FUNCTION, fid))
        )
        return fid


def encode_profile(
    profile: Profile, comments: Mapping[str, object] | None = None, biases: Mapping[str, int] | None = None
) -> bytes:
    """profile.proto bytes (not compressed): one location and function per frame name.

    Frames keep their folded names (the process root included, so per-process subtrees stay
    visible); each sample also carries a ``process`` label. Values: samples, and CPU time
    (samples x 1e9/F ns) when the sampling frequency is known. ``biases`` (binary path → load
    bias) turn unnamed functions' ELF addresses into the addresses they ran at.
    """
    strings = _Strings()
    sample_types, period_ns = _sample_types(profile, strings)
    mappings = _mappings(profile)
    frames = _Frames(strings, mappings, _frame_dsos(profile), biases or {})
    samples: list[bytes] = []
    comment_ids = [strings(f"{k}: {v}") for k, v in sorted((comments or {}).items())]
    process_key = strings("process")
    for stack, count in sorted(profile.stacks.items()):
        if not stack or count <= 0:
            continue
        ids = [frames.id(frame) for frame in reversed(stack)]  # pprof wants the leaf first
        values = [count, count * period_ns] if period_ns else [count]
        label = field_varint(_L_KEY, process_key) + field_varint(_L_STR, strings(stack[0]))
        samples.append(packed(_S_LOCATION, ids) + packed(_S_VALUE, values) + field_bytes(_S_LABEL, label))
    out = [field_bytes(_P_SAMPLE_TYPE, t) for t in sample_types]
    out += [field_bytes(_P_SAMPLE, s) for s in samples]
    out += [field_bytes(_P_MAPPING, _mapping_bytes(m, strings)) for m in sorted(mappings.values(), key=lambda m: m.id)]
    out += [field_bytes(_P_LOCATION, loc) for loc in frames.locations]
    out += [field_bytes(_P_FUNCTION, f) for f in frames.functions]
    out += [field_bytes(_P_STRINGS, s.encode("utf-8", "backslashreplace")) for s in strings.items]
    started = _epoch_ns(profile.run.started)
    if started:
        out.append(field_varint(_P_TIME, started))
    duration = profile.run.duration_s
    if isinstance(duration, (int, float)) and duration > 0:
        out.append(field_varint(_P_DURATION, int(duration * 1e9)))
    out.append(field_bytes(_P_PERIOD_TYPE, sample_types[-1]))
    out.append(field_varint(_P_PERIOD, period_ns or 1))
    out += [field_varint(_P_COMMENT, c) for c in comment_ids]
    out.append(field_varint(_P_DEFAULT_TYPE, strings.index["cpu" if period_ns else "samples"]))
    return b"".join(out)


def _epoch_ns(started: str) -> int:
    try:
        return int(datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() * 1e9) if started else 0
    except ValueError:
        return 0


def pprof_bytes(
    profile: Profile, comments: Mapping[str, object] | None = None, biases: Mapping[str, int] | None = None
) -> bytes:
    """Gzipped profile.proto with a zero mtime, so the same profile gives the same bytes."""
    return gzip.compress(encode_profile(profile, comments, biases), compresslevel=6, mtime=0)
