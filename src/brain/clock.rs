//! Row timestamps: RFC 3339 UTC with milliseconds (`2026-05-18T00:43:00.123Z`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as the contract's timestamp.
pub(crate) fn now_rfc3339() -> String {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    rfc3339_millis(ms)
}

/// Milliseconds since the epoch → `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn rfc3339_millis(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", sod / 3600, sod % 3600 / 60, sod % 60)
}

/// Howard Hinnant's days → (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_millis(1_779_065_780_123), "2026-05-18T00:56:20.123Z");
        assert_eq!(rfc3339_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_millis(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn now_has_the_shape() {
        let s = now_rfc3339();
        assert_eq!(s.len(), 24);
        assert!(s.ends_with('Z') && &s[10..11] == "T" && &s[19..20] == ".");
    }
}
