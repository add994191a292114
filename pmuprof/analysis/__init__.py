"""Analysis stage: load any input, resolve binaries, group unnamed code, correct skid, judge stack quality."""
