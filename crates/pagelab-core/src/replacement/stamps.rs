//! Per-way stamps from a counter shared by the array: the state of policies that
//! evict the way stamped longest ago (LRU stamps on every touch, FIFO on fills only).

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamps {
    ways: usize,
    /// When each way was last stamped (0: never, or invalidated since).
    stamps: Vec<u64>,
    clock: u64,
}

impl Stamps {
    pub fn new(sets: usize, ways: usize) -> Stamps {
        Stamps {
            ways,
            stamps: vec![0; sets * ways],
            clock: 0,
        }
    }

    /// Make `way` of `set` the newest of its set.
    #[inline(always)]
    pub fn stamp(&mut self, set: usize, way: usize) {
        self.clock += 1;
        self.stamps[set * self.ways + way] = self.clock;
    }

    /// The way of `set` stamped longest ago (the first of equals). Selected with
    /// conditional moves: which way is oldest is data, not control.
    #[inline(always)]
    pub fn oldest(&self, set: usize) -> usize {
        // The usual associativities get a loop of known length, unrolled.
        match self.ways {
            4 => Self::oldest_of(self.set::<4>(set)),
            8 => Self::oldest_of(self.set::<8>(set)),
            12 => Self::oldest_of(self.set::<12>(set)),
            ways => Self::oldest_of(&self.stamps[set * ways..(set + 1) * ways]),
        }
    }

    #[inline(always)]
    fn set<const W: usize>(&self, set: usize) -> &[u64; W] {
        self.stamps[set * W..set * W + W]
            .try_into()
            .expect("W ways")
    }

    #[inline(always)]
    fn oldest_of(stamps: &[u64]) -> usize {
        let (mut best, mut oldest) = (0, stamps[0]);
        for (way, &s) in stamps.iter().enumerate().skip(1) {
            let older = s < oldest;
            best = if older { way } else { best };
            oldest = if older { s } else { oldest };
        }
        best
    }

    /// `way` of `set` holds nothing: it is the oldest of all.
    pub fn clear(&mut self, set: usize, way: usize) {
        self.stamps[set * self.ways + way] = 0;
    }
}
