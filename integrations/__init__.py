"""Clients of external services, one module per service. Django-free; they import neither app."""
