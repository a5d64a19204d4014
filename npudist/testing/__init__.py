"""Test helpers shipped with npudist (used by tests/ and coverage scripts)."""
