"""Backends that run a Plan (numpy, triton), behind one protocol: see registry.py."""
