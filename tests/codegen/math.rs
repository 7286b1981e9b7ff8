//! (filled in by the math work)
