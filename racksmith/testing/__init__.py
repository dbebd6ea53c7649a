"""Test doubles that are real servers (not mocks), shared by the unit lanes of every area."""
