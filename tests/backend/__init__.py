"""Tests of the bundled decision backend (real SmolLM2, loaded once per session)."""
