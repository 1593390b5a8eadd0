"""Backends that run a Plan: numpy (CPU)."""
