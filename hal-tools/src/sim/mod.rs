//! The simulated board (filled in by the sim work).
