//! Integration, stress and loom tests for `recycler-core`; see `tests/`.
