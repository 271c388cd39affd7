//! Bounds on what pagelab is given, where a larger value could only be a mistake and
//! would overflow a total (checked where a configuration is built).

/// The largest cycle count a configuration may give one event: 10^12 cycles is over
/// five minutes at 3 GHz. Bounded so that no total of a run (at most 2^64 events of
/// each kind) can overflow to infinity and make a percentage NaN.
pub const MAX_CYCLES: f64 = 1e12;

/// A configuration's cycle count `field` must be a number from 0 to [`MAX_CYCLES`].
pub fn check_cycles(field: &str, cycles: f64) -> Result<(), String> {
    if (0.0..=MAX_CYCLES).contains(&cycles) {
        Ok(())
    } else {
        Err(format!(
            "{field}: {cycles:?} must be a number of cycles from 0 to 1e12"
        ))
    }
}
