"""pytest plugin: one named, labeled trace document per test."""
