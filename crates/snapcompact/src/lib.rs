//! Snapcompact: compaction without a model.
//!
//! This crate will own the deterministic archive that replaces old history
//! (SPEC §14, §15): the archive serialization with its budgets, text frames
//! for every model, PNG frames printed with bitmap fonts for vision models,
//! model-aware shapes and image pricing, and the persisted archive that the
//! next compaction re-renders.
