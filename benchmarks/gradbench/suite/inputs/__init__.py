"""Input generators, one module per eval: `generate(seed=..., **size)` and `SIZES`.

Each follows the eval's specification in GradBench (field names, shapes and
distributions), so the same dictionaries can be sent to any tool.
"""
