//! Python bindings (in progress).
