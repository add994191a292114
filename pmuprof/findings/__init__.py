"""Rules engine: load rule files, match them against a Profile and facts, return Findings."""
