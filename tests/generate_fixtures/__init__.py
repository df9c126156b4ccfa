"""Fixtures of the generation tests (issue 36): a published-style library and scripted teachers."""
