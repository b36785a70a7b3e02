//! Durations written the way Terraform users write them (`"500ms"`, `"30m"`,
//! `"1h30m"`): Go's duration syntax, which Terraform's own timeouts use.

use std::time::Duration;

/// The longest duration hct takes (a year): far beyond any wait, short
/// enough that a deadline `now + duration` never overflows.
pub const LONGEST: Duration = Duration::from_secs(365 * 24 * 3600);

/// Parses a Go-style duration: one or more `<number><unit>` parts, units
/// `ms`, `s`, `m`, `h`, at most [`LONGEST`]. Returns a message suitable for
/// a diagnostic on error.
pub fn parse(text: &str) -> Result<Duration, String> {
    let invalid = || {
        format!(
            "{text:?} is not a duration: write a number with a unit, e.g. \"500ms\", \"2s\", \"30m\" or \"1h30m\""
        )
    };
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        rest = &rest[unit_len..];
        total = Duration::try_from_secs_f64(number * seconds_per_unit)
            .ok()
            .and_then(|part| total.checked_add(part))
            .filter(|total| *total <= LONGEST)
            .ok_or_else(|| format!("{text:?} is too long: at most 8760h (a year)"))?;
    }
    Ok(total)
}

/// Formats a duration compactly for log lines ("12s", "1m5s", "250ms").
pub fn format(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let seconds = duration.as_secs();
    match (seconds / 3600, seconds % 3600 / 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_are_errors_not_panics() {
        for text in ["99999999999999999999999h", "8761h", "1e400h", "8760h1ms"] {
            assert!(parse(text).is_err(), "{text}");
        }
        assert_eq!(parse("8760h"), Ok(LONGEST));
    }

    #[test]
    fn parses_go_style_durations() {
        let cases = [
            ("500ms", 500),
            ("2s", 2000),
            ("1.5s", 1500),
            ("30m", 1_800_000),
            ("1h30m", 5_400_000),
        ];
        for (text, millis) in cases {
            assert_eq!(
                parse(text).unwrap(),
                Duration::from_millis(millis),
                "{text}"
            );
        }
        for bad in ["", "fast", "10", "5 parsecs", "ms", "1d"] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
    }

    #[test]
    fn formats_for_progress_logs() {
        assert_eq!(format(Duration::from_millis(250)), "250ms");
        assert_eq!(format(Duration::from_secs(12)), "12s");
        assert_eq!(format(Duration::from_secs(65)), "1m5s");
        assert_eq!(format(Duration::from_secs(3725)), "1h2m5s");
    }
}
