//! The bounded safety profile for configuration schemas.
