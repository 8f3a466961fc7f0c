//! How a recall message's cap is shared between its drawers: a short turn gets what it needs and
//! the room it leaves goes to the longer ones, so one long drawer can't push the others out.

/// Bytes for texts that need `needs` bytes, from `room` in all: each gets its need when that is at
/// most an equal share of what the shorter ones left, the rest split what is left equally
/// ("water-filling"). The shares never add up to more than `room`.
pub(crate) fn shares(needs: &[usize], room: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..needs.len()).collect();
    order.sort_by_key(|&i| needs[i]);
    let mut out = vec![0; needs.len()];
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let give = needs[i].min(left / (needs.len() - k));
        out[i] = give;
        left -= give;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_whole_and_the_rest_shared() {
        assert_eq!(shares(&[100, 50, 80], 1000), [100, 50, 80], "everything fits");
        assert_eq!(shares(&[900, 50, 900], 1000), [475, 50, 475]);
        assert_eq!(shares(&[300, 300, 300, 300], 1000), [250, 250, 250, 250]);
        assert_eq!(shares(&[], 1000), Vec::<usize>::new());
        assert_eq!(shares(&[10, 10], 0), [0, 0]);
    }

    #[test]
    fn never_more_than_the_room() {
        for room in [0, 1, 7, 99, 1000] {
            let needs = [13, 400, 1, 77, 5000, 250];
            let s = shares(&needs, room);
            assert!(s.iter().sum::<usize>() <= room);
            assert!(s.iter().zip(needs).all(|(s, n)| *s <= n));
        }
    }
}
