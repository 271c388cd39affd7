//! The clock daemon: each inactive base page its hand finds is reclaimed at once,
//! second chance over the resident mappings in the order they were made (FreeBSD's
//! page daemon without its contiguity rule).

use super::VictimChoice;

pub struct Clock;

impl Clock {
    pub fn build(_buddy: bool) -> Result<Clock, String> {
        Ok(Clock)
    }
}

impl VictimChoice for Clock {}
