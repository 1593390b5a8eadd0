"""Bundled example programs (each with SHAPES and a numpy `truth`)."""
