//! Hardware tools for covo, generic over embedded-hal 1.0 traits.
//!
//! Placeholder: the hardware issue fills this crate in. Until then the gateway registers the
//! hardware tool specs with `available: false` and reason `not implemented`.
#![forbid(unsafe_code)]
