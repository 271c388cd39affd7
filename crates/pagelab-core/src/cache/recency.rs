//! The recency order of a set of up to 16 ways in one word: four bits per position,
//! position 0 (the most recently used) in the low nibble, each holding the number of
//! the way at that position. Moving a way to the front or the back is a few shifts
//! and masks on the word, with no branch on which way it was.

/// The most ways one word orders.
pub const MAX_WAYS: usize = 16;

/// Every nibble 1.
const ONES: u64 = 0x1111_1111_1111_1111;

/// The order of a fresh set of `ways` ways: way `i` at position `i`; the nibbles
/// above the last position are 0.
pub fn initial(ways: usize) -> u64 {
    debug_assert!((1..=MAX_WAYS).contains(&ways));
    (0..ways as u64).fold(0, |order, w| order | w << (4 * w))
}

/// The nibbles of positions `0..k` (`k` from 0 to 15).
#[inline(always)]
fn below(k: usize) -> u64 {
    (1u64 << (4 * k)) - 1
}

/// The nibbles of positions `0..=k` (`k` from 0 to 15).
#[inline(always)]
fn up_to(k: usize) -> u64 {
    below(k) << 4 | 15
}

/// The position of `way` in `order` (which holds it once among its first positions;
/// the nibbles above them are 0, and a 0 there lies above the way's own). The lowest
/// nibble of `order ^ way…way` that is zero, found without a loop.
#[inline(always)]
pub fn position(order: u64, way: usize) -> usize {
    let x = order ^ (way as u64).wrapping_mul(ONES);
    let zero = x.wrapping_sub(ONES) & !x & (ONES << 3);
    zero.trailing_zeros() as usize / 4
}

/// The way at the last of `ways` positions: the least recently used.
#[inline(always)]
pub fn last(order: u64, ways: usize) -> usize {
    (order >> (4 * (ways - 1)) & 15) as usize
}

/// `order` with `way`, at position `at`, moved to the front: the ways before it
/// move back by one.
#[inline(always)]
pub fn to_front(order: u64, way: usize, at: usize) -> u64 {
    (order & !up_to(at)) | (order & below(at)) << 4 | way as u64
}

/// `order` of `ways` positions with its last way moved to the front.
#[inline(always)]
pub fn last_to_front(order: u64, ways: usize) -> u64 {
    (order << 4 & up_to(ways - 1)) | last(order, ways) as u64
}

/// `order` of `ways` positions with `way`, at position `at`, moved to the back: the
/// ways after it move forward by one.
#[inline(always)]
pub fn to_back(order: u64, way: usize, at: usize, ways: usize) -> u64 {
    (order & below(at)) | (order & !up_to(at)) >> 4 | (way as u64) << (4 * (ways - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order as a list of ways, front first.
    fn list(order: u64, ways: usize) -> Vec<usize> {
        (0..ways)
            .map(|p| (order >> (4 * p) & 15) as usize)
            .collect()
    }

    #[test]
    fn moves_agree_with_a_list() {
        for ways in 1..=MAX_WAYS {
            let mut order = initial(ways);
            let mut model: Vec<usize> = (0..ways).collect();
            let mut lasts = 0;
            // A fixed walk over every way, position and both moves.
            for step in 0..400usize {
                // Every third step the least recently used, as a miss takes it.
                let way = if step % 3 == 2 {
                    last(order, ways)
                } else {
                    (step * 7 + step / 3) % ways
                };
                let at = position(order, way);
                assert_eq!(model[at], way, "{ways} ways, step {step}");
                model.remove(at);
                if step % 5 == 4 {
                    order = to_back(order, way, at, ways);
                    model.push(way);
                } else {
                    let front = to_front(order, way, at);
                    if at == ways - 1 {
                        assert_eq!(last(order, ways), way);
                        assert_eq!(last_to_front(order, ways), front);
                        lasts += 1;
                    }
                    order = front;
                    model.insert(0, way);
                }
                assert_eq!(list(order, ways), model, "{ways} ways, step {step}");
                assert_eq!(
                    order & !up_to(ways - 1),
                    0,
                    "{ways} ways: nibbles above stay 0"
                );
                assert_eq!(last(order, ways), model[ways - 1]);
            }
            assert!(lasts > 0, "{ways} ways: the last way moved to the front");
        }
    }
}
